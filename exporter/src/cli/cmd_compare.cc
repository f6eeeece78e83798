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

#include "aggregate/profile_steps.h"
#include "aggregate/window_stats.h"
#include "analysis/analyze.h"
#include "cli/analyze_inputs.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/log_figures.h"
#include "expose/report.h"
#include "figures/step_basis.h"
#include "figures/window_figures.h"
#include "store/history.h"

namespace profwatch::cli {
namespace {

// One column of the table: a window's figures (figures/window_figures.h)
// for the step the variant uses, from its path's analysis or a --history
// entry's run state.
struct Variant {
  std::string label;
  std::shared_ptr<const figures::WindowFigures> figures;
  std::string step_log;  // the training log of step source "log"
  std::string window;    // the window analysed (job/run/<window id> or the path)
  const aggregate::WindowStats& stats() const { return *figures->stats; }
  const figures::StepTime& step() const { return figures->step; }
};

// Where the variant's step came from, for the text table.
std::string StepSourceText(const Variant& v) {
  const std::string& source = v.step().source;
  if (source.empty()) return "none";
  if (source == "config") return "--step-time";
  if (source == "log" && !v.step_log.empty()) return "log " + v.step_log;
  return source;
}

struct Row {
  std::string name;
  std::vector<std::optional<double>> values;  // per variant; nullopt = n/a
  std::vector<std::string> text;              // non-numeric rows (launcher mode)
  bool numeric = true;
  // Shown in the text and markdown tables. A family no variant ran is left
  // out of them; the JSON keeps its key, null in every variant.
  bool in_table = true;
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
  Row r{std::move(name), {}, {}, true, true};
  for (const auto& v : vs) r.values.push_back(fn(v));
  rows.push_back(std::move(r));
}

// A family's figure in a variant; unset (n/a, null) where the variant has no
// such family or the family launched no kernel there: not measured, never 0.
std::optional<double> FamilyFigure(const Variant& v, const std::string& family,
                                   double figures::FamilyFigures::*figure) {
  for (const auto& fam : v.figures->families) {
    if (fam.family->family == family && fam.ran) return fam.*figure;
  }
  return std::nullopt;
}

// Whether any variant has a value in the row.
bool AnyValue(const Row& r) {
  return std::any_of(r.values.begin(), r.values.end(),
                     [](const std::optional<double>& v) { return v.has_value(); });
}

// Families in the baseline's order (same rule set => same order), then the
// step, its decomposition and the diagnosis totals.
void AddTimeRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  for (const auto& base : vs[0].figures->families) {
    const std::string& family = base.family->family;
    AddRow(rows, vs, family, [&](const Variant& v) {
      return FamilyFigure(v, family, &figures::FamilyFigures::seconds_per_gpu_step);
    });
    rows.back().in_table = AnyValue(rows.back());
  }
  using Opt = std::optional<double>;
  AddRow(rows, vs, "total kernel",
         [](const Variant& v) -> Opt { return v.figures->time.total_kernel_seconds; });
  AddRow(rows, vs, "step", [](const Variant& v) { return v.step().seconds; });
  AddRow(rows, vs, "step - total kernel", [](const Variant& v) -> Opt {
    if (!v.figures->step_gap) return std::nullopt;
    return v.figures->step_gap->minus_kernel_seconds;
  });
  AddRow(rows, vs, "busy", [](const Variant& v) -> Opt { return v.figures->time.busy_seconds; });
  AddRow(rows, vs, "idle", [](const Variant& v) -> Opt { return v.figures->time.idle_seconds; });
  AddRow(rows, vs, "overlap",
         [](const Variant& v) -> Opt { return v.figures->time.overlap_seconds; });
  AddRow(rows, vs, "exposed comm",
         [](const Variant& v) -> Opt { return v.figures->time.exposed_comm_seconds; });
  AddRow(rows, vs, "blockers alone", [](const Variant& v) -> Opt {
    return v.figures->diagnosis.blockers_seconds_per_gpu_step;
  });
  AddRow(rows, vs, "host stall per step", [](const Variant& v) -> Opt {
    const auto& h = v.figures->diagnosis.host_stall;
    return h ? Opt(h->seconds_per_step) : std::nullopt;
  });
}

// Exclusive time (the family ran alone on the GPU), for families where some
// variant has any.
void AddExclusiveRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  for (const auto& base : vs[0].figures->families) {
    const std::string& family = base.family->family;
    auto exclusive = [&](const Variant& v) {
      return FamilyFigure(v, family, &figures::FamilyFigures::exclusive_seconds_per_gpu_step);
    };
    bool any = false;
    for (const auto& v : vs) any = any || exclusive(v).value_or(0) > 0;
    if (any) AddRow(rows, vs, "exclusive " + family, exclusive);
  }
}

