// Exact decimal-text to integer time conversion. Trace times are written as
// JSON numbers in microseconds with float noise ("22.140000000000001") or in
// epoch microseconds with a fraction ("1712195495505582.988"); a double loses
// the low digits of the latter, so the decimal text is converted with 128-bit
// integer arithmetic instead.
#include <cstdint>
#include <optional>
#include <string_view>

#include "parse/limits.h"
#include "parse/trace_parser.h"

namespace profwatch::parse {
namespace {

using i128 = __int128;
using u128 = unsigned __int128;

// A JSON number as mantissa * 10^exp10, with `sticky` set when nonzero digits
// beyond the kept 36 were dropped (the true magnitude is slightly larger).
struct Decimal {
  bool negative = false;
  u128 mantissa = 0;
  int64_t exp10 = 0;
  bool sticky = false;
};

// Strict JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
std::optional<Decimal> ParseDecimal(std::string_view s) {
  Decimal d;
  size_t i = 0;
  const size_t n = s.size();
  if (i < n && s[i] == '-') {
    d.negative = true;
    ++i;
  }
  if (i >= n || s[i] < '0' || s[i] > '9') return std::nullopt;
  // The first 19 significant digits accumulate in 64 bits (the common case:
  // writers print at most 17), the rest in 128 bits.
  uint64_t m64 = 0;
  int kept = 0;
  auto add_digit = [&](unsigned digit, bool fraction) {
    if (kept == 0 && digit == 0) {
      if (fraction) --d.exp10;  // leading zeros of a fraction only shift
      return;
    }
    if (kept < 19) {
      m64 = m64 * 10 + digit;
      ++kept;
      if (fraction) --d.exp10;
      if (kept == 19) d.mantissa = m64;
    } else if (kept < kMaxDigits) {
      d.mantissa = d.mantissa * 10 + digit;
      ++kept;
      if (fraction) --d.exp10;
    } else {
      if (digit != 0) d.sticky = true;
      if (!fraction) ++d.exp10;
    }
  };
  if (s[i] == '0') {
    ++i;
  } else {
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      add_digit(static_cast<unsigned>(s[i++] - '0'), false);
    }
  }
  if (i < n && s[i] == '.') {
    ++i;
    if (i >= n || s[i] < '0' || s[i] > '9') return std::nullopt;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      add_digit(static_cast<unsigned>(s[i++] - '0'), true);
    }
  }
  if (kept < 19) d.mantissa = m64;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) {
      exp_negative = s[i] == '-';
      ++i;
    }
    if (i >= n || s[i] < '0' || s[i] > '9') return std::nullopt;
    int64_t e = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      // Saturate: any exponent beyond 10^6 already over/underflows everything.
      if (e < 1000000) e = e * 10 + (s[i] - '0');
      ++i;
    }
    d.exp10 += exp_negative ? -e : e;
  }
  if (i != n) return std::nullopt;
  return d;
}

constexpr u128 kU128Max = ~static_cast<u128>(0);

// 10^k, and the largest mantissa m with m * 10^k < 2^127, for 0 <= k <= 38:
// a table, because the 128-bit division it replaces is a slow library call
// on every scaled number.
struct Pow10Table {
  u128 v[39];
  u128 max_mantissa[39];
  constexpr Pow10Table() : v(), max_mantissa() {
    v[0] = 1;
    for (int i = 1; i < 39; ++i) v[i] = v[i - 1] * 10;
    for (int i = 0; i < 39; ++i) max_mantissa[i] = (kU128Max >> 1) / v[i];
  }
};
constexpr Pow10Table kPow10;

// 10^k for 0 <= k <= 38.
u128 Pow10(int k) { return kPow10.v[k]; }

// q = m / 10^k, r = m % 10^k (0 <= k <= 38), in 64-bit arithmetic when it
// fits: the common case, and 128-bit division is a slow library call.
void DivPow10(u128 m, int k, u128& q, u128& r) {
  if (k <= 19 && m <= UINT64_MAX) {
    const auto m64 = static_cast<uint64_t>(m);
    const auto p = static_cast<uint64_t>(kPow10.v[k]);
    q = m64 / p;
    r = m64 % p;
    return;
  }
  const u128 p = kPow10.v[k];
  q = m / p;
  r = m % p;
}

// |value| * 10^scale rounded half-even to an integer; nullopt past 2^127.
std::optional<u128> ScaleRoundHalfEven(const Decimal& d, int64_t scale) {
  if (d.mantissa == 0) return u128{0};
  if (scale >= 0) {
    if (scale > 38) return std::nullopt;
    if (d.mantissa > kPow10.max_mantissa[scale]) return std::nullopt;
    return d.mantissa * Pow10(static_cast<int>(scale));
  }
  if (-scale > 38) return u128{0};  // mantissa < 10^36 < 0.5 * 10^38
  const int k = static_cast<int>(-scale);
  u128 q, r;
  DivPow10(d.mantissa, k, q, r);
  const u128 half = Pow10(k) / 2;
  if (r > half || (r == half && (d.sticky || (q & 1) != 0))) ++q;
  return q;
}

// What a fast path found: an answer, an answer out of int64 range, or a shape
// it leaves to a slower path.
enum class Fast { kOtherShape, kPicos, kOutOfRange };

