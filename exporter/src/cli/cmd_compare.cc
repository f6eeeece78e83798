// `profwatch compare PATH... [--label NAME]...`: variants side by side, the
// table users build by hand. Refuses (exit 4) when launcher mode or GPUs per
// window differ, or profile steps differ where a window's count is the
// default guess, since those numbers are not comparable, unless --force
// (profile steps that each window took from its own markers, log or flag
// keep per-step figures comparable: a note says so). Exit 2: usage (an ambiguous --log among them);
// 3: an input unreadable or corrupt; 5: a path that does not exist or holds nothing to analyse.
// Each column says which window and which step source it uses.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "aggregate/collectives.h"
#include "aggregate/diagnosis.h"
#include "aggregate/flops.h"
#include "aggregate/profile_steps.h"
#include "aggregate/window_stats.h"
#include "analysis/analyze.h"
#include "cli/analyze_inputs.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/log_figures.h"
#include "store/history.h"

namespace profwatch::cli {
namespace {

constexpr int kExitBadInput = 3;
constexpr int kExitIncomparable = 4;
constexpr int kExitNothing = 5;

struct SummaryFamily {
  std::string family;
  double seconds = 0;    // per GPU per step
  double exclusive = 0;  // running alone on the GPU, per GPU per step
};

// What compare shows of one window (seconds per GPU per step), built from
// analysis results: a path's analysis, or the run state of a --history line.
struct WindowSummary {
  std::vector<SummaryFamily> families;  // rule order
  double total_kernel = 0;
  double busy = 0;
  double idle = 0;
  double overlap = 0;
  double exposed_comm = 0;
  int gpus = 0;
  std::string launcher_mode;
  int64_t profile_steps = 0;
  std::string profile_steps_source;  // aggregate/profile_steps.h
  double trace_step_seconds = 0;     // 0: no in-trace step markers
  // Regions by kernel time (per GPU per step), "other" last; has_regions
  // false when the input carries no scopes.
  std::vector<std::pair<std::string, double>> regions;
  bool has_regions = false;
  // The diagnosis against the variant's step (aggregate/diagnosis.h):
  // blockers' time alone, and the idle time before each step's first kernel
  // (unset with one profiled step).
  double blocker_seconds = 0;
  std::optional<double> host_stall_seconds;
  // FLOPs counted from operator shapes (aggregate/flops.h), in TFLOP;
  // unset figures are n/a for the reason in flop_note / mfu_note.
  std::optional<double> tflop_per_step, achieved_tflops, model_tflops, mfu;
  bool flops_attempted = false;  // counted kinds were seen, usable or not
  std::string flop_note, mfu_note;
  // Collective kinds that ran (aggregate/collectives.h).
  std::vector<aggregate::CollectiveFigures> collectives;
};

WindowSummary Summarize(const aggregate::WindowStats& s) {
  WindowSummary w;
  for (const auto& f : s.families)
    w.families.push_back(
        {f.family, s.PerGpuStepSeconds(f.total_ps), s.PerGpuStepSeconds(f.exclusive_ps)});
  for (const auto& r : s.regions)
    w.regions.emplace_back(r.region, s.PerGpuStepSeconds(r.kernel_ps));
  if (s.regions_other_ps > 0)
    w.regions.emplace_back("other", s.PerGpuStepSeconds(s.regions_other_ps));
  w.has_regions = s.has_regions;
  const int64_t busy = s.SumBusyPs(), span = s.SumSpanPs();
  w.total_kernel = s.PerGpuStepSeconds(s.total_kernel_ps);
  w.busy = s.PerGpuStepSeconds(busy);
  w.idle = s.PerGpuStepSeconds(span - busy);
  w.overlap = s.PerGpuStepSeconds(s.total_kernel_ps - busy);
  w.exposed_comm = s.PerGpuStepSeconds(s.SumExposedCommPs());
  w.gpus = s.gpus();
  w.launcher_mode = std::string(aggregate::LauncherModeName(s.launcher_mode));
  w.profile_steps = s.profile_steps;
  w.profile_steps_source = std::string(aggregate::ProfileStepsSourceName(s.profile_steps_source));
  w.trace_step_seconds = s.TraceStepSeconds();
  w.collectives = aggregate::ComputeCollectiveFigures(s.collectives, s.divisor());
  return w;
}

// One column of the table.
struct Variant {
  std::string label;
  WindowSummary summary;
  std::optional<double> step_seconds;
  std::string step_source;  // log | trace | config (--step-time) | "" (none)
  std::string step_log;     // the training log of source "log"
  std::string window;       // the window analysed (job/run/<window id> or the path)
};

// Where the variant's step came from, for the text table.
std::string StepSourceText(const Variant& v) {
  if (v.step_source.empty()) return "none";
  if (v.step_source == "config") return "--step-time";
  if (v.step_source == "log" && !v.step_log.empty()) return "log " + v.step_log;
  return v.step_source;
}

// Call once the variant's step is chosen.
void AddDiagnosis(Variant& v, const aggregate::WindowStats& s) {
  const aggregate::Diagnosis d = aggregate::Diagnose(s, v.step_seconds, v.step_source);
  for (const aggregate::Blocker& b : d.blockers) {
    v.summary.blocker_seconds += b.exclusive_seconds_per_gpu_step;
  }
  if (d.host_stall) v.summary.host_stall_seconds = d.host_stall->seconds_per_step;
  const aggregate::FlopFigures ff = aggregate::ComputeFlopFigures(s, v.step_seconds);
  if (ff.total_per_gpu_step) v.summary.tflop_per_step = *ff.total_per_gpu_step / 1e12;
  if (ff.achieved_per_second) v.summary.achieved_tflops = *ff.achieved_per_second / 1e12;
  if (ff.model_per_second) v.summary.model_tflops = *ff.model_per_second / 1e12;
  v.summary.mfu = ff.mfu;
  v.summary.flops_attempted = ff.attempted || ff.total_per_gpu_step.has_value();
  v.summary.flop_note = ff.note;
  v.summary.mfu_note = ff.mfu_note;
}

struct Row {
  std::string name;
  std::vector<std::optional<double>> values;  // per variant; nullopt = n/a
  std::vector<std::string> text;              // non-numeric rows (launcher mode)
  bool numeric = true;
};

std::string Num(std::optional<double> v, int precision = 4) {
  if (!v) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, *v);
  return buf;
}

std::string Delta(std::optional<double> v, std::optional<double> base, int precision = 4) {
  if (!v || !base) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.*f", precision, *v - *base);
  return buf;
}

// Appends one numeric row: `fn(variant)` per variant (nullopt = n/a).
template <class Fn>
void AddRow(std::vector<Row>& rows, const std::vector<Variant>& vs, std::string name, Fn fn) {
  Row r{std::move(name), {}, {}, true};
  for (const auto& v : vs) r.values.push_back(fn(v));
  rows.push_back(std::move(r));
}

// A family's figure in a variant (0 where the variant has no such family).
std::optional<double> FamilyFigure(const Variant& v, const std::string& family,
                                   double SummaryFamily::*figure) {
  for (const auto& fam : v.summary.families) {
    if (fam.family == family) return fam.*figure;
  }
  return 0.0;
}

// Families in the baseline's order (same rule set => same order), then the
// step, its decomposition and the diagnosis totals.
void AddTimeRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  for (const auto& base : vs[0].summary.families) {
    const std::string& family = base.family;
    AddRow(rows, vs, family,
           [&](const Variant& v) { return FamilyFigure(v, family, &SummaryFamily::seconds); });
  }
  using Opt = std::optional<double>;
  AddRow(rows, vs, "total kernel", [](const Variant& v) -> Opt { return v.summary.total_kernel; });
  AddRow(rows, vs, "step", [](const Variant& v) { return v.step_seconds; });
  AddRow(rows, vs, "step - total kernel", [](const Variant& v) -> Opt {
    if (!v.step_seconds) return std::nullopt;
    return *v.step_seconds - v.summary.total_kernel;
  });
  AddRow(rows, vs, "busy", [](const Variant& v) -> Opt { return v.summary.busy; });
  AddRow(rows, vs, "idle", [](const Variant& v) -> Opt { return v.summary.idle; });
  AddRow(rows, vs, "overlap", [](const Variant& v) -> Opt { return v.summary.overlap; });
  AddRow(rows, vs, "exposed comm", [](const Variant& v) -> Opt { return v.summary.exposed_comm; });
  AddRow(rows, vs, "blockers alone",
         [](const Variant& v) -> Opt { return v.summary.blocker_seconds; });
  AddRow(rows, vs, "host stall per step",
         [](const Variant& v) -> Opt { return v.summary.host_stall_seconds; });
}

