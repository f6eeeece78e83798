#include "web/auth_limiter.h"

#include <arpa/inet.h>

#include <algorithm>

namespace profwatch::web {

AuthLimiter::AuthLimiter(const Clock* clock) : clock_(clock ? clock : &system_clock_) {}

std::string AuthLimiter::Key(std::string_view address) {
  const std::string text(address);
  in6_addr v6{};
  if (text.find(':') == std::string::npos || inet_pton(AF_INET6, text.c_str(), &v6) != 1) {
    return text;
  }
  std::fill(v6.s6_addr + 8, v6.s6_addr + 16, 0);
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, &v6, buf, sizeof buf) == nullptr) return text;
  return std::string(buf) + "/64";
}

double AuthLimiter::TokensAt(const Bucket& b, TimePoint now) {
  if (now <= b.updated) return b.tokens;
  const double gained =
      std::chrono::duration<double>(now - b.updated) / std::chrono::duration<double>(kAuthRefill);
  return std::min<double>(kAuthBurst, b.tokens + gained);
}

void AuthLimiter::Refill(Bucket& b, TimePoint now) {
  b.tokens = TokensAt(b, now);
  b.updated = std::max(b.updated, now);
}

AuthLimiter::Bucket& AuthLimiter::BucketOf(const std::string& key, TimePoint now) {
  auto it = buckets_.find(key);
  if (it != buckets_.end()) return it->second;
  if (buckets_.size() >= kMaxAddresses) {
    // Buckets that have refilled say nothing: drop them.
    std::erase_if(buckets_,
                  [&](const auto& entry) { return TokensAt(entry.second, now) >= kAuthBurst; });
    if (buckets_.size() >= kMaxAddresses) return overflow_;
  }
  Bucket fresh;
  fresh.updated = now;
  return buckets_.emplace(key, fresh).first->second;
}

bool AuthLimiter::TryTake(std::string_view address) {
  const TimePoint now = clock_->Now();
  const std::string key = Key(address);
  std::lock_guard<std::mutex> lock(mu_);
  Bucket& b = BucketOf(key, now);
  Refill(b, now);
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void AuthLimiter::Refund(std::string_view address) {
  const TimePoint now = clock_->Now();
  const std::string key = Key(address);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(key);
  Bucket& b = it != buckets_.end() ? it->second : overflow_;
  Refill(b, now);
  b.tokens = std::min<double>(kAuthBurst, b.tokens + 1);
}

}  // namespace profwatch::web
