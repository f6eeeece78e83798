// StepTimeSource: the training-log view of one run. Fed the lines of the
// run's log (step lines and `Config param` lines), it combines per-node
// duplicate step lines, knows which steps were profiled (from MaxText's
// config dump, overridable by flags) and derives the steady step time that
// the step - kernel gap uses.
//
// Step kinds (MaxText semantics, `start` = the run's first step, 0 for a
// fresh run, the restored step after a checkpoint restart):
//   - warm-up: steps before start + max(min_warmup_steps, skip_first_n)
//     (compilation; skip_first_n only counts while profiling is on and the
//     window is known, i.e. both skip_first_n and profiler_steps > 0);
//   - profiled: first = start + skip_first_n_steps_for_profiler, steps
//     first .. first + profiler_steps - 1; with profile_periodically_period
//     = P > 0 a window also starts at every first + k*P (k any integer, as
//     MaxText's modulo test does) that is >= start;
//   - write-back: the step right after each window (profiler write-back
//     slows it by 30-70%);
//   - steady: everything else.
// A `Config param` line after step lines starts a new segment (the job
// restarted and dumped its config again): retained steps are dropped and the
// next step line sets `start`. When the log is read from its middle (no
// config seen first) `start` is 0. (Assumes every node's config dump precedes
// the first step line, as MaxText's startup barrier makes it; a config line
// delayed past step lines would be taken for a restart.)
//
// Not thread-safe: one owner feeds and reads it (the daemon copies the values
// into its snapshot). Memory is bounded by StepTimeOptions::max_retained_steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "steplog/limits.h"
#include "steplog/step_line_parser.h"

namespace profwatch::steplog {

enum class StepKind { kWarmup, kProfiled, kWriteBack, kSteady };
// "warmup", "profiled", "write_back", "steady".
std::string_view StepKindName(StepKind kind);

// Profile settings under MaxText's names. Unset = unknown.
struct ProfileConfig {
  std::optional<std::string> profiler;        // "xplane", "nsys"; "" / "none" = off
  std::optional<int64_t> skip_first_n_steps;  // first profiled step, relative to start
  std::optional<int64_t> profiler_steps;      // steps per window
  std::optional<int64_t> period;              // profile_periodically_period; <= 0: once

  bool operator==(const ProfileConfig&) const = default;
};

// Inclusive step range.
struct StepRange {
  int64_t first = 0;
  int64_t last = 0;
  bool operator==(const StepRange&) const = default;
};

// One window's place in the log (docs/step-time.md, "Step time of a window"):
// the steps it profiled and the period its step time comes from.
struct WindowSteps {
  // The log segment the steps belong to (StepTimeSource::segment()); after a
  // restart of the job the window's steps are gone from the source.
  uint64_t segment = 0;
  // The profiled steps. located = false: the profile config does not say
  // which steps were profiled and `profiled` is the log's last step when the
  // window was bound (the anchor; it is not excluded).
  StepRange profiled;
  bool located = false;
  // The window's period: steps before period_first belong to the previous
  // window, steps from period_end on to the next one. Unset: unbounded.
  std::optional<int64_t> period_first;
  std::optional<int64_t> period_end;
  bool operator==(const WindowSteps&) const = default;
};

// The step time of one window.
struct WindowStepTime {
  std::optional<double> seconds;  // median of the steady steps around it
  size_t steps = 0;               // steady steps in the median
  // No later line can change it: kWindowAfterSteps steady steps after the
  // window are in, the
  // next window's period began, or the log restarted (its steps are gone:
  // the caller keeps the last value it had).
  bool settled = false;
};

struct StepTimeOptions {
  int64_t min_warmup_steps = 3;     // steps [start, start + N) are always warm-up
  size_t steady_window = 20;        // median over at most this many recent steady steps
  size_t max_retained_steps = 512;  // older steps are forgotten (>= steady_window)
  // From flags: each set field wins over the log; a disagreement with the log
  // is reported in warnings(). Set only what the user gave explicitly: a set
  // skip_first_n_steps or profiler_steps alone turns profiling on (the user
  // says there is a window) unless `profiler` is set to "" / "none". Values
  // outside +-1e12 are dropped with a warning.
  ProfileConfig overrides;
};

// One step, combined over the nodes that printed it.
struct StepRecord {
  int64_t step = 0;
  double seconds = 0;         // slowest node's seconds
  double spread_seconds = 0;  // slowest - fastest node
  int lines = 0;              // step lines seen (one per node)
  StepKind kind = StepKind::kSteady;
  StepLine slowest;  // the slowest node's line (its other fields)
};

class StepTimeSource {
 public:
  // `clock` is borrowed and must outlive this object.
  explicit StepTimeSource(const Clock& clock, StepTimeOptions options = {});

  // Feeds one log line (any text): step lines and config-param lines are
  // used, a line with the step marker that does not parse is counted in
  // parse_errors(), everything else is ignored. `written`: when the line was
  // written at the latest (its log's modification time when it was read);
  // without it, or when it is later, the clock's now. `line_number`: where
  // the line is in its file (LogTailer::line_numbers()), named by warnings
  // about it; 0: unknown.
  void AddLine(std::string_view line, std::optional<TimePoint> written = std::nullopt,
               uint64_t line_number = 0);
  void AddStepLine(const StepLine& line, std::optional<TimePoint> written = std::nullopt);
  void AddConfigParam(const ConfigParam& param);

