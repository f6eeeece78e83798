// Text and JSON reports of one analysed window (`profwatch analyze`). They
// render the window's figures (figures/window_figures.h: every number, the
// step time included) plus the context the caller knows (window, format,
// expected GPUs, read errors); they compute nothing. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "figures/window_figures.h"
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
  std::vector<ReportError> errors;
  double analysis_seconds = 0.0;
};

// Native human report (`--format table`).
std::string RenderTable(const figures::WindowFigures& figures, const ReportContext& ctx);

// Stable machine schema "profwatch.window.v1" (documented in the README).
nlohmann::ordered_json WindowToJson(const figures::WindowFigures& figures,
                                    const ReportContext& ctx);

// `j` as JSON text whatever bytes its strings hold: every string value in
// core/text.h's reversible form (a byte that is not UTF-8 as \xHH, a `\`
// that would begin an escape doubled; nlohmann's plain dump throws on bad
// UTF-8). Every JSON document the CLI prints goes through here; the --state
// and --history writers write strings the same way (store/).
std::string JsonText(const nlohmann::ordered_json& j, int indent = -1);

// WindowToJson of a run's current window in the context the run carries
// (window id, format, expected GPUs): the "report" of a --history line.
// REQUIRES: rs.figures (snapshot::RefreshFigures).
nlohmann::ordered_json RunReportToJson(const snapshot::RunState& rs);

}  // namespace profwatch::expose
