// The pipeline stage's fixed bounds, in one place (issue 62). The caps a
// user sets with a flag, and the per-run state cap, are core/caps.h's table.
//
// Thread-safety: constants.
#pragma once

#include <chrono>
#include <cstdint>

namespace profwatch::pipeline {

// Daemons that may die analysing one window (the same files) before it is
// failed as crashed instead of analysed: the first death may be another
// window's (two workers), so the window is retried once, alone.
inline constexpr int kMaxDeathsPerWindow = 2;
// The scan thread wakes at least this often (retention sweep, dispatch).
inline constexpr std::chrono::milliseconds kMaxScanIdle{1000};
// The longest duration a serve option takes (cli/serve_flags.cc), in
// milliseconds: deadlines are now + duration on a nanosecond clock (which
// overflows after ~292 years), and llround of an out-of-range value is
// undefined.
inline constexpr double kMaxDurationMs = 100.0 * 365 * 86'400'000;

}  // namespace profwatch::pipeline
