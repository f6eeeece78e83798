#include "cli/log_figures.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/clock.h"
#include "pipeline/training_logs.h"
#include "steplog/log_tailer.h"
#include "steplog/step_time_source.h"

namespace profwatch::cli {
namespace {

// Reads a whole training log into a StepTimeSource (the daemon tails; the
// one-shot commands read once).
Result<std::unique_ptr<steplog::StepTimeSource>> ReadTrainingLog(
    const std::string& path, std::optional<int64_t> profile_steps_flag, const Clock& clock) {
  steplog::StepTimeOptions opts;
  if (profile_steps_flag) opts.overrides.profiler_steps = *profile_steps_flag;
  auto source = std::make_unique<steplog::StepTimeSource>(clock, opts);
  steplog::LogTailer tailer(path);
  if (!std::filesystem::exists(path)) {
    return MakeError(ErrorCode::kNotFound, path + ": training log not found");
  }
  do {
    auto lines = tailer.Poll();
    if (!lines) return tl::unexpected(lines.error().Wrap(path));
    for (size_t i = 0; i < lines->size(); ++i) {
      source->AddLine((*lines)[i], std::nullopt, tailer.line_numbers()[i]);
    }
  } while (!tailer.at_eof());
  return source;
}

}  // namespace

Result<LogFigures> ReadLogFigures(const std::string& command, const std::string& path,
                                  std::optional<int64_t> profile_steps_flag) {
  SystemClock clock;
  auto log = ReadTrainingLog(path, profile_steps_flag, clock);
  if (!log) return tl::unexpected(log.error());
  for (const auto& w : (*log)->warnings()) {
    std::fprintf(stderr, "profwatch %s: WARNING: %s: %s\n", command.c_str(), path.c_str(),
                 w.c_str());
  }
  // The steady steps around the latest profiled steps, the log's recent
  // steady steps when there is none.
  LogFigures figures{(*log)->steady_step_seconds(), (*log)->profile_steps(), path};
  if (std::optional<steplog::WindowSteps> window = (*log)->LatestWindow()) {
    if (auto seconds = (*log)->WindowSteadySeconds(*window).seconds) figures.step_seconds = seconds;
  }
  if (!figures.step_seconds) {
    std::fprintf(stderr, "profwatch %s: WARNING: %s: no steady steps in the log yet\n",
                 command.c_str(), path.c_str());
  }
  return figures;
}

Status WindowLogs::Preload() {
  if (explicit_log_.empty()) return {};
  auto figures = ReadLogFigures(command_, explicit_log_, profile_steps_flag_);
  if (!figures) return tl::unexpected(figures.error());
  figures->path = explicit_log_;
  cache_[explicit_log_] = *figures;
  return {};
}

LogFigures WindowLogs::For(const InputWindow& w, const std::string& explicit_log) {
  std::string path = explicit_log.empty() ? explicit_log_ : explicit_log;
  if (path.empty() && !w.run_dir.empty()) {
    path = pipeline::FindLogByGlobs(pipeline::LocateRunDir(w.run_dir), pipeline::kDefaultLogGlobs);
    if (!path.empty() && cache_.count(path) == 0) {
      std::fprintf(stderr,
                   "profwatch %s: %s: training log %s (found for the run; --log overrides)\n",
                   command_.c_str(), w.label.c_str(), path.c_str());
    }
  }
  if (path.empty()) return {};
  auto cached = cache_.find(path);
  if (cached != cache_.end()) return cached->second;
  auto figures = ReadLogFigures(command_, path, profile_steps_flag_);
  if (!figures) {
    std::fprintf(stderr, "profwatch %s: WARNING: %s\n", command_.c_str(),
                 figures.error().ToString().c_str());
    figures = LogFigures{};
  }
  figures->path = path;
  return cache_[path] = *figures;
}

}  // namespace profwatch::cli
