#include "web/auth_limiter.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

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

// One host owns a whole IPv6 /64: its addresses share one bucket.
TEST(AuthLimiterTest, Ipv6AddressesOfOneSlash64ShareABucket) {
  EXPECT_EQ(AuthLimiter::Key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(AuthLimiter::Key("127.0.0.1"), "127.0.0.1");
  FakeClock clock;
  AuthLimiter limiter(&clock);
  for (int i = 0; i < kAuthBurst; ++i) {
    EXPECT_TRUE(limiter.TryTake("2001:db8:1:2::" + std::to_string(i + 1))) << i;
  }
  EXPECT_FALSE(limiter.TryTake("2001:db8:1:2:ffff::9"));
  EXPECT_TRUE(limiter.TryTake("2001:db8:1:3::1"));
}

// More addresses than kMaxAddresses: the spent ones keep their buckets and
// new ones share the overflow bucket, so memory stays bounded and cycling
// addresses gains a burst at most once.
TEST(AuthLimiterTest, AddressesBeyondTheTableShareOneBucket) {
  FakeClock clock;
  AuthLimiter limiter(&clock);
  for (size_t a = 0; a < AuthLimiter::kMaxAddresses; ++a) {
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
