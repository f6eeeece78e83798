// AuthLimiter: small token buckets for basic-auth checks that run bcrypt
// (issues 47, 60). bcrypt is slow on purpose (cost 10 makes each check a
// costly share of a core), so without a bound 32 clients sending wrong
// passwords keep every core busy. A check takes a token before bcrypt runs
// and gives it back when the password was right, so only failures spend
// tokens; a check without a token is refused without bcrypt (429). A
// remembered good check (BasicAuth's cache) needs no token at all.
//
// Two buckets, both charged by a check:
// - its client address's own (kAuthBurst at once, one more per
//   kAuthRefill): an address's failures limit that address;
// - for IPv6, its /64's (kAuthGroupShare + 1 times as large and as fast):
//   one host may own a whole /64, and without this bound it could take a
//   fresh bucket with every address.
// Each address takes at most kAuthBurst + t/kAuthRefill tokens in any t, so
// kAuthGroupShare addresses of one /64 failing as fast as they can leave
// their /64's bucket kAuthBurst tokens or more at all times. The bound: a
// right password from an address with a token of its own (none of its own
// failures spent them) is never refused nor made to wait for the failures
// of other clients, as long as at most kAuthGroupShare other addresses of
// its /64 fail at once (a Kubernetes pod has one address of its node's
// /64: that is kAuthGroupShare pods flooding). Past that (one host cycling
// through many addresses of a /64) the /64 is held to its bucket, and a
// first right login from it may get 429 until a token comes back.
//
// Addresses: IPv4 whole, and an IPv4 client seen as ::ffff:a.b.c.d on a
// [::] listener is that IPv4 address (its own bucket, no /64: the mapped
// range is every IPv4 client). IPv6 by its whole address and its /64.
// At most kMaxAddresses buckets of each kind: full ones are dropped to
// make room, and past that every new address (or /64) shares one overflow
// bucket.
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
#include "web/limits.h"

namespace profwatch::web {

// Checks an address may have at once, and how often it gets one more:
// 5 tries to type a password, then one every 2 s (a scrape every 15 s with
// a wrong password is never limited).
inline constexpr int kAuthBurst = 5;
inline constexpr std::chrono::milliseconds kAuthRefill{2000};
// How many addresses of one IPv6 /64 may fail as fast as they can without
// making a right password from another address of it wait: the /64's
// bucket holds and refills (kAuthGroupShare + 1) times an address's.
inline constexpr int kAuthGroupShare = 8;

class AuthLimiter {
 public:
  // `clock` must outlive the limiter; null: the system clock.
  explicit AuthLimiter(const Clock* clock = nullptr);

  // Takes a token of `address`'s bucket and of its /64's; false when
  // either has none (do not run bcrypt; nothing is taken).
  bool TryTake(std::string_view address);
  // Gives the tokens back (the password was right).
  void Refund(std::string_view address);

  // The bucket key of an address: IPv4 (also as ::ffff:a.b.c.d) as
  // a.b.c.d, IPv6 in its canonical text.
  static std::string AddressKey(std::string_view address);
  // The key of its /64 ("2001:db8:1:2::/64"); empty for IPv4 (no /64
  // bucket) and for text that is no address.
  static std::string GroupKey(std::string_view address);

 private:
  struct Bucket {
    double tokens = -1;  // < 0: full (set on first use)
    TimePoint updated{};
  };
  struct Table {
    double burst = kAuthBurst;
    double per_refill = 1;  // tokens per kAuthRefill
    std::unordered_map<std::string, Bucket> buckets;
    Bucket overflow;
  };
  // The bucket's tokens at `now` (refilled since its last update).
  static double TokensAt(const Table& t, const Bucket& b, TimePoint now);
  // Tops the bucket up to now (mu_ held).
  static void Refill(const Table& t, Bucket& b, TimePoint now);
  static Bucket& BucketOf(Table& t, const std::string& key, TimePoint now);  // mu_ held
  static Bucket* Find(Table& t, const std::string& key);                     // mu_ held

  SystemClock system_clock_;
  const Clock* clock_;
  std::mutex mu_;
  Table addresses_;
  Table groups_;
};

}  // namespace profwatch::web
