// Text and JSON reports of one analysed window (`profwatch analyze`). They
// render WindowStats plus the context the caller knows (expected GPUs, step
// time); they never compute analysis themselves. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "aggregate/window_stats.h"
#include "snapshot/snapshot.h"

namespace profwatch::expose {

struct ReportError {
  std::string file;
  std::string reason;  // ErrorCodeName
  std::string message;
};

struct ReportContext {
  std::string window;           // window id or the path analysed
  std::string format = "json";  // json | xplane | mixed
  int expected_gpus = 0;        // 0 = not given
  std::optional<double> step_seconds;
  std::string step_source;  // log | trace | config
  std::vector<ReportError> errors;
  double analysis_seconds = 0.0;
};

// The step-time figures derived from a window and a step time.
struct StepGap {
  double total_kernel_seconds = 0;  // per GPU per step
  double step_seconds = 0;
  double minus_kernel_seconds = 0;  // step - total kernel
  double ratio = 0;                 // (step - total kernel) / step
};
std::optional<StepGap> ComputeStepGap(const aggregate::WindowStats& stats,
                                      std::optional<double> step_seconds);

// Native human report (`--format table`).
std::string RenderTable(const aggregate::WindowStats& stats, const ReportContext& ctx);

// Stable machine schema "profwatch.window.v1" (documented in the README).
nlohmann::ordered_json WindowToJson(const aggregate::WindowStats& stats, const ReportContext& ctx);

// `j` as JSON text whatever bytes its strings hold: invalid UTF-8 becomes
// U+FFFD (nlohmann's plain dump throws on it). Every JSON document the CLI
// prints goes through here; the --state and --history writers dump the
// same way (store/).
std::string JsonText(const nlohmann::ordered_json& j, int indent = -1);

// WindowToJson of a run's current window in the context the run carries
// (window id, format, expected GPUs, step time and its source): the
// "report" of a --history line. REQUIRES: rs.stats.
nlohmann::ordered_json RunReportToJson(const snapshot::RunState& rs);

}  // namespace profwatch::expose
