// `profwatch analyze [options] PATH...`: one-shot reports (table, json, drill).
// Exit codes: 0 ok; 1 no GPU kernels; 2 usage; 3 unreadable/corrupt input;
// 5 a path that does not exist or holds nothing to analyse (README).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "aggregate/profile_steps.h"
#include "analysis/analyze.h"
#include "cli/analyze_inputs.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/log_figures.h"
#include "drill/drill_report.h"
#include "expose/report.h"
#include "figures/step_basis.h"
#include "figures/window_figures.h"

namespace profwatch::cli {
namespace {

// profile_drill.py mode: the same arguments give the same bytes.
int RunDrill(const std::vector<InputWindow>& windows, int64_t profile_steps, int64_t top_n,
             const analysis::AnalyzeOptions& options) {
  std::vector<std::string> files;
  for (const auto& w : windows) {
    for (const auto& f : w.files) {
      if (!f.ends_with(".xplane.pb")) files.push_back(f);
    }
  }
  drill::DrillTally tally;
  for (const auto& f : files) {
    uint64_t raw = 0;
    auto summary = analysis::ParseFile(f, tally.BeginFile(f), options, &raw);
    if (summary && (summary->schema == parse::TraceSchema::kNsys ||
                    summary->schema == parse::TraceSchema::kRocprof)) {
      std::fprintf(stderr,
                   "profwatch: %s is %s; --format drill reproduces "
                   "profile_drill.py, which reads JAX traces only (use --format table or json)\n",
                   f.c_str(),
                   summary->schema == parse::TraceSchema::kNsys ? "an Nsight Systems export"
                                                                : "rocprofv3 JSON output");
      return kExitUsage;
    }
    if (!summary) {
      std::fprintf(stderr, "profwatch: cannot read %s: %s\n", f.c_str(),
                   summary.error().ToString().c_str());
      return kExitBadInput;
    }
  }
  auto out = tally.Render(static_cast<int>(files.size()), profile_steps, top_n);
  std::fwrite(out.out.data(), 1, out.out.size(), stdout);
  std::fwrite(out.err.data(), 1, out.err.size(), stderr);
  return out.exit_code;
}

// Every flag of `analyze`, parsed.
struct AnalyzeFlags {
  std::vector<std::string> paths;
  std::string format = "table";
  int64_t profile_steps = 3;
  int64_t family_top_n = -1;
  int expected_gpus = 0;
  double step_time = 0;
  std::string window_sel = "all";
  std::string inflate{read::InflateBackendName(read::DefaultInflateBackend())};
  std::string log_file;
  ModelFlags model;  // shared with serve
  int top_regions = 10;
  AnalysisFlags common;  // shared with compare
};

void AddAnalyzeOptions(CLI::App& app, AnalyzeFlags& f) {
  app.add_option("paths", f.paths, "Trace files, <ts> dirs, run or job dirs")->required();
  app.add_option("--format", f.format, "drill | table | json")
      ->check(CLI::IsMember({"drill", "table", "json"}))
      ->capture_default_str();
  app.add_option("--profile-steps", f.profile_steps,
                 "Profiled steps in the window (divisor, >= 1); given, it wins over the window's "
                 "own count (" +
                     ProfileStepsDefaultHelp() +
                     "; --format drill: the flag, else the log, else 3, and it also takes 0, as "
                     "profile_drill.py does)")
      ->check(WholeAtLeast(0, INT64_MAX));
  app.add_option("--family-top-n", f.family_top_n,
                 "Kernels listed per family (drill: per drill-down tag; default all in drill "
                 "mode, 5 otherwise)")
      ->check(WholeAtLeast(0, INT64_MAX));
  AddModelOptions(app, f.model);
  app.add_option("--top-regions", f.top_regions, "Regions listed by kernel time; the rest as other")
      ->check(WholeAtLeast(1))
      ->capture_default_str();
  app.add_option("--expected-gpus", f.expected_gpus,
                 "Warn loudly when the window has a different GPU count")
      ->check(WholeAtLeast(0));
  app.add_option("--step-time", f.step_time, "Steady-state step seconds (config source of the gap)")
      ->check(NumberAbove(0));
  app.add_option("--window", f.window_sel,
                 "all | latest (the newest window by capture time, one per run) | <window id>")
      ->capture_default_str();
  app.add_option("--inflate", f.inflate,
                 "Gzip backend: zlib | isal (default: isal where built in, else zlib)")
      ->capture_default_str();
  AddAnalysisOptions(app, f.common);
  app.add_option("--log", f.log_file,
                 "MaxText training log: steady step time (source log) and profiler_steps "
                 "(default: each run dir's or <ts> dir's log, found as serve finds it)");
}

// The engine's options from the flags; an exit code when a flag is unusable
// (printed).
std::optional<int> BuildOptions(const AnalyzeFlags& f, analysis::AnalyzeOptions& options) {
  f.common.ApplyTo(options);
  options.aggregate.top_kernels = f.family_top_n >= 0 ? static_cast<size_t>(f.family_top_n) : 5;
  f.model.ApplyTo(options.aggregate);
  options.aggregate.top_regions = static_cast<size_t>(f.top_regions);
  auto backend = read::ParseInflateBackend(f.inflate);
  if (!backend) {
    std::fprintf(stderr, "profwatch analyze: %s\n", backend.error().context.c_str());
    return kExitUsage;
  }
  options.inflate = *backend;
  options.rules = f.common.rules;
  if (!f.common.families_file.empty()) {
    const std::string& rules = f.common.rules;
    auto classifier = LoadClassifier(rules == "auto" ? "drill" : rules, f.common.families_file);
    if (!classifier) {
      std::fprintf(stderr, "profwatch analyze: %s\n", classifier.error().context.c_str());
      return kExitUsage;
    }
    options.classifier = *classifier;
  }
  return std::nullopt;
}

// The windows the paths hold, narrowed by --window; an exit code (printed)
// when there are none or a path is unusable.
tl::expected<std::vector<InputWindow>, int> SelectWindows(const AnalyzeFlags& f,
                                                          int64_t skew_seconds) {
  auto windows = ResolveInputs(f.paths, skew_seconds);
  if (!windows) {
    std::fprintf(stderr, "profwatch analyze: %s\n", windows.error().context.c_str());
    // --format drill keeps profile_drill.py's exit code for a missing file.
    if (windows.error().code == ErrorCode::kNotFound) {
      return tl::unexpected(f.format == "drill" ? kExitBadInput : kExitNothing);
    }
    return tl::unexpected(windows.error().code == ErrorCode::kPermission ? kExitBadInput
                                                                         : kExitUsage);
  }
  if (f.window_sel == "latest") {
    *windows = LatestPerRun(std::move(*windows));
  } else if (f.window_sel != "all") {
    std::erase_if(*windows, [&](const InputWindow& w) {
      return !w.label.ends_with("/" + f.window_sel) && w.label != f.window_sel;
    });
    if (windows->empty()) {
      std::fprintf(stderr, "profwatch analyze: no window '%s' found\n", f.window_sel.c_str());
      return tl::unexpected(kExitNothing);
    }
  }
  return std::move(*windows);
}

// Analyses one window and prints its report; the window's exit code.
int ReportWindow(const AnalyzeFlags& f, const InputWindow& w, bool first, const LogFigures& log,
                 const analysis::AnalyzeOptions& options) {
  auto analysis = analysis::AnalyzeFiles(w.files, options);
  if (!analysis) {
    std::fprintf(stderr, "profwatch analyze: %s: %s\n", w.label.c_str(),
                 analysis.error().ToString().c_str());
    return kExitBadInput;
  }
  int exit_code = kExitOk;
  expose::ReportContext ctx;
  ctx.window = w.label;
  ctx.format = analysis->format;
  ctx.expected_gpus = f.expected_gpus;
  ctx.analysis_seconds = analysis->seconds;
  const auto stats = std::make_shared<const aggregate::WindowStats>(std::move(analysis->stats));
  figures::StepSources sources;
  sources.log_window = log.step_seconds;
  if (f.step_time > 0) sources.config = f.step_time;
  const figures::WindowFigures figures =
      figures::FiguresOf(stats, figures::ChooseStepTime(sources, stats.get()));
  for (const auto& e : analysis->errors) {
    ctx.errors.push_back({e.path, std::string(ErrorCodeName(e.error.code)), e.error.ToString()});
    std::fprintf(stderr, "profwatch analyze: %s\n", e.error.ToString().c_str());
    exit_code = kExitBadInput;
  }
  if (f.format == "json") {
    std::cout << expose::JsonText(expose::WindowToJson(figures, ctx)) << "\n";
  } else {
    if (!first) std::cout << "\n";
    std::cout << expose::RenderTable(figures, ctx);
  }
  if (stats->gpus() == 0 && exit_code == kExitOk) exit_code = kExitNoKernels;
  if (f.expected_gpus > 0 && stats->gpus() != f.expected_gpus) {
    std::fprintf(stderr, "profwatch analyze: WARNING: %s: %d GPUs detected, %d expected\n",
                 w.label.c_str(), stats->gpus(), f.expected_gpus);
  }
  return exit_code;
}

}  // namespace

int RunAnalyze(const std::vector<std::string>& args) {
  CLI::App app{"One-shot report for trace files, a <ts> dir, or a run/job dir.",
               "profwatch analyze"};
  AnalyzeFlags f;
  AddAnalyzeOptions(app, f);
  if (auto code = ParseArgs(app, "analyze", args)) return *code;
  const std::optional<int64_t> skew_seconds = SkewSeconds("analyze", f.common.skew);
  if (!skew_seconds) return kExitUsage;
  // A divisor of 0 makes every per-step figure meaningless: a usage error
  // (as serve has it), except where --format drill reproduces the script.
  if (f.profile_steps < 0 || (f.profile_steps == 0 && f.format != "drill")) {
    std::fprintf(stderr, "profwatch analyze: --profile-steps: must be at least 1, not %lld\n",
                 static_cast<long long>(f.profile_steps));
    return kExitUsage;
  }
  const bool profile_steps_given = app.count("--profile-steps") > 0;

  // The training log knows the steady step time and the profiler settings.
  WindowLogs logs("analyze", f.log_file,
                  profile_steps_given ? std::optional<int64_t>(f.profile_steps) : std::nullopt);
  if (Status s = logs.Preload(); !s) {
    std::fprintf(stderr, "profwatch analyze: %s\n", s.error().ToString().c_str());
    return kExitBadInput;
  }
  analysis::AnalyzeOptions options;
  if (auto code = BuildOptions(f, options)) return *code;
  auto windows = SelectWindows(f, *skew_seconds);
  if (!windows) return windows.error();

  if (f.format == "drill") {
    if (windows->size() > 1) *windows = {NewestWindow(std::move(*windows))};
    const LogFigures log = windows->empty() ? LogFigures{} : logs.For(windows->back());
    // profile_drill.py's divisor: the flag, else the log's, else the default
    // (never the window's step marks: the script counts no steps itself).
    const int64_t steps =
        aggregate::ChooseProfileSteps(
            profile_steps_given ? std::optional<int64_t>(f.profile_steps) : std::nullopt,
            log.profile_steps, {}, {})
            .steps;
    return RunDrill(*windows, steps, f.family_top_n, options);
  }

  int exit_code = kExitOk;
  for (const auto& w : *windows) {
    const LogFigures log = logs.For(w);
    // The window's own step marks decide between the flag, the log and
    // the default (aggregate/profile_steps.h).
    options.aggregate.profile_steps_flag =
        profile_steps_given ? std::optional<int64_t>(f.profile_steps) : std::nullopt;
    options.aggregate.profile_steps_log = log.profile_steps;
    const int code = ReportWindow(f, w, &w == &windows->front(), log, options);
    // Any window's bad input wins; no kernels only while every window read.
    if (code == kExitBadInput) {
      exit_code = kExitBadInput;
    } else if (code == kExitNoKernels && exit_code == kExitOk) {
      exit_code = kExitNoKernels;
    }
  }
  std::cout.flush();
  return exit_code;
}

}  // namespace profwatch::cli