// Exclusive time (the family ran alone on the GPU), for families where some
// variant has any.
void AddExclusiveRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  for (const auto& base : vs[0].summary.families) {
    const std::string& family = base.family;
    auto exclusive = [&](const Variant& v) {
      return FamilyFigure(v, family, &SummaryFamily::exclusive);
    };
    bool any = false;
    for (const auto& v : vs) any = any || exclusive(v).value_or(0) > 0;
    if (any) AddRow(rows, vs, "exclusive " + family, exclusive);
  }
}

// Regions: every region of any variant, in first-seen order (the baseline's
// first); n/a for a variant whose input has no scopes.
void AddRegionRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  std::vector<std::string> regions;
  for (const auto& v : vs) {
    for (const auto& [region, seconds] : v.summary.regions) {
      if (std::find(regions.begin(), regions.end(), region) == regions.end()) {
        regions.push_back(region);
      }
    }
  }
  for (const std::string& region : regions) {
    AddRow(rows, vs, "region " + region, [&](const Variant& v) -> std::optional<double> {
      if (!v.summary.has_regions) return std::nullopt;
      for (const auto& [name, seconds] : v.summary.regions) {
        if (name == region) return seconds;
      }
      return 0.0;
    });
  }
}

// FLOPs, when some variant has operators of a counted kind (n/a where a
// figure could not be computed; FlopNotes() says why).
void AddFlopRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  const bool flops =
      std::any_of(vs.begin(), vs.end(), [](const Variant& v) { return v.summary.flops_attempted; });
  if (!flops) return;
  AddRow(rows, vs, "TFLOP per GPU step", [](const Variant& v) { return v.summary.tflop_per_step; });
  AddRow(rows, vs, "achieved TFLOP/s", [](const Variant& v) { return v.summary.achieved_tflops; });
  AddRow(rows, vs, "model TFLOP/s", [](const Variant& v) { return v.summary.model_tflops; });
  AddRow(rows, vs, "MFU", [](const Variant& v) { return v.summary.mfu; });
}

