#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <string>

#include "parse/trace_parser.h"

namespace profwatch::parse {
namespace {

TEST(MicrosTextToPicosTest, ConvertsFloatNoiseExactly) {
  EXPECT_EQ(MicrosTextToPicos("22.140000000000001", 0), 22140000);
  EXPECT_EQ(MicrosTextToPicos("1e-06", 0), 1);
  EXPECT_EQ(MicrosTextToPicos("1E-6", 0), 1);
  EXPECT_EQ(MicrosTextToPicos("0", 0), 0);
  EXPECT_EQ(MicrosTextToPicos("-0", 0), 0);
  EXPECT_EQ(MicrosTextToPicos("-3", 0), -3000000);
  EXPECT_EQ(MicrosTextToPicos("1500250.0", 0), 1500250000000);
  EXPECT_EQ(MicrosTextToPicos("2.5e+3", 0), 2500000000);
  EXPECT_EQ(MicrosTextToPicos("0.000123456", 0), 123);  // 123.456 ps -> 123
}

TEST(MicrosTextToPicosTest, EpochMicrosecondsRelativeToBaseStayExact) {
  EXPECT_EQ(MicrosTextToPicos("1712195495505582.988", 1712195495505582), 988000);
  EXPECT_EQ(MicrosTextToPicos("1712195495505582.988", 1712195495505583), -12000);
  EXPECT_EQ(MicrosTextToPicos("1712195495505582", 0), std::nullopt);  // 1.7e21 ps > int64
  EXPECT_EQ(MicrosTextToPicos("1623142623460111", 1623142623460000), 111000000);
}

TEST(MicrosTextToPicosTest, RoundsHalfToEvenAtThePicosecond) {
  EXPECT_EQ(MicrosTextToPicos("0.0000005", 0), 0);
  EXPECT_EQ(MicrosTextToPicos("0.0000015", 0), 2);
  EXPECT_EQ(MicrosTextToPicos("0.0000025", 0), 2);
  EXPECT_EQ(MicrosTextToPicos("0.00000250001", 0), 3);
  EXPECT_EQ(MicrosTextToPicos("-0.0000015", 0), -2);
  EXPECT_EQ(MicrosTextToPicos("-0.0000025", 0), -2);
  EXPECT_EQ(MicrosTextToPicos("5e-7", 0), 0);
  // Digits beyond the 36 kept ones still break a tie upwards.
  EXPECT_EQ(MicrosTextToPicos("0.00000250000000000000000000000000000000000001", 0), 3);
  EXPECT_EQ(MicrosTextToPicos("1e-400", 0), 0);
}

TEST(MicrosTextToPicosTest, OverflowAndGarbageAreNullopt) {
  EXPECT_EQ(MicrosTextToPicos("1e+20", 0), std::nullopt);
  EXPECT_EQ(MicrosTextToPicos("-1e+20", 0), std::nullopt);
  EXPECT_EQ(MicrosTextToPicos("1e999999999999", 0), std::nullopt);
  EXPECT_EQ(MicrosTextToPicos("9223372036854.775807", 0), INT64_MAX);
  EXPECT_EQ(MicrosTextToPicos("9223372036854.775808", 0), std::nullopt);
  EXPECT_EQ(MicrosTextToPicos("-9223372036854.775808", 0), INT64_MIN);
  EXPECT_EQ(MicrosTextToPicos("1", INT64_MIN), std::nullopt);
  for (const char* bad : {"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1e5x", "NaN", "inf", " 1",
                          "1 ", "0x10", "--1", "1.2.3"}) {
    EXPECT_EQ(MicrosTextToPicos(bad, 0), std::nullopt) << bad;
  }
}

TEST(MicrosTextFloorTest, FloorsTowardsMinusInfinity) {
  EXPECT_EQ(MicrosTextFloor("1712195495505582.988"), 1712195495505582);
  EXPECT_EQ(MicrosTextFloor("22.140000000000001"), 22);
  EXPECT_EQ(MicrosTextFloor("-1.5"), -2);
  EXPECT_EQ(MicrosTextFloor("-2"), -2);
  EXPECT_EQ(MicrosTextFloor("-2.0"), -2);
  EXPECT_EQ(MicrosTextFloor("1e-06"), 0);
  EXPECT_EQ(MicrosTextFloor("-1e-06"), -1);
  EXPECT_EQ(MicrosTextFloor("1e2"), 100);
  EXPECT_EQ(MicrosTextFloor("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(MicrosTextFloor("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(MicrosTextFloor("9223372036854775808"), std::nullopt);
  EXPECT_EQ(MicrosTextFloor("1e+20"), std::nullopt);
  EXPECT_EQ(MicrosTextFloor("abc"), std::nullopt);
}

}  // namespace
}  // namespace profwatch::parse

namespace profwatch::parse {
namespace {

// The plain-decimal fast paths must give the general path's answer, digit for
// digit: random shapes around every rounding case, signs, lengths and bases.
TEST(MicrosTextToPicosTest, FastPathAgreesWithGeneralPath) {
  std::mt19937_64 rng(20261122);
  auto digits = [&](int n, bool lead_nonzero) {
    std::string out;
    for (int i = 0; i < n; ++i) {
      int d = static_cast<int>(rng() % 10);
      if (i == 0 && lead_nonzero && d == 0) d = 1 + static_cast<int>(rng() % 9);
      out += static_cast<char>('0' + d);
    }
    return out;
  };
  const int64_t bases[] = {0, 1, -7, 1712195495505582, -1712195495505582, INT64_MAX / 1000000};
  int checked = 0;
  for (int iter = 0; iter < 200000; ++iter) {
    std::string s;
    if (rng() % 4 == 0) s += '-';
    const int int_len = 1 + static_cast<int>(rng() % 20);
    s += int_len == 1 ? digits(1, false) : digits(int_len, true);
    const int shape = static_cast<int>(rng() % 6);
    if (shape > 0) {
      s += '.';
      const int frac_len = 1 + static_cast<int>(rng() % 24);
      std::string f = digits(frac_len, false);
      if (shape == 2 && frac_len > 6) {  // exact ties: ...5 then zeros
        f[6] = '5';
        for (size_t i = 7; i < f.size(); ++i) f[i] = '0';
      } else if (shape == 3 && frac_len > 6) {  // just above a tie
        f[6] = '5';
        for (size_t i = 7; i < f.size(); ++i) f[i] = '0';
        f.back() = '1';
      }
      s += f;
    }
    if (shape == 5) s += "e" + std::to_string(static_cast<int>(rng() % 7) - 3);
    const int64_t base = bases[rng() % std::size(bases)];
    const std::optional<int64_t> general = detail::MicrosTextToPicosGeneral(s, base);
    ASSERT_EQ(MicrosTextToPicos(s, base), general) << s << " base " << base;
    ++checked;
  }
  EXPECT_EQ(checked, 200000);
  // Shapes the fast path hands on, and malformed text, agree as well.
  for (const char* s :
       {"01", "-01", "00.5", "1.", ".5", "-", "", "1e", "1.5x", "--1", "1..2",
        "123456789012345678.9999995", "999999999999999999.9999995", "1234567890123456789",
        "0.0000005", "0.0000015", "-0.0000025",
        // 8-byte reads: a non-digit at each place of a word.
        "12345678a", "1234567a8", "1a2345678", "12345678.1234567x", "12345678.12345678901234x5",
        "0.12345650000000000", "0.123456500000000001", "00000000.5", "123456781234567812",
        "1234567812345678123", "12345678/12345678", "12345678:1"}) {
    EXPECT_EQ(MicrosTextToPicos(s, 0), detail::MicrosTextToPicosGeneral(s, 0)) << s;
  }
  // Long plain decimals, and long fractions around the rounding digit.
  for (const char* s :
       {"1234567890123456", "-1234567890123456", "1234567890123456.5", "9999999999999999.9999995",
        "1.0000000000000000000000000000005", "1.000000000000000000000000000005",
        "12345678901234567890123456789012", "0.5000000000000000000000000000001",
        "0.50000000000000000000000000000001", "12.34567850000000000000000000000"}) {
    EXPECT_EQ(MicrosTextToPicos(s, 0), detail::MicrosTextToPicosGeneral(s, 0)) << s;
    EXPECT_EQ(MicrosTextToPicos(s, 1712195495505582),
              detail::MicrosTextToPicosGeneral(s, 1712195495505582))
        << s;
  }
}

}  // namespace
}  // namespace profwatch::parse