// Regions: every region of any variant, in first-seen order (the baseline's
// first); n/a for a variant whose input has no scopes or does not list the
// region (not measured there, never 0).
void AddRegionRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  // A variant's regions as (name, seconds per GPU per step), "other" last.
  auto regions_of = [](const Variant& v) {
    const figures::RegionsFigures& r = v.figures->regions;
    std::vector<std::pair<std::string, double>> out;
    for (const auto& region : r.listed) {
      out.emplace_back(*region.region, region.kernel_seconds_per_gpu_step);
    }
    if (r.other_seconds_per_gpu_step) out.emplace_back("other", *r.other_seconds_per_gpu_step);
    return out;
  };
  std::vector<std::string> regions;
  for (const auto& v : vs) {
    for (const auto& [region, seconds] : regions_of(v)) {
      if (std::find(regions.begin(), regions.end(), region) == regions.end()) {
        regions.push_back(region);
      }
    }
  }
  for (const std::string& region : regions) {
    AddRow(rows, vs, "region " + region, [&](const Variant& v) -> std::optional<double> {
      if (!v.figures->regions.has_regions) return std::nullopt;
      for (const auto& [name, seconds] : regions_of(v)) {
        if (name == region) return seconds;
      }
      return std::nullopt;
    });
  }
}

// FLOPs, when some variant has operators of a counted kind (n/a where a
// figure could not be computed; FlopNotes() says why).
// A figure in tera (FLOP, FLOP/s); unset stays unset.
std::optional<double> Tera(const std::optional<double>& v) {
  return v ? std::optional<double>(*v / 1e12) : std::nullopt;
}

void AddFlopRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  const bool flops = std::any_of(vs.begin(), vs.end(), [](const Variant& v) {
    return v.figures->flops.attempted || v.figures->flops.total_per_gpu_step.has_value();
  });
  if (!flops) return;
  AddRow(rows, vs, "TFLOP per GPU step",
         [](const Variant& v) { return Tera(v.figures->flops.total_per_gpu_step); });
  AddRow(rows, vs, "achieved TFLOP/s",
         [](const Variant& v) { return Tera(v.figures->flops.achieved_per_second); });
  AddRow(rows, vs, "model TFLOP/s",
         [](const Variant& v) { return Tera(v.figures->flops.model_per_second); });
  AddRow(rows, vs, "MFU", [](const Variant& v) { return v.figures->flops.mfu; });
}

// Bytes (figures/byte_figures.h), when some variant counted any: the total,
// the coverage, and per family (every family any variant has, in first-seen
// order) the achieved bandwidth; n/a where a figure could not be computed.
void AddByteRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  const bool bytes = std::any_of(vs.begin(), vs.end(), [](const Variant& v) {
    return v.figures->bytes.bytes_per_gpu_step.has_value();
  });
  if (!bytes) return;
  auto giga = [](const std::optional<double>& b) {
    return b ? std::optional<double>(*b / 1e9) : std::nullopt;
  };
  AddRow(rows, vs, "GB per GPU step",
         [&](const Variant& v) { return giga(v.figures->bytes.bytes_per_gpu_step); });
  AddRow(rows, vs, "bytes coverage", [](const Variant& v) { return v.figures->bytes.coverage; });
  std::vector<std::string> families;
  for (const auto& v : vs) {
    for (const figures::FamilyByteFigures& f : v.figures->bytes.families) {
      if (std::find(families.begin(), families.end(), f.family) == families.end()) {
        families.push_back(f.family);
      }
    }
  }
  for (const std::string& family : families) {
    AddRow(rows, vs, "GB/s " + family, [&](const Variant& v) -> std::optional<double> {
      for (const figures::FamilyByteFigures& f : v.figures->bytes.families) {
        if (f.family == family) return giga(f.achieved_bytes_per_second);
      }
      return std::nullopt;
    });
  }
}

