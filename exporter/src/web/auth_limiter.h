// AuthLimiter: a small token bucket per client address for basic-auth
// checks that run bcrypt (issue 47). bcrypt is slow on purpose (cost 10
// makes each check a costly share of a core), so without a bound 32 clients sending wrong passwords
// keep every core busy. A check takes a token from its address's bucket
// before bcrypt runs and gives it back when the password was right; an
// address without a token is refused without bcrypt (429). A remembered
// good check (BasicAuth's cache) needs no token, so a Prometheus already
// scraping with the right password is never refused, even from an address
// that also sends wrong ones.
//
// Addresses: IPv4 whole; IPv6 by its /64 (one host owns a whole /64).
// At most kMaxAddresses buckets: full ones are dropped to make room, and
// past that every new address shares one overflow bucket.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/clock.h"

namespace profwatch::web {

// Checks an address may have at once, and how often it gets one more:
// 5 tries to type a password, then one every 2 s (a scrape every 15 s with
// a wrong password is never limited).
inline constexpr int kAuthBurst = 5;
inline constexpr std::chrono::milliseconds kAuthRefill{2000};

class AuthLimiter {
 public:
  static constexpr size_t kMaxAddresses = 4096;

  // `clock` must outlive the limiter; null: the system clock.
  explicit AuthLimiter(const Clock* clock = nullptr);

  // Takes a token of `address`'s bucket; false when it has none (do not
  // run bcrypt).
  bool TryTake(std::string_view address);
  // Gives the token back (the password was right).
  void Refund(std::string_view address);

  // The bucket key of an address: IPv4 as is, IPv6 cut to its /64.
  static std::string Key(std::string_view address);

 private:
  struct Bucket {
    double tokens = kAuthBurst;
    TimePoint updated{};
  };
  // The bucket's tokens at `now` (refilled since its last update).
  static double TokensAt(const Bucket& b, TimePoint now);
  // Tops the bucket up to now (mu_ held).
  static void Refill(Bucket& b, TimePoint now);
  Bucket& BucketOf(const std::string& key, TimePoint now);  // mu_ held

  SystemClock system_clock_;
  const Clock* clock_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
  Bucket overflow_;
};

}  // namespace profwatch::web
