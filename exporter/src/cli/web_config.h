// The front door's configuration: `serve --web.config.file FILE`, in the
// format of Prometheus' exporter-toolkit (the file node_exporter and other
// exporters take), for the part of it profwatch implements:
//
//   tls_server_config:       cert_file, key_file, client_ca_file,
//                            client_auth_type, min_version, max_version,
//                            cipher_suites, prefer_server_cipher_suites,
//                            curve_preferences
//   http_server_config:      headers (the five the toolkit allows), http2
//                            (false only: the server speaks HTTP/1.1)
//   basic_auth_users:        user -> bcrypt hash
//
// Every other key, and the toolkit's options this server cannot honour
// (inline cert/key/client_ca, client_allowed_sans, rate_limit, http2: true),
// is an error naming the file, the key and its line. docs/security.md.
//
// Thread-safety: LoadWebConfig is pure; a WebDoor is shared by the HTTP
// threads (its methods lock what they change).
#pragma once

#include <sys/stat.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/result.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace profwatch::cli {

// exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType).
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,
  kRequireAnyClientCert,
  kVerifyClientCertIfGiven,
  kRequireAndVerifyClientCert,
};

struct TlsServerConfig {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  int min_version = 0;      // OpenSSL's TLS1_x_VERSION; 0 = TLS 1.2
  int max_version = 0;      // 0 = the newest (TLS 1.3)
  std::string cipher_list;  // OpenSSL names, ':'-joined; "" = default
  bool prefer_server_cipher_suites = true;
  std::string groups;  // OpenSSL group names, ':'-joined
};

struct WebConfig {
  std::string path;
  std::optional<TlsServerConfig> tls;                        // nullopt: plain HTTP
  std::map<std::string, std::string> users;                  // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;  // added to every answer
};

// Reads and checks `path`: the YAML, every key, the certificate and key
// (loaded, and matching), the CA file, the bcrypt hashes' form. kConfig
// errors start "web config file PATH: " and name the key and line.
Result<WebConfig> LoadWebConfig(const std::string& path);

// The TLS context for `tls` (certificate, key, client CA, verification,
// versions, ciphers, groups). kConfig naming the file on failure.
struct SslCtxDeleter {
  void operator()(SSL_CTX* ctx) const;
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxDeleter>;
Result<SslCtxPtr> BuildServerContext(const TlsServerConfig& tls, const std::string& path);

// Checks `user`/`password` against bcrypt `users` as exporter-toolkit does
// (Go's bcrypt): every byte of the password counts up to bcrypt's 72 (a
// password with a NUL byte is refused: libcrypt would stop reading at it),
// compared in constant time. An unknown user is checked against a hash of
// the users' highest cost, so it takes as long as a wrong password for a
// user of that cost (users of lower costs answer faster: docs/security.md).
// Successful checks are cached per (user, password, hash) so a scrape
// every few seconds costs one bcrypt, not one each.
class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users)
      : users_(std::move(users)), unknown_user_hash_(UnknownUserHash(users_)) {}
  bool enabled() const { return !users_.empty(); }
  // `authorization`: the request's Authorization header, or null.
  bool Check(const char* authorization);
  // The hash unknown users are checked against: bcrypt at the highest cost
  // of `users` (checked bcrypt hashes), of a password nobody sends.
  static std::string UnknownUserHash(const std::map<std::string, std::string>& users);
  const std::string& unknown_user_hash() const { return unknown_user_hash_; }

 private:
  std::map<std::string, std::string> users_;
  std::string unknown_user_hash_;
  std::mutex mu_;
  std::unordered_set<std::string> good_;  // SHA-256 of user, password and hash
};

// What the door does now: one loaded file, its TLS context and basic auth.
struct DoorState {
  WebConfig config;
  SslCtxPtr ssl_ctx;  // null without TLS
  std::unique_ptr<BasicAuth> auth;
};

// The web config file as the HTTP threads see it: re-read when it (or a
// file it names) changes, checked at each new connection and request; a
// bad new version keeps the old one, is logged once and counted.
class WebDoor {
 public:
  struct Hooks {
    std::function<void()> reload_failed;      // once per bad version
    std::function<void(bool)> reload_result;  // after every re-read
  };
  // Loads `path` (kConfig on any error). An empty path: no door (plain
  // HTTP, no auth, no headers) and nothing re-read.
  static Result<std::unique_ptr<WebDoor>> Open(const std::string& path, Hooks hooks = {});

  bool tls() const { return tls_; }
  // The current state, after re-reading the files if they changed.
  std::shared_ptr<DoorState> Current();
  // Sets the connection's TLS context and policy from Current(); for the
  // server's ClientHello callback. False: no TLS context (refuse).
  bool ApplyTls(SSL* ssl);

 private:
  using Signature = std::vector<std::pair<std::string, std::string>>;
  static Signature Sign(const WebConfig* config, const std::string& path);
  std::string path_;
  bool tls_ = false;
  Hooks hooks_;
  std::mutex mu_;
  std::shared_ptr<DoorState> state_;
  Signature loaded_sig_;
  Signature failed_sig_;
};

}  // namespace profwatch::cli
