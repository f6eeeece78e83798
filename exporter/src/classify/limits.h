// The classify stage's fixed bounds, in one place (issue 62): what a rules
// file and the regexes in it may be, and the names a regex is tried on.
//
// Thread-safety: constants.
#pragma once

#include <cstddef>

namespace profwatch::classify {

// A --rules file larger than this is refused (rules_file.cc).
inline constexpr size_t kMaxRulesFileBytes = 16u << 20;
// Regexes are capped at this length to bound the regex compiler's recursion
// on hostile input.
inline constexpr size_t kMaxRegexBytes = 1024;
// Numbers in a {n,m} count or a \N back-reference are capped at this many
// digits: libstdc++ reads them into a `long` without an overflow check, and
// a count that large could never compile anyway.
inline constexpr size_t kMaxRegexNumberDigits = 6;
// The longest name a regex condition is tried on; it does not hold on a
// longer one. libstdc++'s regex recurses once per character it matches, so
// a name of 64 KiB matched by `[A-Za-z0-9]*` overflows an 8 MiB stack; real
// kernel names run to a few thousand characters. (contains, prefix, suffix
// and not_contains see a name of up to 32 KiB whole, a longer one by its
// first and last 16 KiB joined: see Classify.)
inline constexpr size_t kMaxRegexName = size_t{16} << 10;

}  // namespace profwatch::classify
