#include "web/auth_limiter.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "web/basic_auth.h"

namespace profwatch::web {
// Named for this file: the unity build compiles it with its neighbours.
namespace auth_limiter_test {

// "secret" at cost 4 (fast to check in a test).
constexpr const char* kSecretHash = "$2b$04$lXRYIwpwjzC7RiibA7VaguIx27a4iLMeWQGCW26yh9qzP54ahTiP6";
constexpr const char* kAliceSecret = "Basic YWxpY2U6c2VjcmV0";  // alice:secret
constexpr const char* kAliceWrong = "Basic YWxpY2U6d3Jvbmc=";   // alice:wrong

// kAuthBurst tries at once, then one per kAuthRefill; each address its own.
TEST(AuthLimiterTest, BurstThenOneTryPerRefill) {
  FakeClock clock;
  AuthLimiter limiter(&clock);
  for (int i = 0; i < kAuthBurst; ++i) EXPECT_TRUE(limiter.TryTake("10.0.0.1")) << i;
  EXPECT_FALSE(limiter.TryTake("10.0.0.1"));
  EXPECT_TRUE(limiter.TryTake("10.0.0.2"));  // another address is not limited
  clock.Advance(kAuthRefill / 2);
  EXPECT_FALSE(limiter.TryTake("10.0.0.1"));
  clock.Advance(kAuthRefill / 2);
  EXPECT_TRUE(limiter.TryTake("10.0.0.1"));
  EXPECT_FALSE(limiter.TryTake("10.0.0.1"));
  limiter.Refund("10.0.0.1");  // a right password gives its try back
  EXPECT_TRUE(limiter.TryTake("10.0.0.1"));
  clock.Advance(kAuthRefill * 100);  // refilled, never above the burst
  for (int i = 0; i < kAuthBurst; ++i) EXPECT_TRUE(limiter.TryTake("10.0.0.1")) << i;
  EXPECT_FALSE(limiter.TryTake("10.0.0.1"));
}

// Each IPv6 address has its own bucket, and its /64 one of (kAuthGroupShare
// + 1) times the size: one host owns a whole /64, so cycling through its
// addresses gains nothing past the /64's bucket.
TEST(AuthLimiterTest, Ipv6AddressesHaveTheirOwnBucketsAndTheirSlash64OneMore) {
  EXPECT_EQ(AuthLimiter::AddressKey("2001:db8:1:2:aaaa:0::1"), "2001:db8:1:2:aaaa::1");
  EXPECT_EQ(AuthLimiter::GroupKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(AuthLimiter::AddressKey("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(AuthLimiter::GroupKey("127.0.0.1"), "");
  EXPECT_EQ(AuthLimiter::GroupKey("not an address"), "");
  FakeClock clock;
  AuthLimiter limiter(&clock);
  for (int i = 0; i < kAuthBurst; ++i) EXPECT_TRUE(limiter.TryTake("2001:db8:1:2::1")) << i;
  EXPECT_FALSE(limiter.TryTake("2001:db8:1:2::1"));
  EXPECT_TRUE(limiter.TryTake("2001:db8:1:2::2"));  // its own bucket
  // Cycling through addresses of the /64 spends the /64's bucket.
  const int group = kAuthBurst * (kAuthGroupShare + 1);
  int taken = kAuthBurst + 1;
  for (int a = 3; a < 1000; ++a) {
    if (limiter.TryTake("2001:db8:1:2::" + std::to_string(a))) ++taken;
  }
  EXPECT_EQ(taken, group);
  EXPECT_FALSE(limiter.TryTake("2001:db8:1:2:ffff::9"));
  EXPECT_TRUE(limiter.TryTake("2001:db8:1:3::1"));  // another /64
}

// On a [::] listener an IPv4 client is ::ffff:a.b.c.d: it is that IPv4
// address, not a member of ::ffff:0:0/64 (which holds every IPv4 client).
TEST(AuthLimiterTest, V4MappedAddressesAreTheirIpv4Address) {
  EXPECT_EQ(AuthLimiter::AddressKey("::ffff:10.0.0.9"), "10.0.0.9");
  EXPECT_EQ(AuthLimiter::AddressKey("::FFFF:0a00:0009"), "10.0.0.9");
  EXPECT_EQ(AuthLimiter::GroupKey("::ffff:10.0.0.9"), "");
  FakeClock clock;
  AuthLimiter limiter(&clock);
  for (int i = 0; i < kAuthBurst; ++i) EXPECT_TRUE(limiter.TryTake("::ffff:10.0.0.9")) << i;
  EXPECT_FALSE(limiter.TryTake("10.0.0.9"));  // the same client either way
  EXPECT_FALSE(limiter.TryTake("::ffff:10.0.0.9"));
  EXPECT_TRUE(limiter.TryTake("::ffff:10.0.0.1"));
  EXPECT_TRUE(limiter.TryTake("10.0.0.2"));
}

// The bound of the header (issue 60): kAuthGroupShare addresses of one /64
// sending wrong passwords as fast as they can never make a right password
// from another address of that /64 wait, for the same user too; and each
// flooding address still runs bcrypt at most kAuthBurst + t/kAuthRefill
// times in t.
TEST(AuthLimiterTest, AFloodFromOneSlash64NeverDelaysARightPasswordFromAnotherAddress) {
  FakeClock clock;
  AuthLimiter limiter(&clock);
  const std::string prometheus = "2001:db8:1:2::100";
  std::vector<std::string> flooders;
  for (int i = 0; i < kAuthGroupShare; ++i)
    flooders.push_back("2001:db8:1:2::f" + std::to_string(i));
  std::map<std::string, int> bcrypt_runs;
  const auto tick = std::chrono::milliseconds(50);
  const int ticks = 2400;  // two minutes
  for (int t = 0; t < ticks; ++t) {
    for (const std::string& f : flooders) {
      for (int burst = 0; burst < 3; ++burst) {
        if (limiter.TryTake(f)) ++bcrypt_runs[f];  // wrong: never refunded
      }
    }
    // The first right login of a Prometheus that just started (no cache):
    // it needs bcrypt, so a token, and gives it back.
    ASSERT_TRUE(limiter.TryTake(prometheus)) << "refused at tick " << t;
    limiter.Refund(prometheus);
    clock.Advance(tick);
  }
  const double seconds = std::chrono::duration<double>(tick * ticks).count();
  const double refill = std::chrono::duration<double>(kAuthRefill).count();
  for (const std::string& f : flooders) {
    EXPECT_LE(bcrypt_runs[f], kAuthBurst + static_cast<int>(seconds / refill) + 1) << f;
    EXPECT_GE(bcrypt_runs[f], static_cast<int>(seconds / refill)) << f;
  }
}

// The same through BasicAuth with real bcrypt (cost 4), for IPv6 flooders
// of one /64 and for IPv4 clients seen as ::ffff: addresses: the right
// password of alice, the very user the flood guesses, is answered kOk at
// once at every try, never kRateLimited.
TEST(AuthLimiterTest, BasicAuthRightPasswordIsNotLimitedByOthersWrongOnes) {
  FakeClock clock;
  AuthLimiter limiter(&clock);
  const std::map<std::string, std::string> users = {{"alice", kSecretHash}};
  BasicAuth flood(users);
  std::vector<std::string> flooders = {"::ffff:10.0.0.9", "::ffff:10.0.0.10"};
  for (int i = 0; i < kAuthGroupShare; ++i)
    flooders.push_back("2001:db8:1:2::f" + std::to_string(i));
  int limited = 0;
  for (int t = 0; t < 40; ++t) {
    for (const std::string& f : flooders) {
      for (int burst = 0; burst < 3; ++burst) {
        if (flood.Authenticate(kAliceWrong, &limiter, f) == AuthVerdict::kRateLimited) ++limited;
      }
    }
    for (const char* right : {"2001:db8:1:2::100", "::ffff:10.0.0.1"}) {
      BasicAuth fresh(users);  // no remembered check: bcrypt runs
      ASSERT_EQ(fresh.Authenticate(kAliceSecret, &limiter, right), AuthVerdict::kOk)
          << right << " at tick " << t;
    }
    clock.Advance(std::chrono::milliseconds(250));
  }
  EXPECT_GT(limited, 0);  // the flood was limited
}

// More addresses than kMaxAddresses: the spent ones keep their buckets and
// new ones share the overflow bucket, so memory stays bounded and cycling
// addresses gains a burst at most once.
TEST(AuthLimiterTest, AddressesBeyondTheTableShareOneBucket) {
  FakeClock clock;
  AuthLimiter limiter(&clock);
  for (size_t a = 0; a < kMaxAddresses; ++a) {
    const std::string address = "10.1." + std::to_string(a / 256) + "." + std::to_string(a % 256);
    for (int i = 0; i < kAuthBurst; ++i) ASSERT_TRUE(limiter.TryTake(address));
  }
  int overflow = 0;
  for (int a = 0; a < 100; ++a) {
    if (limiter.TryTake("10.9.0." + std::to_string(a))) ++overflow;
  }
  EXPECT_EQ(overflow, kAuthBurst);
}

// With a limiter, bcrypt runs only while the address has a try: after the
// burst, wrong passwords are refused unchecked (kRateLimited), and so is a
// first right one (it needs bcrypt too); a right password already checked
// needs no bcrypt and no try, so the scraper it belongs to goes on.
TEST(AuthLimiterTest, BasicAuthTakesATryOnlyForBcrypt) {
  FakeClock clock;
  AuthLimiter limiter(&clock);
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kSecretHash}});
  EXPECT_EQ(auth.Authenticate(kAliceSecret, &limiter, "10.0.0.1"), AuthVerdict::kOk);
  EXPECT_EQ(auth.Authenticate(nullptr, &limiter, "10.0.0.1"), AuthVerdict::kNoCredentials);
  for (int i = 0; i < kAuthBurst; ++i) {
    EXPECT_EQ(auth.Authenticate(kAliceWrong, &limiter, "10.0.0.1"), AuthVerdict::kWrongPassword);
  }
  EXPECT_EQ(auth.Authenticate(kAliceWrong, &limiter, "10.0.0.1"), AuthVerdict::kRateLimited);
  EXPECT_EQ(auth.Authenticate(kAliceSecret, &limiter, "10.0.0.1"), AuthVerdict::kOk);  // cached
  EXPECT_EQ(auth.Authenticate("Basic Ym9iOnNlY3JldA==", &limiter, "10.0.0.1"),  // bob: unknown
            AuthVerdict::kRateLimited);
  BasicAuth fresh(std::map<std::string, std::string>{{"alice", kSecretHash}});
  EXPECT_EQ(fresh.Authenticate(kAliceSecret, &limiter, "10.0.0.1"), AuthVerdict::kRateLimited);
  EXPECT_EQ(fresh.Authenticate(kAliceSecret, &limiter, "10.0.0.2"), AuthVerdict::kOk);
  clock.Advance(kAuthRefill);
  EXPECT_EQ(fresh.Authenticate(kAliceSecret, &limiter, "10.0.0.1"), AuthVerdict::kOk);
  // That right password gave its try back: one more wrong one is checked.
  EXPECT_EQ(auth.Authenticate(kAliceWrong, &limiter, "10.0.0.1"), AuthVerdict::kWrongPassword);
  EXPECT_EQ(auth.Authenticate(kAliceWrong, &limiter, "10.0.0.1"), AuthVerdict::kRateLimited);
}

}  // namespace auth_limiter_test
}  // namespace profwatch::web
