#include "web/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include "web/base64.h"
#include "web/limits.h"

namespace profwatch::web {
namespace {

// The salt and hash of the hash unknown users are checked against (of a
// password nobody sends); its cost is the users' highest (UnknownUserHash).
constexpr const char* kUnknownUserSaltAndHash =
    "tSLvidHzd9JhI4VmfDtgau39W5EBNM.BHP7x7yvmJR.tciHZI1dby";

bool CryptMatches(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (out == nullptr || out[0] == '*') return false;
  const size_t n = std::strlen(out);
  return n == hash.size() && CRYPTO_memcmp(out, hash.data(), n) == 0;
}
std::string Sha256(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), len);
}

}  // namespace

std::string BasicAuth::UnknownUserHash(const std::map<std::string, std::string>& users) {
  int cost = 4;  // bcrypt's least; no users: no check at all
  for (const auto& [user, hash] : users) {
    // ParseUsers checked the form: $2x$NN$...
    cost = std::max(cost, std::stoi(hash.substr(4, 2)));
  }
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "$2b$%02d$", cost);
  return prefix + std::string(kUnknownUserSaltAndHash);
}

AuthVerdict BasicAuth::Authenticate(const char* authorization, AuthLimiter* limiter,
                                    std::string_view client) {
  std::string user, password;
  bool parsed = false;
  if (authorization != nullptr) {
    std::string_view h(authorization);
    if (h.size() > 6 && (h.substr(0, 6) == "Basic " || h.substr(0, 6) == "basic ")) {
      h.remove_prefix(6);
      while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
      if (auto decoded = DecodeBase64(h)) {
        const size_t colon = decoded->find(':');
        if (colon != std::string::npos) {
          user = decoded->substr(0, colon);
          password = decoded->substr(colon + 1);
          parsed = true;
        }
      }
    }
  }
  if (!parsed) return AuthVerdict::kNoCredentials;
  // libcrypt reads the password up to its first NUL; Go's bcrypt (exporter-
  // toolkit) reads every byte, so the right password followed by a NUL and
  // anything else is wrong there. It is refused here before any look-up.
  if (password.find('\0') != std::string::npos) return AuthVerdict::kWrongPassword;
  auto it = users_.find(user);
  const bool known = it != users_.end();
  const std::string& hash = known ? it->second : unknown_user_hash_;
  std::string key;
  key.reserve(user.size() + password.size() + hash.size() + 2);
  key.append(user).push_back('\0');
  key.append(password).push_back('\0');
  key.append(hash);
  const std::string digest = Sha256(key);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (known && good_.count(digest) > 0) return AuthVerdict::kOk;
  }
  // bcrypt is what costs: the address pays a token for it, back if right.
  if (limiter != nullptr && !limiter->TryTake(client)) return AuthVerdict::kRateLimited;
  const bool match = CryptMatches(password, hash);
  if (!known || !match) return AuthVerdict::kWrongPassword;
  if (limiter != nullptr) limiter->Refund(client);
  std::lock_guard<std::mutex> lock(mu_);
  if (good_.size() >= kMaxCachedChecks) good_.clear();
  good_.insert(digest);
  return AuthVerdict::kOk;
}

}  // namespace profwatch::web