// The fast paths' last step: +-(whole microseconds + the first six fraction
// digits), rounded half-even on the digits after them (`above_half`, or an
// exact `half`), minus the base, in picoseconds.
Fast ToPicos(bool negative, uint64_t whole, uint64_t frac, bool above_half, bool half,
             int64_t base_us, int64_t& out) {
  // 10^6 is even, so the magnitude's parity is frac's.
  const bool round_up = above_half || (half && (frac & 1) != 0);
  i128 ps = static_cast<i128>(whole) * 1000000 + static_cast<i128>(frac + (round_up ? 1 : 0));
  if (negative) ps = -ps;
  ps -= static_cast<i128>(base_us) * 1000000;
  if (ps > INT64_MAX || ps < INT64_MIN) return Fast::kOutOfRange;
  out = static_cast<int64_t>(ps);
  return Fast::kPicos;
}

// The shape nearly every trace time has, -?D{1,18}(.D+)? without exponent,
// converted without the general Decimal: picoseconds are the integer part
// times 10^6 plus the first six fraction digits, rounded half-even on the
// rest. Returns kOtherShape for any other shape (the general path decides
// those). Not an optional out-parameter: GCC built that in memory a byte at a
// time and read it back whole, a store-forwarding stall on every number.
Fast FastMicrosToPicos(std::string_view s, int64_t base_us, int64_t& out) {
  const char* p = s.data();
  const char* const e = p + s.size();
  auto digit = [&](const char* q) { return q < e && static_cast<unsigned>(*q - '0') < 10; };
  const bool negative = p < e && *p == '-';
  if (negative) ++p;
  const char* const int_start = p;
  uint64_t whole = 0;
  while (digit(p)) whole = whole * 10 + static_cast<unsigned>(*p++ - '0');
  const auto int_digits = p - int_start;
  if (int_digits == 0 || int_digits > 18) return Fast::kOtherShape;
  if (int_digits > 1 && *int_start == '0') return Fast::kOtherShape;  // not JSON: rejected there
  uint64_t frac = 0;
  int kept = 0;
  bool above_half = false, half = false;
  if (p < e && *p == '.') {
    ++p;
    if (!digit(p)) return Fast::kOtherShape;
    for (; kept < 6 && digit(p); ++kept) frac = frac * 10 + static_cast<unsigned>(*p++ - '0');
    if (digit(p)) {
      const unsigned first = static_cast<unsigned>(*p++ - '0');
      bool nonzero = false;
      for (; digit(p); ++p) nonzero |= *p != '0';
      above_half = first > 5 || (first == 5 && nonzero);
      half = first == 5 && !nonzero;
    }
  }
  if (p != e) return Fast::kOtherShape;  // exponent (or junk): general path
  for (; kept < 6; ++kept) frac *= 10;
  return ToPicos(negative, whole, frac, above_half, half, base_us, out);
}

// Whether a fast path settled the text; `ok` is then the answer.
bool Settled(Fast outcome, bool& ok) {
  ok = outcome == Fast::kPicos;
  return outcome != Fast::kOtherShape;
}

}  // namespace

bool MicrosTextToPicos(std::string_view text, int64_t base_us, int64_t& ps) {
  if (bool ok; Settled(FastMicrosToPicos(text, base_us, ps), ok)) return ok;
  const std::optional<int64_t> general = detail::MicrosTextToPicosGeneral(text, base_us);
  if (general) ps = *general;
  return general.has_value();
}

std::optional<int64_t> MicrosTextToPicos(std::string_view text, int64_t base_us) {
  int64_t ps;
  if (MicrosTextToPicos(text, base_us, ps)) return ps;
  return std::nullopt;
}

std::optional<int64_t> detail::MicrosTextToPicosGeneral(std::string_view text, int64_t base_us) {
  const std::optional<Decimal> d = ParseDecimal(text);
  if (!d) return std::nullopt;
  const std::optional<u128> magnitude = ScaleRoundHalfEven(*d, d->exp10 + 6);
  if (!magnitude) return std::nullopt;
  i128 ps = static_cast<i128>(*magnitude);
  if (d->negative) ps = -ps;
  ps -= static_cast<i128>(base_us) * 1000000;
  if (ps > INT64_MAX || ps < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(ps);
}

std::optional<int64_t> MicrosTextFloor(std::string_view text) {
  const std::optional<Decimal> d = ParseDecimal(text);
  if (!d) return std::nullopt;
  if (d->mantissa == 0) return 0;
  u128 whole;
  bool has_fraction = d->sticky;
  if (d->exp10 >= 0) {
    if (d->exp10 > 38) return std::nullopt;
    if (d->mantissa > kPow10.max_mantissa[d->exp10]) return std::nullopt;
    whole = d->mantissa * Pow10(static_cast<int>(d->exp10));
  } else if (-d->exp10 > 38) {
    whole = 0;
    has_fraction = true;
  } else {
    u128 r;
    DivPow10(d->mantissa, static_cast<int>(-d->exp10), whole, r);
    if (r != 0) has_fraction = true;
  }
  if (whole > static_cast<u128>(INT64_MAX) + 1) return std::nullopt;
  i128 v = static_cast<i128>(whole);
  if (d->negative) {
    v = -v;
    if (has_fraction) --v;
  }
  if (v > INT64_MAX || v < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace profwatch::parse
