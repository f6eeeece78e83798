// The exit codes of `analyze` and `compare`, defined once (README: "Exit
// codes" of each). main() returns what a verb returns.
#pragma once

namespace profwatch::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNoKernels = 1;     // analyze: no GPU kernels
inline constexpr int kExitUsage = 2;         // a usage error
inline constexpr int kExitBadInput = 3;      // an input unreadable or corrupt
inline constexpr int kExitIncomparable = 4;  // compare: variants not comparable
inline constexpr int kExitNothing = 5;       // a path missing or holding nothing to analyse

}  // namespace profwatch::cli
