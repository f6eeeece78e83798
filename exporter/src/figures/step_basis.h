// The step basis of a window, chosen in this one file: how many profiled
// steps divide its sums (before the analysis: aggregate's options) and which
// step time its step figures refer to (the gap, the diagnosis' shares, MFU).
// serve, analyze and compare gather what they know and call these; none of
// them decides a precedence itself. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "aggregate/window_stats.h"

namespace profwatch::figures {

// The most profiled steps a training log may claim: more is taken as this
// (a divisor that large makes every per-step figure meaningless anyway).
inline constexpr int64_t kMaxProfileSteps = 1'000'000;

// What divides a window's sums, as aggregate's options take it.
struct ProfileSteps {
  int steps = 3;
  // Neither the flag nor the log gave a count: an nsys export's NVTX step
  // ranges count the steps (aggregate counts them; `steps` otherwise).
  bool from_nvtx_ranges = false;
};
// Precedence: the --profile-steps flag when given (`flag`), the training
// log's profiler_steps (`log`, when > 0), Nsight's NVTX step ranges (when
// the window has them), `default_steps` (the flag's default).
ProfileSteps ChooseProfileSteps(std::optional<int64_t> flag, std::optional<int64_t> log,
                                int64_t default_steps);

// A step time and where it came from: "log", "trace" or "config"; unset
// seconds and an empty source when there is none.
struct StepTime {
  std::optional<double> seconds;
  std::string source;
  bool operator==(const StepTime&) const = default;
};

// What a command knows about a window's step time. A value that is unset or
// not above 0 is no source.
struct StepSources {
  // Given for this report, winning over everything (compare's --step-time;
  // source "config").
  std::optional<double> given;
  // Chosen before and recorded with the window (a --history entry: the
  // daemon's choice, its source kept).
  std::optional<StepTime> recorded;
  // The training log: the steady steps around the window's own profiled
  // steps, and the log's recent steady steps (both source "log").
  std::optional<double> log_window;
  std::optional<double> log_steady;
  // Configuration (analyze's and serve's --step-time): the last resort.
  std::optional<double> config;
};
// Precedence: given > recorded > log_window > log_steady > the window's
// in-trace step markers (`window`, when not null; source "trace") > config.
StepTime ChooseStepTime(const StepSources& sources, const aggregate::WindowStats* window);

// The step the diagnosis weighs shares against: the window's step time,
// else its in-trace step markers ("trace"), else its kernels' span per GPU
// per step ("kernel span"). `measured` is false for the span (no step was
// measured: MFU needs one).
struct DiagnosisStep {
  double seconds = 0;
  std::string basis;
  bool measured = false;
};
DiagnosisStep DiagnosisStepOf(const aggregate::WindowStats& s, const StepTime& step);

}  // namespace profwatch::figures
