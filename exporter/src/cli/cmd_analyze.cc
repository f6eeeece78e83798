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

#include "analysis/analyze.h"
#include "cli/analyze_inputs.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/log_figures.h"
#include "drill/drill_report.h"
#include "expose/report.h"

namespace profwatch::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitNoKernels = 1;
constexpr int kExitUsage = 2;
constexpr int kExitBadInput = 3;
constexpr int kExitNothing = 5;

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
    if (summary && summary->schema == parse::TraceSchema::kNsys) {
      std::fprintf(stderr,
                   "profwatch: %s is an Nsight Systems export; --format drill reproduces "
                   "profile_drill.py, which reads JAX traces only (use --format table or json)\n",
                   f.c_str());
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

}  // namespace

int RunAnalyze(const std::vector<std::string>& args) {
  CLI::App app{"One-shot report for trace files, a <ts> dir, or a run/job dir.",
               "profwatch analyze"};
  std::vector<std::string> paths;
  std::string format = "table";
  int64_t profile_steps = 3;
  int64_t family_top_n = -1;
  std::string families_file;
  std::string rules = "auto";
  int expected_gpus = 0;
  double step_time = 0;
  std::string skew = "120s";
  std::string window_sel = "all";
  std::string source = "auto";
  std::string inflate(read::InflateBackendName(read::DefaultInflateBackend()));
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string log_file;
  int region_depth = 3;
  double peak_flops = 0;
  int top_regions = 10;

  app.add_option("paths", paths, "Trace files, <ts> dirs, run or job dirs")->required();
  app.add_option("--format", format, "drill | table | json")
      ->check(CLI::IsMember({"drill", "table", "json"}))
      ->capture_default_str();
  app.add_option("--profile-steps", profile_steps,
                 "Profiled steps in the window (divisor, >= 1; --format drill also takes 0, as "
                 "profile_drill.py does)")
      ->capture_default_str();
  app.add_option("--family-top-n", family_top_n,
                 "Kernels listed per family (drill: per drill-down tag; default all in drill "
                 "mode, 5 otherwise)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--families", families_file,
                 "Family rules file (YAML/JSON) added before the base set");
  app.add_option("--region-depth", region_depth,
                 "Components of a model region (JAX scope path without jit frames)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--peak-flops", peak_flops,
                 "Peak FLOP/s per GPU for MFU (default: the device's dense bf16 datasheet peak)")
      ->check(CLI::PositiveNumber);
  app.add_option("--top-regions", top_regions, "Regions listed by kernel time; the rest as other")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rules", rules, "Base family rule set: drill | nvidia | amd | auto")
      ->check(CLI::IsMember({"drill", "nvidia", "amd", "auto"}))
      ->capture_default_str();
  app.add_option("--expected-gpus", expected_gpus,
                 "Warn loudly when the window has a different GPU count")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--step-time", step_time, "Steady-state step seconds (config source of the gap)")
      ->check(CLI::PositiveNumber);
  app.add_option("--skew", skew,
                 "Largest gap between <ts> dirs of one window (a duration as serve takes it: "
                 "30s, 2m; a bare number is seconds)")
      ->capture_default_str();
  app.add_option("--window", window_sel,
                 "all | latest (the newest window by capture time, one per run) | <window id>")
      ->capture_default_str();
  app.add_option("--source", source,
                 "auto | json | xplane (auto: xplane when the JSON is capped or absent)")
      ->check(CLI::IsMember({"auto", "json", "xplane"}))
      ->capture_default_str();
  app.add_option("--inflate", inflate,
                 "Gzip backend: zlib | isal (default: isal where built in, else zlib)")
      ->capture_default_str();
  app.add_option(
         "--threads", threads,
         "Thread budget: workers for files, then read-ahead and decode threads (1: one thread)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  std::string spill_dir = DefaultSpillDir();
  AddSpillDirOption(app, spill_dir);
  FileBudgetFlags file_budget;
  AddFileBudgetOptions(app, file_budget);
  app.add_option("--log", log_file,
                 "MaxText training log: steady step time (source log) and profiler_steps "
                 "(default: each run dir's or <ts> dir's log, found as serve finds it)");

  if (auto code = ParseArgs(app, "analyze", args)) return *code;
  const std::optional<int64_t> skew_seconds = SkewSeconds("analyze", skew);
  if (!skew_seconds) return kExitUsage;
  // A divisor of 0 makes every per-step figure meaningless: a usage error
  // (as serve has it), except where --format drill reproduces the script.
  if (profile_steps < 0 || (profile_steps == 0 && format != "drill")) {
    std::fprintf(stderr, "profwatch analyze: --profile-steps: must be at least 1, not %lld\n",
                 static_cast<long long>(profile_steps));
    return kExitUsage;
  }
  const bool profile_steps_given = app.count("--profile-steps") > 0;

  // The training log knows the steady step time and the profiler settings.
  WindowLogs logs("analyze", log_file,
                  profile_steps_given ? std::optional<int64_t>(profile_steps) : std::nullopt);
  if (Status s = logs.Preload(); !s) {
    std::fprintf(stderr, "profwatch analyze: %s\n", s.error().ToString().c_str());
    return kExitBadInput;
  }

  analysis::AnalyzeOptions options;
  options.threads = threads;
  options.spill_dir = spill_dir;
  options.limits = file_budget.ToLimits();
  options.aggregate.profile_steps = static_cast<int>(profile_steps);
  options.aggregate.top_kernels = family_top_n >= 0 ? static_cast<size_t>(family_top_n) : 5;
  options.aggregate.region_depth = region_depth;
  options.aggregate.peak_flops = peak_flops;
  options.aggregate.top_regions = static_cast<size_t>(top_regions);
  auto backend = read::ParseInflateBackend(inflate);
  if (!backend) {
    std::fprintf(stderr, "profwatch analyze: %s\n", backend.error().context.c_str());
    return kExitUsage;
  }
  options.inflate = *backend;
  options.source = *analysis::ParseSourcePreference(source);
  options.rules = rules;
  if (!families_file.empty()) {
    auto classifier = LoadClassifier(rules == "auto" ? "drill" : rules, families_file);
    if (!classifier) {
      std::fprintf(stderr, "profwatch analyze: %s\n", classifier.error().context.c_str());
      return kExitUsage;
    }
    options.classifier = *classifier;
  }

  auto windows = ResolveInputs(paths, *skew_seconds);
  if (!windows) {
    std::fprintf(stderr, "profwatch analyze: %s\n", windows.error().context.c_str());
    // --format drill keeps profile_drill.py's exit code for a missing file.
    if (windows.error().code == ErrorCode::kNotFound) {
      return format == "drill" ? kExitBadInput : kExitNothing;
    }
    return windows.error().code == ErrorCode::kPermission ? kExitBadInput : kExitUsage;
  }
  if (window_sel == "latest") {
    *windows = LatestPerRun(std::move(*windows));
  } else if (window_sel != "all") {
    std::erase_if(*windows, [&](const InputWindow& w) {
      return !w.label.ends_with("/" + window_sel) && w.label != window_sel;
    });
    if (windows->empty()) {
      std::fprintf(stderr, "profwatch analyze: no window '%s' found\n", window_sel.c_str());
      return kExitNothing;
    }
  }

  if (format == "drill") {
    if (windows->size() > 1) *windows = {NewestWindow(std::move(*windows))};
    const LogFigures log = windows->empty() ? LogFigures{} : logs.For(windows->back());
    const int64_t steps =
        profile_steps_given ? profile_steps : log.profile_steps.value_or(profile_steps);
    return RunDrill(*windows, steps, family_top_n, options);
  }

  int exit_code = kExitOk;
  for (const auto& w : *windows) {
    const LogFigures log = logs.For(w);
    if (!profile_steps_given && log.profile_steps) {
      options.aggregate.profile_steps = static_cast<int>(*log.profile_steps);
    } else {
      options.aggregate.profile_steps = static_cast<int>(profile_steps);
    }
    // Neither flag nor log: an nsys export's NVTX step ranges count the steps.
    options.aggregate.profile_steps_from_nvtx = !profile_steps_given && !log.profile_steps;
    auto analysis = analysis::AnalyzeFiles(w.files, options);
    if (!analysis) {
      std::fprintf(stderr, "profwatch analyze: %s: %s\n", w.label.c_str(),
                   analysis.error().ToString().c_str());
      exit_code = kExitBadInput;
      continue;
    }
    expose::ReportContext ctx;
    ctx.window = w.label;
    ctx.format = analysis->format;
    ctx.expected_gpus = expected_gpus;
    ctx.analysis_seconds = analysis->seconds;
    // Step-time sources in order: training log, in-trace markers, configuration.
    if (log.step_seconds) {
      ctx.step_seconds = log.step_seconds;
      ctx.step_source = "log";
    } else if (double ts = analysis->stats.TraceStepSeconds(); ts > 0) {
      ctx.step_seconds = ts;
      ctx.step_source = "trace";
    } else if (step_time > 0) {
      ctx.step_seconds = step_time;
      ctx.step_source = "config";
    }
    for (const auto& e : analysis->errors) {
      ctx.errors.push_back({e.path, std::string(ErrorCodeName(e.error.code)), e.error.ToString()});
      std::fprintf(stderr, "profwatch analyze: %s\n", e.error.ToString().c_str());
      exit_code = kExitBadInput;
    }
    if (format == "json") {
      std::cout << expose::WindowToJson(analysis->stats, ctx).dump() << "\n";
    } else {
      if (&w != &windows->front()) std::cout << "\n";
      std::cout << expose::RenderTable(analysis->stats, ctx);
    }
    if (analysis->stats.gpus() == 0 && exit_code == kExitOk) exit_code = kExitNoKernels;
    if (expected_gpus > 0 && analysis->stats.gpus() != expected_gpus) {
      std::fprintf(stderr, "profwatch analyze: WARNING: %s: %d GPUs detected, %d expected\n",
                   w.label.c_str(), analysis->stats.gpus(), expected_gpus);
    }
  }
  std::cout.flush();
  return exit_code;
}

}  // namespace profwatch::cli