// Collectives: every kind some variant ran, in kind order. Exposed time is 0
// for a variant that ran no such collective; bus bandwidth is n/a there and
// where no call carried its size (GB/s).
void AddCollectiveRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  for (size_t k = 0; k < aggregate::kCollectiveKinds; ++k) {
    const auto kind = static_cast<aggregate::CollectiveKind>(k);
    auto of = [kind](const Variant& v) -> const aggregate::CollectiveFigures* {
      for (const auto& c : v.summary.collectives) {
        if (c.kind == kind) return &c;
      }
      return nullptr;
    };
    if (std::none_of(vs.begin(), vs.end(), [&](const Variant& v) { return of(v) != nullptr; })) {
      continue;
    }
    const std::string name(aggregate::CollectiveKindName(kind));
    AddRow(rows, vs, "exposed " + name, [&](const Variant& v) -> std::optional<double> {
      const auto* c = of(v);
      return c ? c->exposed_seconds_per_gpu_step : 0.0;
    });
    AddRow(rows, vs, "busbw GB/s " + name, [&](const Variant& v) -> std::optional<double> {
      const auto* c = of(v);
      if (c == nullptr || !c->bus_bandwidth) return std::nullopt;
      return *c->bus_bandwidth / 1e9;
    });
  }
}

// What makes variants comparable or not, and where each came from.
void AddShapeRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  AddRow(rows, vs, "GPUs",
         [](const Variant& v) -> std::optional<double> { return v.summary.gpus; });
  AddRow(rows, vs, "profile steps", [](const Variant& v) -> std::optional<double> {
    return static_cast<double>(v.summary.profile_steps);
  });
  Row steps_source{"profile steps source", {}, {}, false};
  for (const auto& v : vs) steps_source.text.push_back(v.summary.profile_steps_source);
  rows.push_back(std::move(steps_source));
  Row mode{"launcher mode", {}, {}, false};
  for (const auto& v : vs) mode.text.emplace_back(v.summary.launcher_mode);
  rows.push_back(std::move(mode));
  Row window{"window", {}, {}, false};
  for (const auto& v : vs) window.text.push_back(v.window);
  rows.push_back(std::move(window));
  Row source{"step source", {}, {}, false};
  for (const auto& v : vs) source.text.push_back(StepSourceText(v));
  rows.push_back(std::move(source));
}

std::vector<Row> BuildRows(const std::vector<Variant>& vs) {
  std::vector<Row> rows;
  AddTimeRows(rows, vs);
  AddExclusiveRows(rows, vs);
  AddRegionRows(rows, vs);
  AddFlopRows(rows, vs);
  AddCollectiveRows(rows, vs);
  AddShapeRows(rows, vs);
  return rows;
}

