#include "cli/history_reader.h"

#include <fstream>

namespace profwatch::cli {
namespace {

using json = nlohmann::json;

double Number(const json& j, const char* key, bool* ok) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) {
    *ok = false;
    return 0;
  }
  return it->get<double>();
}

}  // namespace

Result<WindowSummary> SummaryFromReport(const json& r) {
  if (!r.is_object()) return MakeError(ErrorCode::kCorrupt, "window report is not an object");
  WindowSummary s;
  bool ok = true;
  if (auto w = r.find("window"); w != r.end() && w->is_string()) s.window = w->get<std::string>();
  s.total_kernel = Number(r, "total_kernel_seconds_per_gpu_step", &ok);
  s.busy = Number(r, "busy_seconds_per_gpu_step", &ok);
  s.idle = Number(r, "idle_seconds_per_gpu_step", &ok);
  s.overlap = Number(r, "overlap_seconds_per_gpu_step", &ok);
  s.exposed_comm = Number(r, "exposed_comm_seconds_per_gpu_step", &ok);
  s.gpus = static_cast<int>(Number(r, "gpus", &ok));
  s.profile_steps = static_cast<int64_t>(Number(r, "profile_steps", &ok));
  auto mode = r.find("launcher_mode");
  if (mode == r.end() || !mode->is_string()) ok = false;
  auto families = r.find("families");
  if (families == r.end() || !families->is_array()) ok = false;
  if (!ok) return MakeError(ErrorCode::kCorrupt, "window report lacks a field compare needs");
  s.launcher_mode = mode->get<std::string>();
  for (const json& f : *families) {
    auto name = f.find("family");
    auto secs = f.find("seconds_per_gpu_step");
    if (name == f.end() || !name->is_string() || secs == f.end() || !secs->is_number()) {
      return MakeError(ErrorCode::kCorrupt, "window report has a malformed family");
    }
    s.families.push_back({name->get<std::string>(), secs->get<double>()});
  }
  if (auto ts = r.find("trace_step_seconds"); ts != r.end() && ts->is_number()) {
    s.trace_step_seconds = ts->get<double>();
  }
  if (auto step = r.find("step"); step != r.end() && step->is_object()) {
    auto secs = step->find("seconds");
    auto src = step->find("source");
    if (secs != step->end() && secs->is_number()) s.step_seconds = secs->get<double>();
    if (src != step->end() && src->is_string()) s.step_source = src->get<std::string>();
  }
  return s;
}

std::optional<HistoryQuery> ParseHistoryQuery(std::string_view text) {
  HistoryQuery q;
  const size_t at = text.rfind('@');
  std::string_view name = text;
  if (at != std::string_view::npos) {
    q.window = std::string(text.substr(at + 1));
    name = text.substr(0, at);
    if (q.window->empty()) return std::nullopt;
  }
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= name.size()) {
    return std::nullopt;
  }
  q.training_job = std::string(name.substr(0, slash));
  q.run = std::string(name.substr(slash + 1));
  return q;
}

Result<WindowSummary> FindInHistory(const std::string& file, const HistoryQuery& query) {
  std::optional<WindowSummary> found;
  bool readable = false;
  for (const std::string& path : {file + ".1", file}) {
    std::ifstream in(path);
    if (!in) continue;
    readable = true;
    std::string line;
    while (std::getline(in, line)) {
      // Cheap filter before parsing: the run name must appear in the line.
      if (line.find(query.run) == std::string::npos) continue;
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object()) continue;
      auto job = j.find("training_job");
      auto run = j.find("run");
      auto window = j.find("window");
      auto report = j.find("report");
      if (job == j.end() || run == j.end() || report == j.end() || !job->is_string() ||
          !run->is_string() || *job != query.training_job || *run != query.run) {
        continue;
      }
      if (query.window && (window == j.end() || !window->is_string() || *window != *query.window)) {
        continue;
      }
      auto summary = SummaryFromReport(*report);
      if (summary) found = std::move(*summary);
    }
  }
  if (!readable) {
    return MakeError(ErrorCode::kIo, "cannot read history file " + file + " (nor " + file + ".1)");
  }
  if (!found) {
    std::string name = query.training_job + "/" + query.run;
    if (query.window) name += "@" + *query.window;
    return MakeError(ErrorCode::kNotFound, "no window of " + name + " in history " + file);
  }
  return *found;
}

}  // namespace profwatch::cli
