// How many steps a profile window covers: the divisor of every per-step
// figure, chosen in one place for serve, analyze and compare (the drill
// report keeps profile_drill.py's rule instead: the flag, else 3). Pure
// function of the explicit flag, the training log and the window's own step
// marks; thread-safe.
//
// Precedence, first that applies:
//  1. --profile-steps given explicitly;
//  2. the window's Kineto ProfilerStep#N markers: the distinct N per Kineto
//     file (schedules of 1, 2, 5 and 6 active steps are common). Files
//     (ranks) that disagree are flagged and the most common count is taken
//     (of equally common ones, the largest);
//  3. the training log's profiler_steps;
//  4. Nsight Systems NVTX step ranges: the distinct step numbers of the
//     window's nsys exports;
//  5. kDefaultProfileSteps (MaxText's and profile_drill.py's default).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aggregate/limits.h"
#include "aggregate/window_stats.h"

namespace profwatch::aggregate {

inline constexpr int kDefaultProfileSteps = 3;

// "flag", "trace" (Kineto markers), "log", "nvtx", "default".
std::string_view ProfileStepsSourceName(ProfileStepsSource s);
std::optional<ProfileStepsSource> ParseProfileStepsSource(std::string_view name);

struct ProfileStepsChoice {
  int steps = kDefaultProfileSteps;
  ProfileStepsSource source = ProfileStepsSource::kDefault;
  // Kineto files whose marker counts differ ("2 of 3 files mark 5 steps,
  // 1 marks 4"); empty when they agree or were not used.
  std::string disagreement;
};

// `flag`: given explicitly (>= 0; 0 only reaches here from --format drill,
// which passes no files or steps: profile_drill.py's rule, the flag, else
// the log, else 3). `log`: a value below 1 is none. `files` and `steps`: the
// window's (WindowStats::files, WindowStats::trace_steps).
ProfileStepsChoice ChooseProfileSteps(std::optional<int64_t> flag, std::optional<int64_t> log,
                                      const std::vector<FileSummary>& files,
                                      const std::vector<StepSpan>& steps);

}  // namespace profwatch::aggregate
