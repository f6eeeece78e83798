// The step basis of a window, chosen in this one file: which step time its
// step figures refer to (the gap, the diagnosis' shares, MFU). How many
// profiled steps divide its sums is chosen during the analysis, from the
// window's own step marks, by aggregate/profile_steps.h.
// serve, analyze and compare gather what they know and call these; none of
// them decides a precedence itself. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "aggregate/window_stats.h"

namespace profwatch::figures {

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
