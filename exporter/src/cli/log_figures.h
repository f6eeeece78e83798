// Training logs for the one-shot commands (`analyze`, `compare`): each
// window's log is an explicit --log or the one serve would find for its run
// (pipeline::FindLogByGlobs), read once to its end.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "cli/analyze_inputs.h"
#include "core/result.h"

namespace profwatch::cli {

// What a training log gives a report.
struct LogFigures {
  std::optional<double> step_seconds;    // the window's step time (source "log")
  std::optional<int64_t> profile_steps;  // profiler_steps (divisor)
  std::string path;                      // the log read ("" when none)
};

// Reads `path` once, printing its warnings as "profwatch <command>: ...".
// `profile_steps_flag` overrides the log's profiler_steps (a disagreement is
// warned). The step time is that of the latest profile the log reached, as
// serve places a window landing on a log read to its end (docs/step-time.md).
Result<LogFigures> ReadLogFigures(const std::string& command, const std::string& path,
                                  std::optional<int64_t> profile_steps_flag);

// The training log of each window: `explicit_log` for all of them when set,
// else the log of the window's run found the way serve finds it.
class WindowLogs {
 public:
  WindowLogs(std::string command, std::string explicit_log,
             std::optional<int64_t> profile_steps_flag)
      : command_(std::move(command)),
        explicit_log_(std::move(explicit_log)),
        profile_steps_flag_(profile_steps_flag) {}

  // Reads the explicit log up front: a bad explicit log is an input error.
  Status Preload();

  // Figures of `w`'s log (`explicit_log` overrides the constructor's when
  // set); empty when it has none. A found log that cannot be read is a
  // warning (the report goes on without it).
  LogFigures For(const InputWindow& w, const std::string& explicit_log = "");

 private:
  std::string command_;
  std::string explicit_log_;
  std::optional<int64_t> profile_steps_flag_;
  std::map<std::string, LogFigures> cache_;
};

}  // namespace profwatch::cli