// Both windows counted their own steps (markers, log or flag, not the
// default guess): their per-step figures are each per their own steps.
bool OwnStepCounts(const WindowSummary& a, const WindowSummary& b) {
  return a.profile_steps_source != "default" && b.profile_steps_source != "default";
}

// Profile steps that differ but were each counted by their own window: a
// note, not a reason to refuse.
std::vector<std::string> ProfileStepsNotes(const std::vector<Variant>& variants) {
  std::vector<std::string> notes;
  const WindowSummary& b = variants[0].summary;
  for (size_t i = 1; i < variants.size(); ++i) {
    const WindowSummary& s = variants[i].summary;
    if (s.profile_steps == b.profile_steps || !OwnStepCounts(b, s)) continue;
    notes.push_back("profile steps differ: " + std::to_string(b.profile_steps) + " (" +
                    b.profile_steps_source + ") vs " + std::to_string(s.profile_steps) + " (" +
                    s.profile_steps_source + ", " + variants[i].label +
                    "); each window's per-step figures are over its own steps, so they compare");
  }
  return notes;
}

// Why a variant's FLOP figures are n/a, one line per variant and reason
// (empty when FLOP rows are not shown or every figure is there).
std::vector<std::string> FlopNotes(const std::vector<Variant>& vs, const std::vector<Row>& rows) {
  std::vector<std::string> notes;
  const bool shown = std::any_of(rows.begin(), rows.end(),
                                 [](const Row& r) { return r.name == "TFLOP per GPU step"; });
  if (!shown) return notes;
  for (const Variant& v : vs) {
    if (!v.summary.tflop_per_step) {
      notes.push_back("FLOPs of " + v.label + " n/a: " + v.summary.flop_note);
    } else if (!v.summary.mfu) {
      notes.push_back("MFU of " + v.label + " n/a: " + v.summary.mfu_note);
    }
  }
  return notes;
}

bool IsCountRow(const std::string& name) { return name == "GPUs" || name == "profile steps"; }

std::string RenderText(const std::vector<Variant>& vs, const std::vector<Row>& rows,
                       bool markdown) {
  std::vector<std::string> header{"seconds per GPU per step"};
  for (const auto& v : vs) header.push_back(v.label);
  for (size_t i = 1; i < vs.size(); ++i) header.push_back("delta " + vs[i].label);
  std::vector<std::vector<std::string>> table{header};
  for (const auto& r : rows) {
    std::vector<std::string> line{r.name};
    int precision = IsCountRow(r.name) ? 0 : 4;
    for (size_t i = 0; i < vs.size(); ++i) {
      line.push_back(r.numeric ? Num(r.values[i], precision) : r.text[i]);
    }
    for (size_t i = 1; i < vs.size(); ++i) {
      line.push_back(r.numeric ? Delta(r.values[i], r.values[0], precision)
                               : (r.text[i] == r.text[0] ? "=" : "differs"));
    }
    table.push_back(std::move(line));
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& line : table) {
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  }
  std::string out;
  for (size_t l = 0; l < table.size(); ++l) {
    const auto& line = table[l];
    if (markdown) out += "|";
    for (size_t c = 0; c < line.size(); ++c) {
      std::string cell = line[c];
      std::string pad(width[c] - cell.size(), ' ');
      if (markdown) {
        out += " " + (c == 0 ? cell + pad : pad + cell) + " |";
      } else {
        out += (c == 0 ? cell + pad : "  " + pad + cell);
      }
    }
    out += "\n";
    if (markdown && l == 0) {
      out += "|";
      for (size_t c = 0; c < line.size(); ++c) {
        out += (c == 0 ? " :" : " ") + std::string(width[c] - 1, '-') + (c == 0 ? "-" : ":") + " |";
      }
      out += "\n";
    }
  }
  return out;
}

