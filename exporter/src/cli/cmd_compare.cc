// `profwatch compare PATH... [--label NAME]...`: variants side by side, the
// table users build by hand. Refuses (exit 4) when launcher mode or GPUs per
// window differ, or profile steps differ where a window's count is the
// default guess, since those numbers are not comparable, unless --force
// (profile steps that each window took from its own markers, log or flag
// keep per-step figures comparable: a note says so). Exit 2: usage (an ambiguous --log among them);
// 3: an input unreadable or corrupt; 5: a path that does not exist or holds nothing to analyse.
// Each column says which window and which step source it uses. This file
// parses the flags, reads the variants and decides their step times; the
// table is rendered by expose/compare_report.h.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "aggregate/window_stats.h"
#include "analysis/analyze.h"
#include "cli/analyze_inputs.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/log_figures.h"
#include "expose/compare_report.h"
#include "figures/step_basis.h"
#include "figures/window_figures.h"
#include "store/history.h"

namespace profwatch::cli {
namespace {

// One column of the table (expose/compare_report.h).
using Variant = expose::CompareVariant;

// --log values bound to variants: "PATH=FILE" names its variant (PATH as
// given on the command line); plain FILEs are one per variant, in order. One
// plain FILE for several variants is ambiguous (whose log is it?): refused.
Result<std::vector<std::string>> BindLogs(const std::vector<std::string>& paths,
                                          const std::vector<std::string>& logs) {
  std::vector<std::string> out(paths.size());
  std::vector<std::string> plain;
  for (const std::string& l : logs) {
    bool bound = false;
    for (size_t eq = l.find('='); eq != std::string::npos && !bound; eq = l.find('=', eq + 1)) {
      const std::string path = l.substr(0, eq);
      for (size_t i = 0; i < paths.size(); ++i) {
        if (paths[i] != path) continue;
        if (!out[i].empty()) return MakeError(ErrorCode::kConfig, "two --log for " + path);
        out[i] = l.substr(eq + 1);
        bound = true;
      }
    }
    if (!bound) plain.push_back(l);
  }
  if (plain.empty()) return out;
  if (plain.size() != logs.size() || plain.size() != paths.size()) {
    return MakeError(ErrorCode::kConfig,
                     "--log " + plain.front() +
                         " names no variant: " + std::to_string(paths.size()) +
                         " variants; use --log PATH=FILE (PATH as given) for each variant's log");
  }
  return plain;
}

// Every flag of `compare`, parsed.
struct CompareFlags {
  std::vector<std::string> paths, labels, log_files;
  std::vector<double> step_times;
  std::string format = "text";
  bool force = false;
  int64_t profile_steps = 3;
  std::string history;
  AnalysisFlags common;  // shared with analyze
};

void AddCompareOptions(CLI::App& app, CompareFlags& f) {
  app.add_option(
         "paths", f.paths,
         "One window per variant: files, a <ts> dir, or a run or job dir (its newest window by "
         "capture time)")
      ->required();
  // Repeatable options take one value per occurrence (allow_extra_args(false)):
  // otherwise `--label a --label b DIR1 DIR2` would read DIR1 and DIR2 as labels.
  app.add_option("--label", f.labels, "Column name per variant, in order (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--step-time", f.step_times,
                 "Step seconds per variant, in order (repeatable; one value applies to all)")
      ->allow_extra_args(false)
      ->check(NumberAbove(0));
  app.add_option("--log", f.log_files,
                 "PATH=FILE: the training log of variant PATH (repeatable), or one FILE per "
                 "variant in order; default: each run's log, found as serve finds it")
      ->allow_extra_args(false);
  app.add_option("--format", f.format, "text | markdown | json")
      ->check(CLI::IsMember({"text", "markdown", "json"}))
      ->capture_default_str();
  app.add_flag("--force", f.force, "Print the table even when the variants are not comparable");
  app.add_option("--profile-steps", f.profile_steps,
                 "Profiled steps per window (>= 1); given, it wins over the window's own count (" +
                     ProfileStepsDefaultHelp() + ")")
      ->check(WholeAtLeast(1, INT64_MAX));
  AddAnalysisOptions(app, f.common);
  app.add_option("--history", f.history,
                 "profwatch serve --history file: a variant JOB/RUN or JOB/RUN@WINDOW that is "
                 "not an existing path is its latest matching window there");
}

// What the usage checks leave: the skew in seconds and each variant's
// explicit training log ("" = its run's own).
struct CompareUsage {
  int64_t skew_seconds = 0;
  std::vector<std::string> explicit_logs;
};

// The usage checks, in order; exit 2 (printed) when one fails.
tl::expected<CompareUsage, int> CheckUsage(const CompareFlags& f) {
  if (f.paths.size() < 2) {
    std::fprintf(stderr, "profwatch compare: need at least two variants\n");
    return tl::unexpected(2);
  }
  if (!f.labels.empty() && f.labels.size() != f.paths.size()) {
    std::fprintf(stderr, "profwatch compare: %zu --label for %zu variants\n", f.labels.size(),
                 f.paths.size());
    return tl::unexpected(2);
  }
  const std::optional<int64_t> skew_seconds = SkewSeconds("compare", f.common.skew);
  if (!skew_seconds) return tl::unexpected(2);
  if (f.profile_steps < 1) {
    std::fprintf(stderr, "profwatch compare: --profile-steps: must be at least 1, not %lld\n",
                 static_cast<long long>(f.profile_steps));
    return tl::unexpected(2);
  }
  auto explicit_logs = BindLogs(f.paths, f.log_files);
  if (!explicit_logs) {
    std::fprintf(stderr, "profwatch compare: %s\n", explicit_logs.error().context.c_str());
    return tl::unexpected(2);
  }
  if (f.step_times.size() > 1 && f.step_times.size() != f.paths.size()) {
    std::fprintf(stderr, "profwatch compare: %zu --step-time for %zu variants\n",
                 f.step_times.size(), f.paths.size());
    return tl::unexpected(2);
  }
  return CompareUsage{*skew_seconds, std::move(*explicit_logs)};
}

// Where each variant's window comes from: its path's newest window, or (a
// path that does not exist, with --history) a history entry.
struct VariantInputs {
  std::vector<std::vector<std::string>> files;  // empty for history variants
  std::vector<InputWindow> windows;
  std::map<size_t, snapshot::RunState> from_history;  // variant index -> entry
};

// An exit code (printed) when a path is unusable or holds no window.
tl::expected<VariantInputs, int> ResolveVariants(const CompareFlags& f, int64_t skew_seconds) {
  VariantInputs in;
  for (const auto& p : f.paths) {
    std::error_code exists_ec;
    if (!f.history.empty() && !std::filesystem::exists(p, exists_ec)) {
      if (auto query = store::ParseHistoryQuery(p)) {
        auto entry = store::FindInHistory(f.history, *query);
        if (!entry) {
          std::fprintf(stderr, "profwatch compare: %s: %s\n", p.c_str(),
                       entry.error().context.c_str());
          return tl::unexpected(kExitBadInput);
        }
        in.from_history[in.files.size()] = std::move(*entry);
        in.files.emplace_back();
        in.windows.emplace_back();
        continue;
      }
    }
    auto windows = ResolveInputs({p}, skew_seconds);
    if (!windows) {
      // The message names the path.
      std::fprintf(stderr, "profwatch compare: %s\n", windows.error().context.c_str());
      return tl::unexpected(windows.error().code == ErrorCode::kNotFound     ? kExitNothing
                            : windows.error().code == ErrorCode::kPermission ? kExitBadInput
                                                                             : 2);
    }
    if (windows->empty()) {
      std::fprintf(stderr, "profwatch compare: %s: no window found\n", p.c_str());
      return tl::unexpected(kExitNothing);
    }
    InputWindow newest = NewestWindow(std::move(*windows));
    in.files.push_back(newest.files);
    in.windows.push_back(std::move(newest));
  }
  return in;
}

// One classifier for all variants so family rows line up: --rules, where
// auto is what the first analysed variant's names decide (history entries
// carry their own). An exit code (printed) on failure.
std::optional<int> ChooseClassifier(const CompareFlags& f, const VariantInputs& in,
                                    analysis::AnalyzeOptions& options) {
  std::string base = f.common.rules;
  size_t first_path = 0;
  while (first_path < f.paths.size() && in.from_history.count(first_path)) ++first_path;
  if (first_path == f.paths.size()) base = "drill";  // nothing to analyse
  if (base == "auto") {
    auto first = analysis::AnalyzeFiles(in.files[first_path], options);
    if (!first) {
      std::fprintf(stderr, "profwatch compare: %s: %s\n", f.paths[first_path].c_str(),
                   first.error().ToString().c_str());
      return kExitBadInput;
    }
    base = first->stats.rule_set;
  }
  auto classifier = LoadClassifier(base, f.common.families_file);
  if (!classifier) {
    std::fprintf(stderr, "profwatch compare: %s\n", classifier.error().context.c_str());
    return 2;
  }
  options.classifier = *classifier;
  return std::nullopt;
}

// Every explicit --log must be readable before any variant is analysed.
std::optional<int> PreloadLogs(const std::vector<std::string>& explicit_logs) {
  for (const std::string& l : explicit_logs) {
    if (l.empty()) continue;
    WindowLogs check("compare", l, std::nullopt);
    if (Status st = check.Preload(); !st) {
      std::fprintf(stderr, "profwatch compare: %s\n", st.error().ToString().c_str());
      return st.error().code == ErrorCode::kNotFound ? kExitNothing : kExitBadInput;
    }
  }
  return std::nullopt;
}

// --step-time of variant i, when given (one value applies to all).
std::optional<double> GivenStep(const std::vector<double>& step_times, size_t i) {
  if (step_times.empty()) return std::nullopt;
  return step_times.size() == 1 ? step_times[0] : step_times[i];
}

// A variant read from a --history entry: its step as the daemon chose it,
// unless --step-time.
Variant HistoryVariant(const CompareFlags& f, size_t i, const snapshot::RunState& h) {
  Variant v;
  v.label = f.labels.empty() ? f.paths[i] : f.labels[i];
  v.window = h.key.training_job + "/" + h.key.run + "/" + h.window_id;
  figures::StepSources sources;
  sources.given = GivenStep(f.step_times, i);
  sources.recorded = h.step();
  v.figures = std::make_shared<const figures::WindowFigures>(
      figures::FiguresOf(h.stats, figures::ChooseStepTime(sources, nullptr)));
  return v;
}

// A variant analysed from its files: step from --step-time, else its
// training log, else the trace's step markers. Exit 3 (printed) when the
// analysis fails.
tl::expected<Variant, int> AnalyzedVariant(const CompareFlags& f, size_t i, const VariantInputs& in,
                                           const LogFigures& log,
                                           const analysis::AnalyzeOptions& options) {
  auto a = analysis::AnalyzeFiles(in.files[i], options);
  if (!a) {
    std::fprintf(stderr, "profwatch compare: %s: %s\n", f.paths[i].c_str(),
                 a.error().ToString().c_str());
    return tl::unexpected(kExitBadInput);
  }
  Variant v;
  v.label = f.labels.empty() ? f.paths[i] : f.labels[i];
  v.window = in.windows[i].label;
  const auto stats = std::make_shared<const aggregate::WindowStats>(std::move(a->stats));
  figures::StepSources sources;
  sources.given = GivenStep(f.step_times, i);
  sources.log_window = log.step_seconds;
  const figures::StepTime step = figures::ChooseStepTime(sources, stats.get());
  if (step.source == "log") v.step_log = log.path;
  v.figures = std::make_shared<const figures::WindowFigures>(figures::FiguresOf(stats, step));
  return v;
}

// The table (text, markdown or JSON), or exit 4 when the variants are not
// comparable and --force was not given.
int Report(const CompareFlags& f, const std::vector<Variant>& variants) {
  const std::vector<std::string> mismatches = expose::CompareMismatches(variants);
  for (const auto& m : mismatches) {
    std::fprintf(stderr, "profwatch compare: %s: %s\n", f.force ? "WARNING" : "refusing",
                 m.c_str());
  }
  if (!mismatches.empty() && !f.force) {
    std::fprintf(stderr,
                 "profwatch compare: these variants are not comparable (per-GPU-per-step numbers "
                 "would mislead); use --force to print the table anyway\n");
    return kExitIncomparable;
  }
  std::cout << expose::RenderCompare(variants, mismatches,
                                     f.format == "json"       ? expose::CompareFormat::kJson
                                     : f.format == "markdown" ? expose::CompareFormat::kMarkdown
                                                              : expose::CompareFormat::kText);
  return 0;
}

}  // namespace

int RunCompare(const std::vector<std::string>& args) {
  CLI::App app{"Compare variants (windows or runs) side by side.", "profwatch compare"};
  CompareFlags f;
  AddCompareOptions(app, f);
  if (auto code = ParseArgs(app, "compare", args)) return *code;
  auto usage = CheckUsage(f);
  if (!usage) return usage.error();

  const bool profile_steps_given = app.count("--profile-steps") > 0;
  analysis::AnalyzeOptions options;
  f.common.ApplyTo(options);
  options.aggregate.profile_steps_flag =
      profile_steps_given ? std::optional<int64_t>(f.profile_steps) : std::nullopt;
  auto in = ResolveVariants(f, usage->skew_seconds);
  if (!in) return in.error();
  if (auto code = ChooseClassifier(f, *in, options)) return *code;
  if (auto code = PreloadLogs(usage->explicit_logs)) return *code;
  // Each variant's training log: its --log, else the log of its run as
  // analyze finds it.
  WindowLogs logs("compare", "",
                  profile_steps_given ? std::optional<int64_t>(f.profile_steps) : std::nullopt);
  std::vector<Variant> variants;
  for (size_t i = 0; i < f.paths.size(); ++i) {
    if (auto h = in->from_history.find(i); h != in->from_history.end()) {
      variants.push_back(HistoryVariant(f, i, h->second));
      continue;
    }
    const LogFigures log = logs.For(in->windows[i], usage->explicit_logs[i]);
    options.aggregate.profile_steps_log = log.profile_steps;  // profile_steps.h decides
    auto v = AnalyzedVariant(f, i, *in, log, options);
    if (!v) return v.error();
    variants.push_back(std::move(*v));
  }
  return Report(f, variants);
}

}  // namespace profwatch::cli