  // Latest (highest-numbered) step and the slowest node's values for it.
  std::optional<int64_t> last_step() const;
  std::optional<double> last_step_seconds() const;
  std::optional<double> last_step_spread_seconds() const;
  std::optional<double> tokens_per_second_per_device() const;
  std::optional<double> tflops_per_device() const;
  std::optional<double> mfu_ratio() const;
  std::optional<double> loss() const;
  // When a line of the latest step was last written: the clock's time when it
  // was read, or its `written` time if earlier (a log read while catching up).
  std::optional<TimePoint> last_step_time() const;

  // Median seconds over the most recent steady_window steady steps; nullopt
  // when there is none yet. The newest step is left out while fewer nodes
  // reported it than reported the other retained steps (it is still
  // arriving). steady_step_count() is the number of steps in the median.
  std::optional<double> steady_step_seconds() const;
  size_t steady_step_count() const;

  // A step more than this far below the latest starts the series anew.
  static constexpr int64_t kRestartBackSteps = 10;
  // Times the series started anew because the steps went backwards.
  uint64_t restarts() const { return restarts_; }

  uint64_t parse_errors() const { return parse_errors_; }
  uint64_t step_lines() const { return step_lines_; }

  // As read from the log, and effective (overrides applied).
  const ProfileConfig& log_profile_config() const { return log_config_; }
  ProfileConfig profile_config() const;
  bool profiling_enabled() const;
  // Absolute first profiled step and window length; nullopt when profiling is
  // off or the window is unknown.
  std::optional<int64_t> first_profiled_step() const;
  std::optional<int64_t> profile_steps() const;
  // Profiled windows that start at or before `through_step`, ascending
  // (bounded to the first 10000 windows).
  std::vector<StepRange> ProfiledRanges(int64_t through_step) const;
  StepKind Classify(int64_t step) const;
  int64_t run_start_step() const { return start_step_.value_or(0); }

  // Human-readable warnings (flag/log mismatches, unreadable config values),
  // each reported once, oldest first, at most kMaxWarnings. They name the
  // log's line ("line 12: config param profiler_steps is not an integer")
  // and never quote its text: a log is any bytes its writer chose, and
  // warnings go to the daemon's own log.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Counts the log's segments: a config dump after step lines, or steps
  // going backwards, start a new one (the retained steps are dropped).
  uint64_t segment() const { return segment_; }

  // The window the log says was profiled last: the latest profiled range
  // whose first step the log has reached (located), else an anchor at the
  // last step. `previous`: the run's window before this one; a located
  // range it already had is not a new window's (a profile the config does
  // not describe), so that window is anchored at the last step instead.
  // nullopt while the log has no step line.
  std::optional<WindowSteps> LatestWindow(const WindowSteps* previous = nullptr) const;
  // Steady steps used before a window's profiled steps: the regime the
  // profile was taken in.
  size_t window_before_steps() const { return (options_.steady_window + 1) / 2; }
  // Steady steps used after them (write-back excluded): few, so a slowdown
  // that starts after the profile does not become the window's; enough for
  // a profile taken right after warm-up (no steady step before it).
  static constexpr size_t kWindowAfterSteps = 3;
  // The window's step time: the median of up to window_before_steps()
  // steady steps right before its profiled steps and up to
  // kWindowAfterSteps right after them, all inside its period and segment.
  WindowStepTime WindowSteadySeconds(const WindowSteps& window) const;

  // Retained steps, ascending, with their kinds.
  std::vector<StepRecord> Steps() const;

 private:
  struct Agg {
    double max_seconds = 0;
    double min_seconds = 0;
    int lines = 0;
    StepLine slowest;
  };
  // Warns once per distinct `message` (the line it was first seen at, if
  // known, prefixed).
  void Warn(std::string message);
  void CheckMismatches();
  // Median inputs: seconds of the recent steady steps, newest first.
  std::vector<double> SteadySeconds() const;
  // Lines of the step with most lines, the newest step left out: a newest
  // step with fewer lines is still arriving from the other nodes.
  int MaxLinesOlder() const;

  const Clock& clock_;
  StepTimeOptions options_;
  ProfileConfig log_config_;
  bool legacy_enable_profiler_ = false;  // `enable_profiler: True` (older MaxText)
  std::map<int64_t, Agg> steps_;
  std::optional<int64_t> start_step_;
  bool config_seen_in_segment_ = false;
  bool steps_seen_in_segment_ = false;
  std::optional<TimePoint> last_step_time_;
  uint64_t parse_errors_ = 0;
  uint64_t step_lines_ = 0;
  uint64_t restarts_ = 0;
  uint64_t segment_ = 0;
  uint64_t line_number_ = 0;  // of the line being added; 0: unknown
  std::vector<std::string> warnings_;
  std::set<std::string> warned_;
};

}  // namespace profwatch::steplog