nlohmann::ordered_json RenderJson(const std::vector<Variant>& vs, const std::vector<Row>& rows,
                                  const std::vector<std::string>& mismatches) {
  nlohmann::ordered_json j;
  j["schema"] = "profwatch.compare.v1";
  j["baseline"] = vs[0].label;
  j["mismatches"] = mismatches;
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  for (size_t i = 0; i < vs.size(); ++i) {
    nlohmann::ordered_json v;
    v["label"] = vs[i].label;
    for (const auto& r : rows) {
      if (r.name == "step source") continue;  // step_source and step_log below
      if (!r.numeric) {
        v[r.name] = r.text[i];
      } else if (r.values[i]) {
        v[r.name] = *r.values[i];
      } else {
        v[r.name] = nullptr;
      }
    }
    v["step_source"] = vs[i].step_source.empty() ? nlohmann::ordered_json(nullptr)
                                                 : nlohmann::ordered_json(vs[i].step_source);
    v["step_log"] = vs[i].step_log.empty() ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json(vs[i].step_log);
    variants.push_back(std::move(v));
  }
  j["variants"] = std::move(variants);
  std::vector<std::string> notes = ProfileStepsNotes(vs);
  for (std::string& n : FlopNotes(vs, rows)) notes.push_back(std::move(n));
  j["notes"] = std::move(notes);
  return j;
}

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
      ->check(CLI::PositiveNumber);
  app.add_option("--log", f.log_files,
                 "PATH=FILE: the training log of variant PATH (repeatable), or one FILE per "
                 "variant in order; default: each run's log, found as serve finds it")
      ->allow_extra_args(false);
  app.add_option("--format", f.format, "text | markdown | json")
      ->check(CLI::IsMember({"text", "markdown", "json"}))
      ->capture_default_str();
  app.add_flag("--force", f.force, "Print the table even when the variants are not comparable");
  app.add_option("--profile-steps", f.profile_steps, "Profiled steps per window (>= 1)")
      ->capture_default_str();
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
bool ConfiguredStep(Variant& v, const std::vector<double>& step_times, size_t i) {
  if (step_times.empty()) return false;
  v.step_seconds = step_times.size() == 1 ? step_times[0] : step_times[i];
  v.step_source = "config";
  return true;
}

// A variant read from a --history entry: its step as the daemon chose it,
// unless --step-time.
Variant HistoryVariant(const CompareFlags& f, size_t i, const snapshot::RunState& h) {
  Variant v;
  v.label = f.labels.empty() ? f.paths[i] : f.labels[i];
  v.window = h.key.training_job + "/" + h.key.run + "/" + h.window_id;
  v.summary = Summarize(*h.stats);
  if (!ConfiguredStep(v, f.step_times, i) && h.step_seconds) {
    v.step_seconds = h.step_seconds;
    v.step_source = h.step_source;
  }
  AddDiagnosis(v, *h.stats);
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
  v.summary = Summarize(a->stats);
  if (ConfiguredStep(v, f.step_times, i)) {
    // --step-time wins
  } else if (log.step_seconds) {
    v.step_seconds = log.step_seconds;
    v.step_source = "log";
    v.step_log = log.path;
  } else if (double ts = v.summary.trace_step_seconds; ts > 0) {
    v.step_seconds = ts;
    v.step_source = "trace";
  }
  AddDiagnosis(v, a->stats);
  return v;
}

// Why the variants' per-GPU-per-step numbers are not comparable with the
// baseline's (empty when they are).
std::vector<std::string> Mismatches(const std::vector<Variant>& variants) {
  std::vector<std::string> mismatches;
  const WindowSummary& b = variants[0].summary;
  for (size_t i = 1; i < variants.size(); ++i) {
    const WindowSummary& s = variants[i].summary;
    const std::string& l = variants[i].label;
    if (s.launcher_mode != b.launcher_mode) {
      mismatches.push_back("launcher mode differs: " + variants[0].label + " is " +
                           b.launcher_mode + ", " + l + " is " + s.launcher_mode);
    }
    if (s.profile_steps != b.profile_steps && !OwnStepCounts(b, s)) {
      mismatches.push_back("profile steps differ: " + std::to_string(b.profile_steps) + " (" +
                           b.profile_steps_source + ") vs " + std::to_string(s.profile_steps) +
                           " (" + s.profile_steps_source + ", " + l +
                           "); a default count may be wrong: give --profile-steps or --log");
    }
    if (s.gpus != b.gpus) {
      mismatches.push_back("GPUs per window differ: " + std::to_string(b.gpus) + " vs " +
                           std::to_string(s.gpus) + " (" + l + ")");
    }
  }
  return mismatches;
}

// The table (text, markdown or JSON), or exit 4 when the variants are not
// comparable and --force was not given.
int Report(const CompareFlags& f, const std::vector<Variant>& variants) {
  const std::vector<std::string> mismatches = Mismatches(variants);
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
  auto rows = BuildRows(variants);
  if (f.format == "json") {
    std::cout << RenderJson(variants, rows, mismatches).dump(2) << "\n";
  } else {
    std::cout << RenderText(variants, rows, f.format == "markdown");
    std::vector<std::string> notes = ProfileStepsNotes(variants);
    for (std::string& n : FlopNotes(variants, rows)) notes.push_back(std::move(n));
    if (!notes.empty()) std::cout << "\n";
    for (const std::string& note : notes) std::cout << note << "\n";
  }
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
