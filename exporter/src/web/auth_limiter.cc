#include "web/auth_limiter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace profwatch::web {
namespace {

// `address` as IPv6 bytes; false for IPv4 text and for what is no address.
bool ParseV6(std::string_view address, in6_addr& v6) {
  const std::string text(address);
  return text.find(':') != std::string::npos && inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}

// An IPv4 client on a [::] listener: ::ffff:a.b.c.d (RFC 4291 2.5.5.2).
bool IsV4Mapped(const in6_addr& v6) {
  static constexpr unsigned char kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(v6.s6_addr, kPrefix, sizeof kPrefix) == 0;
}

std::string V6Text(const in6_addr& v6) {
  char buf[INET6_ADDRSTRLEN];
  return inet_ntop(AF_INET6, &v6, buf, sizeof buf) != nullptr ? std::string(buf) : std::string();
}

}  // namespace

AuthLimiter::AuthLimiter(const Clock* clock) : clock_(clock ? clock : &system_clock_) {
  groups_.burst = kAuthBurst * (kAuthGroupShare + 1);
  groups_.per_refill = kAuthGroupShare + 1;
}

std::string AuthLimiter::AddressKey(std::string_view address) {
  in6_addr v6{};
  if (!ParseV6(address, v6)) return std::string(address);
  if (IsV4Mapped(v6)) {
    char buf[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, v6.s6_addr + 12, buf, sizeof buf) != nullptr) return buf;
  }
  const std::string text = V6Text(v6);
  return text.empty() ? std::string(address) : text;
}

std::string AuthLimiter::GroupKey(std::string_view address) {
  in6_addr v6{};
  if (!ParseV6(address, v6) || IsV4Mapped(v6)) return {};
  std::fill(v6.s6_addr + 8, v6.s6_addr + 16, 0);
  const std::string text = V6Text(v6);
  return text.empty() ? text : text + "/64";
}

double AuthLimiter::TokensAt(const Table& t, const Bucket& b, TimePoint now) {
  if (b.tokens < 0) return t.burst;
  if (now <= b.updated) return b.tokens;
  const double gained = t.per_refill * std::chrono::duration<double>(now - b.updated) /
                        std::chrono::duration<double>(kAuthRefill);
  return std::min(t.burst, b.tokens + gained);
}

void AuthLimiter::Refill(const Table& t, Bucket& b, TimePoint now) {
  b.tokens = TokensAt(t, b, now);
  b.updated = std::max(b.updated, now);
}

AuthLimiter::Bucket* AuthLimiter::Find(Table& t, const std::string& key) {
  auto it = t.buckets.find(key);
  return it != t.buckets.end() ? &it->second : nullptr;
}

AuthLimiter::Bucket& AuthLimiter::BucketOf(Table& t, const std::string& key, TimePoint now) {
  if (Bucket* b = Find(t, key)) return *b;
  if (t.buckets.size() >= kMaxAddresses) {
    // Buckets that have refilled say nothing: drop them.
    std::erase_if(t.buckets,
                  [&](const auto& entry) { return TokensAt(t, entry.second, now) >= t.burst; });
    if (t.buckets.size() >= kMaxAddresses) return t.overflow;
  }
  return t.buckets.emplace(key, Bucket{}).first->second;
}

bool AuthLimiter::TryTake(std::string_view address) {
  const TimePoint now = clock_->Now();
  const std::string key = AddressKey(address);
  const std::string group = GroupKey(address);
  std::lock_guard<std::mutex> lock(mu_);
  Bucket& a = BucketOf(addresses_, key, now);
  Refill(addresses_, a, now);
  if (a.tokens < 1) return false;
  Bucket* g = nullptr;
  if (!group.empty()) {
    g = &BucketOf(groups_, group, now);
    Refill(groups_, *g, now);
    if (g->tokens < 1) return false;
    g->tokens -= 1;
  }
  a.tokens -= 1;
  return true;
}

void AuthLimiter::Refund(std::string_view address) {
  const TimePoint now = clock_->Now();
  const std::string key = AddressKey(address);
  const std::string group = GroupKey(address);
  std::lock_guard<std::mutex> lock(mu_);
  const auto give_back = [&](Table& t, const std::string& k) {
    Bucket* b = Find(t, k);
    if (b == nullptr) b = &t.overflow;
    Refill(t, *b, now);
    b->tokens = std::min(t.burst, b->tokens + 1);
  };
  give_back(addresses_, key);
  if (!group.empty()) give_back(groups_, group);
}

}  // namespace profwatch::web