// Collectives: every kind some variant ran, in kind order. Exposed time and
// bus bandwidth are n/a for a variant that ran no such collective; bus
// bandwidth also where no call carried its size (GB/s).
void AddCollectiveRows(std::vector<Row>& rows, const std::vector<Variant>& vs) {
  for (size_t k = 0; k < aggregate::kCollectiveKinds; ++k) {
    const auto kind = static_cast<aggregate::CollectiveKind>(k);
    auto of = [kind](const Variant& v) -> const figures::CollectiveFigures* {
      for (const auto& c : v.figures->collectives) {
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
      return c ? std::optional<double>(c->exposed_seconds_per_gpu_step) : std::nullopt;
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
         [](const Variant& v) -> std::optional<double> { return v.stats().gpus(); });
  AddRow(rows, vs, "profile steps", [](const Variant& v) -> std::optional<double> {
    return static_cast<double>(v.stats().profile_steps);
  });
  Row steps_source{"profile steps source", {}, {}, false, true};
  for (const auto& v : vs) {
    steps_source.text.emplace_back(
        aggregate::ProfileStepsSourceName(v.stats().profile_steps_source));
  }
  rows.push_back(std::move(steps_source));
  Row mode{"launcher mode", {}, {}, false, true};
  for (const auto& v : vs)
    mode.text.emplace_back(aggregate::LauncherModeName(v.stats().launcher_mode));
  rows.push_back(std::move(mode));
  Row window{"window", {}, {}, false, true};
  for (const auto& v : vs) window.text.push_back(v.window);
  rows.push_back(std::move(window));
  Row source{"step source", {}, {}, false, true};
  for (const auto& v : vs) source.text.push_back(StepSourceText(v));
  rows.push_back(std::move(source));
}

std::vector<Row> BuildRows(const std::vector<Variant>& vs) {
  std::vector<Row> rows;
  AddTimeRows(rows, vs);
  AddExclusiveRows(rows, vs);
  AddRegionRows(rows, vs);
  AddFlopRows(rows, vs);
  AddByteRows(rows, vs);
  AddCollectiveRows(rows, vs);
  AddShapeRows(rows, vs);
  return rows;
}

// Both windows counted their own steps (markers, log or flag, not the
// default guess): their per-step figures are each per their own steps.
bool OwnStepCounts(const aggregate::WindowStats& a, const aggregate::WindowStats& b) {
  return a.profile_steps_source != aggregate::ProfileStepsSource::kDefault &&
         b.profile_steps_source != aggregate::ProfileStepsSource::kDefault;
}

// "5 (trace" for a profile-steps line.
std::string StepsFrom(const aggregate::WindowStats& s) {
  return std::to_string(s.profile_steps) + " (" +
         std::string(aggregate::ProfileStepsSourceName(s.profile_steps_source));
}

// Profile steps that differ but were each counted by their own window: a
// note, not a reason to refuse.
std::vector<std::string> ProfileStepsNotes(const std::vector<Variant>& variants) {
  std::vector<std::string> notes;
  const aggregate::WindowStats& b = variants[0].stats();
  for (size_t i = 1; i < variants.size(); ++i) {
    const aggregate::WindowStats& s = variants[i].stats();
    if (s.profile_steps == b.profile_steps || !OwnStepCounts(b, s)) continue;
    notes.push_back("profile steps differ: " + StepsFrom(b) + ") vs " + StepsFrom(s) + ", " +
                    variants[i].label +
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
    const figures::FlopFigures& ff = v.figures->flops;
    if (!ff.total_per_gpu_step) {
      notes.push_back("FLOPs of " + v.label + " n/a: " + ff.note);
    } else if (!ff.mfu) {
      notes.push_back("MFU of " + v.label + " n/a: " + ff.mfu_note);
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
    if (!r.in_table) continue;
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
    const std::string& source = vs[i].step().source;
    v["step_source"] =
        source.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(source);
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

// Why the variants' per-GPU-per-step numbers are not comparable with the
// baseline's (empty when they are).
std::vector<std::string> Mismatches(const std::vector<Variant>& variants) {
  std::vector<std::string> mismatches;
  const aggregate::WindowStats& b = variants[0].stats();
  for (size_t i = 1; i < variants.size(); ++i) {
    const aggregate::WindowStats& s = variants[i].stats();
    const std::string& l = variants[i].label;
    if (s.launcher_mode != b.launcher_mode) {
      mismatches.push_back("launcher mode differs: " + variants[0].label + " is " +
                           std::string(aggregate::LauncherModeName(b.launcher_mode)) + ", " + l +
                           " is " + std::string(aggregate::LauncherModeName(s.launcher_mode)));
    }
    if (s.profile_steps != b.profile_steps && !OwnStepCounts(b, s)) {
      mismatches.push_back("profile steps differ: " + StepsFrom(b) + ") vs " + StepsFrom(s) + ", " +
                           l + "); a default count may be wrong: give --profile-steps or --log");
    }
    if (s.gpus() != b.gpus()) {
      mismatches.push_back("GPUs per window differ: " + std::to_string(b.gpus()) + " vs " +
                           std::to_string(s.gpus()) + " (" + l + ")");
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
    std::cout << expose::JsonText(RenderJson(variants, rows, mismatches), 2) << "\n";
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
