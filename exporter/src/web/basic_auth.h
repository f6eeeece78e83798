// The web config file's basic_auth_users: checks a request's Authorization
// header against bcrypt hashes as exporter-toolkit does.
//
// Thread-safety: Check may be called from any number of threads.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "web/auth_limiter.h"

namespace profwatch::web {

// Checks `user`/`password` against bcrypt `users` as exporter-toolkit does
// (Go's bcrypt): every byte of the password counts up to bcrypt's 72 (a
// password with a NUL byte is refused: libcrypt would stop reading at it),
// compared in constant time. An unknown user is checked against a hash of
// the users' highest cost, so it takes as long as a wrong password for a
// user of that cost (users of lower costs answer faster: docs/security.md).
// Successful checks are cached per (user, password, hash) so a scrape
// every few seconds costs one bcrypt, not one each. With an AuthLimiter,
// a check that would run bcrypt first takes a token of the client
// address's bucket (web/auth_limiter.h).
enum class AuthVerdict {
  kOk,
  kNoCredentials,  // no or malformed Authorization header: no bcrypt ran
  kWrongPassword,  // bcrypt ran (wrong password, or a name not listed)
  kRateLimited,    // the address had no token left: refused before bcrypt
};

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users)
      : users_(std::move(users)), unknown_user_hash_(UnknownUserHash(users_)) {}
  bool enabled() const { return !users_.empty(); }
  // `authorization`: the request's Authorization header, or null.
  bool Check(const char* authorization) { return Authenticate(authorization) == AuthVerdict::kOk; }
  // The same, with `limiter` (null: none) bounding the bcrypt runs of
  // `client` (its address).
  AuthVerdict Authenticate(const char* authorization, AuthLimiter* limiter = nullptr,
                           std::string_view client = {});
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

}  // namespace profwatch::web
