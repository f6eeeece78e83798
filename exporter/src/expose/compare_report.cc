// Rendering of `profwatch compare` (compare_report.h): rows built from each
// variant's figures, then the text/markdown table or the JSON document.
#include "expose/compare_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "aggregate/profile_steps.h"
#include "aggregate/window_stats.h"
#include "expose/report.h"

namespace profwatch::expose {
// A namespace of its own: the stage is compiled in unity batches, and these
// helpers' names (Row, Num, ...) are common.
namespace compare {
namespace {

const aggregate::WindowStats& StatsOf(const CompareVariant& v) { return *v.figures->stats; }
const figures::StepTime& StepOf(const CompareVariant& v) { return v.figures->step; }

// Where the variant's step came from, for the text table.
std::string StepSourceText(const CompareVariant& v) {
  const std::string& source = StepOf(v).source;
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
void AddRow(std::vector<Row>& rows, const std::vector<CompareVariant>& vs, std::string name,
            Fn fn) {
  Row r{std::move(name), {}, {}, true, true};
  for (const auto& v : vs) r.values.push_back(fn(v));
  rows.push_back(std::move(r));
}

// A family's figure in a variant; unset (n/a, null) where the variant has no
// such family or the family launched no kernel there: not measured, never 0.
std::optional<double> FamilyFigure(const CompareVariant& v, const std::string& family,
                                   double figures::FamilyFigures::*figure) {
  for (const auto& fam : v.figures->families) {
    if (fam.family == family && fam.ran) return fam.*figure;
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
void AddTimeRows(std::vector<Row>& rows, const std::vector<CompareVariant>& vs) {
  for (const auto& base : vs[0].figures->families) {
    const std::string& family = base.family;
    AddRow(rows, vs, family, [&](const CompareVariant& v) {
      return FamilyFigure(v, family, &figures::FamilyFigures::seconds_per_gpu_step);
    });
    rows.back().in_table = AnyValue(rows.back());
  }
  using Opt = std::optional<double>;
  AddRow(rows, vs, "total kernel",
         [](const CompareVariant& v) -> Opt { return v.figures->time.total_kernel_seconds; });
  AddRow(rows, vs, "step", [](const CompareVariant& v) { return StepOf(v).seconds; });
  AddRow(rows, vs, "step - total kernel", [](const CompareVariant& v) -> Opt {
    if (!v.figures->step_gap) return std::nullopt;
    return v.figures->step_gap->minus_kernel_seconds;
  });
  AddRow(rows, vs, "busy",
         [](const CompareVariant& v) -> Opt { return v.figures->time.busy_seconds; });
  AddRow(rows, vs, "idle",
         [](const CompareVariant& v) -> Opt { return v.figures->time.idle_seconds; });
  AddRow(rows, vs, "overlap",
         [](const CompareVariant& v) -> Opt { return v.figures->time.overlap_seconds; });
  AddRow(rows, vs, "exposed comm",
         [](const CompareVariant& v) -> Opt { return v.figures->time.exposed_comm_seconds; });
  AddRow(rows, vs, "blockers alone", [](const CompareVariant& v) -> Opt {
    return v.figures->diagnosis.blockers_seconds_per_gpu_step;
  });
  AddRow(rows, vs, "host stall per step", [](const CompareVariant& v) -> Opt {
    const auto& h = v.figures->diagnosis.host_stall;
    return h ? Opt(h->seconds_per_step) : std::nullopt;
  });
}

// Exclusive time (the family ran alone on the GPU), for families where some
// variant has any.
void AddExclusiveRows(std::vector<Row>& rows, const std::vector<CompareVariant>& vs) {
  for (const auto& base : vs[0].figures->families) {
    const std::string& family = base.family;
    auto exclusive = [&](const CompareVariant& v) {
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
void AddRegionRows(std::vector<Row>& rows, const std::vector<CompareVariant>& vs) {
  // A variant's regions as (name, seconds per GPU per step), "other" last.
  auto regions_of = [](const CompareVariant& v) {
    const figures::RegionsFigures& r = v.figures->regions;
    std::vector<std::pair<std::string, double>> out;
    for (const auto& region : r.listed) {
      out.emplace_back(region.region, region.kernel_seconds_per_gpu_step);
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
    AddRow(rows, vs, "region " + region, [&](const CompareVariant& v) -> std::optional<double> {
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

void AddFlopRows(std::vector<Row>& rows, const std::vector<CompareVariant>& vs) {
  const bool flops = std::any_of(vs.begin(), vs.end(), [](const CompareVariant& v) {
    return v.figures->flops.attempted || v.figures->flops.total_per_gpu_step.has_value();
  });
  if (!flops) return;
  AddRow(rows, vs, "TFLOP per GPU step",
         [](const CompareVariant& v) { return Tera(v.figures->flops.total_per_gpu_step); });
  AddRow(rows, vs, "achieved TFLOP/s",
         [](const CompareVariant& v) { return Tera(v.figures->flops.achieved_per_second); });
  AddRow(rows, vs, "model TFLOP/s",
         [](const CompareVariant& v) { return Tera(v.figures->flops.model_per_second); });
  AddRow(rows, vs, "MFU", [](const CompareVariant& v) { return v.figures->flops.mfu; });
}

// Bytes (figures/byte_figures.h), when some variant counted any: the total,
// the coverage, and per family (every family any variant has, in first-seen
// order) the achieved bandwidth; n/a where a figure could not be computed.
void AddByteRows(std::vector<Row>& rows, const std::vector<CompareVariant>& vs) {
  const bool bytes = std::any_of(vs.begin(), vs.end(), [](const CompareVariant& v) {
    return v.figures->bytes.bytes_per_gpu_step.has_value();
  });
  if (!bytes) return;
  auto giga = [](const std::optional<double>& b) {
    return b ? std::optional<double>(*b / 1e9) : std::nullopt;
  };
  AddRow(rows, vs, "GB per GPU step",
         [&](const CompareVariant& v) { return giga(v.figures->bytes.bytes_per_gpu_step); });
  AddRow(rows, vs, "bytes coverage",
         [](const CompareVariant& v) { return v.figures->bytes.coverage; });
  std::vector<std::string> families;
  for (const auto& v : vs) {
    for (const figures::FamilyByteFigures& f : v.figures->bytes.families) {
      if (std::find(families.begin(), families.end(), f.family) == families.end()) {
        families.push_back(f.family);
      }
    }
  }
  for (const std::string& family : families) {
    AddRow(rows, vs, "GB/s " + family, [&](const CompareVariant& v) -> std::optional<double> {
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
void AddCollectiveRows(std::vector<Row>& rows, const std::vector<CompareVariant>& vs) {
  for (size_t k = 0; k < aggregate::kCollectiveKinds; ++k) {
    const auto kind = static_cast<aggregate::CollectiveKind>(k);
    auto of = [kind](const CompareVariant& v) -> const figures::CollectiveFigures* {
      for (const auto& c : v.figures->collectives) {
        if (c.kind == kind) return &c;
      }
      return nullptr;
    };
    if (std::none_of(vs.begin(), vs.end(),
                     [&](const CompareVariant& v) { return of(v) != nullptr; })) {
      continue;
    }
    const std::string name(aggregate::CollectiveKindName(kind));
    AddRow(rows, vs, "exposed " + name, [&](const CompareVariant& v) -> std::optional<double> {
      const auto* c = of(v);
      return c ? std::optional<double>(c->exposed_seconds_per_gpu_step) : std::nullopt;
    });
    AddRow(rows, vs, "busbw GB/s " + name, [&](const CompareVariant& v) -> std::optional<double> {
      const auto* c = of(v);
      if (c == nullptr || !c->bus_bandwidth) return std::nullopt;
      return *c->bus_bandwidth / 1e9;
    });
  }
}

// What makes variants comparable or not, and where each came from.
void AddShapeRows(std::vector<Row>& rows, const std::vector<CompareVariant>& vs) {
  AddRow(rows, vs, "GPUs",
         [](const CompareVariant& v) -> std::optional<double> { return StatsOf(v).gpus(); });
  AddRow(rows, vs, "profile steps", [](const CompareVariant& v) -> std::optional<double> {
    return static_cast<double>(StatsOf(v).profile_steps);
  });
  Row steps_source{"profile steps source", {}, {}, false, true};
  for (const auto& v : vs) {
    steps_source.text.emplace_back(
        aggregate::ProfileStepsSourceName(StatsOf(v).profile_steps_source));
  }
  rows.push_back(std::move(steps_source));
  Row mode{"launcher mode", {}, {}, false, true};
  for (const auto& v : vs)
    mode.text.emplace_back(aggregate::LauncherModeName(StatsOf(v).launcher_mode));
  rows.push_back(std::move(mode));
  Row window{"window", {}, {}, false, true};
  for (const auto& v : vs) window.text.push_back(v.window);
  rows.push_back(std::move(window));
  Row source{"step source", {}, {}, false, true};
  for (const auto& v : vs) source.text.push_back(StepSourceText(v));
  rows.push_back(std::move(source));
}

std::vector<Row> BuildRows(const std::vector<CompareVariant>& vs) {
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
std::vector<std::string> ProfileStepsNotes(const std::vector<CompareVariant>& variants) {
  std::vector<std::string> notes;
  const aggregate::WindowStats& b = StatsOf(variants[0]);
  for (size_t i = 1; i < variants.size(); ++i) {
    const aggregate::WindowStats& s = StatsOf(variants[i]);
    if (s.profile_steps == b.profile_steps || !OwnStepCounts(b, s)) continue;
    notes.push_back("profile steps differ: " + StepsFrom(b) + ") vs " + StepsFrom(s) + ", " +
                    variants[i].label +
                    "); each window's per-step figures are over its own steps, so they compare");
  }
  return notes;
}

// Why a variant's FLOP figures are n/a, one line per variant and reason
// (empty when FLOP rows are not shown or every figure is there).
std::vector<std::string> FlopNotes(const std::vector<CompareVariant>& vs,
                                   const std::vector<Row>& rows) {
  std::vector<std::string> notes;
  const bool shown = std::any_of(rows.begin(), rows.end(),
                                 [](const Row& r) { return r.name == "TFLOP per GPU step"; });
  if (!shown) return notes;
  for (const CompareVariant& v : vs) {
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

std::string RenderText(const std::vector<CompareVariant>& vs, const std::vector<Row>& rows,
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

nlohmann::ordered_json RenderJson(const std::vector<CompareVariant>& vs,
                                  const std::vector<Row>& rows,
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
    const std::string& source = StepOf(vs[i]).source;
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

}  // namespace
}  // namespace compare

std::vector<std::string> CompareMismatches(const std::vector<CompareVariant>& variants) {
  using namespace compare;
  std::vector<std::string> mismatches;
  const aggregate::WindowStats& b = StatsOf(variants[0]);
  for (size_t i = 1; i < variants.size(); ++i) {
    const aggregate::WindowStats& s = StatsOf(variants[i]);
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

std::string RenderCompare(const std::vector<CompareVariant>& variants,
                          const std::vector<std::string>& mismatches, CompareFormat format) {
  using namespace compare;
  const std::vector<Row> rows = BuildRows(variants);
  if (format == CompareFormat::kJson) {
    return JsonText(RenderJson(variants, rows, mismatches), 2) + "\n";
  }
  std::string out = RenderText(variants, rows, format == CompareFormat::kMarkdown);
  std::vector<std::string> notes = ProfileStepsNotes(variants);
  for (std::string& n : FlopNotes(variants, rows)) notes.push_back(std::move(n));
  if (!notes.empty()) out += "\n";
  for (const std::string& note : notes) out += note + "\n";
  return out;
}

}  // namespace profwatch::expose
