// The web config file as the HTTP threads see it (the front door): the
// loaded file, its TLS context (built once per version) and its basic auth,
// re-read when the file or a file it names changes; a bad new version keeps
// the old one, is logged once and counted.
//
// The files are checked at most once per kCheckInterval on the door's
// clock, by one thread at a time; that thread reads and builds a changed
// version outside the lock the request path takes, and the others meanwhile
// go on with the current version.
//
// Thread-safety: Current and ApplyTls may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "web/basic_auth.h"
#include "web/tls.h"
#include "web/web_config.h"

namespace profwatch::web {

// What the door does now: one loaded file, its TLS context and basic auth.
struct DoorState {
  WebConfig config;
  SslCtxPtr ssl_ctx;  // null without TLS
  std::unique_ptr<BasicAuth> auth;
};

// Reads `path` (LoadWebConfig) and builds its TLS context: kConfig on any
// error, naming the file.
Result<std::shared_ptr<DoorState>> LoadDoorState(const std::string& path);

class WebDoor {
 public:
  struct Hooks {
    std::function<void()> reload_failed;      // once per bad version
    std::function<void(bool)> reload_result;  // after every re-read
    // A request refused by basic auth, and why (never kOk).
    std::function<void(AuthVerdict)> auth_failed;
  };
  // How the door sees its files: a file's identity (device, inode, size,
  // modification and change times; "missing" when it cannot be stat'ed),
  // and the loading of a version. Tests inject both.
  struct Files {
    std::function<std::string(const std::string& file)> identity;
    std::function<Result<std::shared_ptr<DoorState>>(const std::string& path)> load;
  };
  static Files RealFiles();
  // A change to a file takes effect at the first request or handshake this
  // long after the previous check.
  static constexpr std::chrono::milliseconds kCheckInterval{1000};

  // Loads `path` (kConfig on any error). An empty path: no door (plain
  // HTTP, no auth, no headers) and nothing re-read. `clock` must outlive
  // the door; null: the system clock.
  static Result<std::unique_ptr<WebDoor>> Open(const std::string& path, Hooks hooks = {},
                                               Files files = RealFiles(),
                                               const Clock* clock = nullptr);

  bool tls() const { return tls_; }
  // The current state, after re-reading the files if they changed.
  std::shared_ptr<DoorState> Current();
  // Sets the connection's TLS context and policy from Current(); for the
  // server's ClientHello callback. False: no TLS context (refuse).
  bool ApplyTls(SSL* ssl);
  // `state`'s basic auth for a request from `client` (its address):
  // kOk when the door has no users. Checks that would run bcrypt are
  // limited per client address (web/auth_limiter.h; the buckets outlive
  // reloads); a refusal is reported to Hooks::auth_failed.
  AuthVerdict Authorize(const DoorState& state, const char* authorization, std::string_view client);

 private:
  using Signature = std::vector<std::pair<std::string, std::string>>;
  WebDoor() = default;
  Signature Sign(const WebConfig* config) const;
  // The check of one thread (checking_ held): a new state, or null.
  std::shared_ptr<DoorState> Reload(const WebConfig& config);

  std::string path_;
  bool tls_ = false;
  Hooks hooks_;
  Files files_;
  const Clock* clock_ = nullptr;
  std::unique_ptr<AuthLimiter> limiter_;
  std::mutex mu_;
  std::shared_ptr<DoorState> state_;  // guarded by mu_
  TimePoint next_check_{};            // guarded by mu_
  bool checking_ = false;             // guarded by mu_
  // Only the thread that set checking_ reads or writes these.
  Signature loaded_sig_;
  Signature failed_sig_;
};

}  // namespace profwatch::web
