// Reading `profwatch serve --history` files for `profwatch compare`:
// a variant named JOB/RUN or JOB/RUN@WINDOW is looked up in FILE.1 then FILE
// (oldest first) and the last matching line wins. Also turns a
// profwatch.window.v1 report object into the figures compare prints, so
// analysed paths and history entries go through one representation.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace profwatch::cli {

struct SummaryFamily {
  std::string family;
  double seconds = 0;  // per GPU per step
};

// What compare shows of one window (seconds are per GPU per step).
struct WindowSummary {
  std::string window;
  std::vector<SummaryFamily> families;  // report order
  double total_kernel = 0;
  double busy = 0;
  double idle = 0;
  double overlap = 0;
  double exposed_comm = 0;
  int gpus = 0;
  std::string launcher_mode;
  int64_t profile_steps = 0;
  std::optional<double> step_seconds;
  std::string step_source;
  double trace_step_seconds = 0;  // 0: no in-trace step markers
};

// kCorrupt when a field compare needs is missing or has the wrong type.
Result<WindowSummary> SummaryFromReport(const nlohmann::json& report);

struct HistoryQuery {
  std::string training_job;
  std::string run;
  std::optional<std::string> window;
};
// "JOB/RUN" or "JOB/RUN@WINDOW" (RUN may contain '/'); nullopt otherwise.
std::optional<HistoryQuery> ParseHistoryQuery(std::string_view text);

// The latest matching entry. kNotFound (naming the query and the files) when
// no line matches; unreadable lines are skipped; kIo when neither FILE nor
// FILE.1 can be read.
Result<WindowSummary> FindInHistory(const std::string& file, const HistoryQuery& query);

}  // namespace profwatch::cli
