#include "web/door.h"

#include <sys/stat.h>

#include <map>

#include "core/log.h"

namespace profwatch::web {
namespace {

std::string FileIdentity(const std::string& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
         std::to_string(st.st_ctim.tv_nsec);
}

const Clock& SystemClockInstance() {
  static const SystemClock clock;
  return clock;
}

}  // namespace

Result<std::shared_ptr<DoorState>> LoadDoorState(const std::string& path) {
  auto config = LoadWebConfig(path);
  if (!config) return tl::unexpected(config.error());
  auto state = std::make_shared<DoorState>();
  if (config->tls) {
    auto ctx = BuildServerContext(*config->tls, path);
    if (!ctx) return tl::unexpected(ctx.error());
    state->ssl_ctx = std::move(*ctx);
  }
  state->auth = std::make_unique<BasicAuth>(config->users);
  state->config = std::move(*config);
  return state;
}

WebDoor::Files WebDoor::RealFiles() { return Files{&FileIdentity, &LoadDoorState}; }

WebDoor::Signature WebDoor::Sign(const WebConfig* config) const {
  std::vector<std::string> files{path_};
  if (config != nullptr && config->tls) {
    files.push_back(config->tls->cert_file);
    files.push_back(config->tls->key_file);
    if (!config->tls->client_ca_file.empty()) files.push_back(config->tls->client_ca_file);
  }
  Signature sig;
  for (const std::string& f : files) sig.emplace_back(f, files_.identity(f));
  return sig;
}

Result<std::unique_ptr<WebDoor>> WebDoor::Open(const std::string& path, Hooks hooks, Files files,
                                               const Clock* clock) {
  std::unique_ptr<WebDoor> door(new WebDoor());
  door->path_ = path;
  door->hooks_ = std::move(hooks);
  door->files_ = std::move(files);
  door->clock_ = clock != nullptr ? clock : &SystemClockInstance();
  door->limiter_ = std::make_unique<AuthLimiter>(door->clock_);
  if (path.empty()) {
    door->state_ = std::make_shared<DoorState>();
    door->state_->auth = std::make_unique<BasicAuth>(std::map<std::string, std::string>{});
    return door;
  }
  // The signature before the read: a change during the read is seen next time.
  Signature before = door->Sign(nullptr);
  auto state = door->files_.load(path);
  if (!state) return tl::unexpected(state.error());
  door->tls_ = (*state)->ssl_ctx != nullptr;
  door->loaded_sig_ = door->Sign(&(*state)->config);
  door->loaded_sig_.front() = before.front();
  door->state_ = std::move(*state);
  door->next_check_ = door->clock_->Now() + kCheckInterval;
  return door;
}

std::shared_ptr<DoorState> WebDoor::Current() {
  std::shared_ptr<DoorState> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (path_.empty() || checking_) return state_;
    const TimePoint now = clock_->Now();
    if (now < next_check_) return state_;
    next_check_ = now + kCheckInterval;
    checking_ = true;
    state = state_;
  }
  std::shared_ptr<DoorState> fresh = Reload(state->config);
  std::lock_guard<std::mutex> lock(mu_);
  checking_ = false;
  if (fresh) state_ = std::move(fresh);
  return state_;
}

std::shared_ptr<DoorState> WebDoor::Reload(const WebConfig& config) {
  Signature now = Sign(&config);
  if (now == loaded_sig_ || now == failed_sig_) return nullptr;
  Signature before = Sign(nullptr);
  auto state = files_.load(path_);
  std::string error;
  if (!state) {
    error = state.error().context;
  } else if (((*state)->ssl_ctx != nullptr) != tls_) {
    error = "web config file " + path_ + ": switching TLS " + (tls_ ? "off" : "on") +
            " needs a restart (the listening socket's scheme is fixed)";
  }
  if (!error.empty()) {
    failed_sig_ = now;
    LogWarn("web config reload failed, keeping the previous one", {{"error", error}});
    if (hooks_.reload_failed) hooks_.reload_failed();
    if (hooks_.reload_result) hooks_.reload_result(false);
    return nullptr;
  }
  loaded_sig_ = Sign(&(*state)->config);
  loaded_sig_.front() = before.front();
  failed_sig_.clear();
  LogInfo("web config reloaded",
          {{"path", path_}, {"tls", tls_}, {"users", (*state)->config.users.size()}});
  if (hooks_.reload_result) hooks_.reload_result(true);
  return std::move(*state);
}

bool WebDoor::ApplyTls(SSL* ssl) {
  std::shared_ptr<DoorState> state = Current();
  if (!state->ssl_ctx) return false;
  return web::ApplyTls(ssl, state->ssl_ctx.get(), *state->config.tls);
}

AuthVerdict WebDoor::Authorize(const DoorState& state, const char* authorization,
                               std::string_view client) {
  if (!state.auth->enabled()) return AuthVerdict::kOk;
  const AuthVerdict verdict = state.auth->Authenticate(authorization, limiter_.get(), client);
  if (verdict != AuthVerdict::kOk && hooks_.auth_failed) hooks_.auth_failed(verdict);
  return verdict;
}

}  // namespace profwatch::web
