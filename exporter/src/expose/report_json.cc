#include <map>
#include <string>

#include "aggregate/flops.h"
#include "aggregate/profile_steps.h"
#include "core/text.h"
#include "expose/report.h"

namespace profwatch::expose {
namespace {

using figures::WindowFigures;
using Json = nlohmann::ordered_json;

// Absent is absent: a figure that could not be computed is null.
Json OrNull(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
// A reason or name that is empty is absent too.
Json OrNull(const std::string& v) { return v.empty() ? Json(nullptr) : Json(v); }

// A kind's named process groups (aggregate::ProcessGroup): description and
// the trace's ranks text (null when absent).
Json ProcessGroupsJson(const figures::CollectiveFigures& f) {
  Json out = Json::array();
  for (const aggregate::ProcessGroup& g : f.process_groups) {
    out.push_back({{"description", g.description}, {"ranks", OrNull(g.ranks)}});
  }
  return out;
}

// What was read: window, format, files, GPUs, steps, events and drops.
void AddInputs(Json& j, const WindowFigures& w, const ReportContext& ctx) {
  const aggregate::WindowStats& s = *w.stats;
  j["schema"] = "profwatch.window.v1";
  j["window"] = ctx.window;
  j["format"] = ctx.format;
  Json files = Json::array();
  for (const auto& f : s.files) files.push_back(f.path);
  j["files"] = files;
  j["timestamp_dirs"] = s.timestamp_dirs;
  j["gpus"] = s.gpus();
  // rocprofv3 only (formats that list agents): absent otherwise.
  if (s.idle_gpu_agents) {
    j["idle_gpu_agents"] = *s.idle_gpu_agents;
    j["idle_gpu_agent_names"] = s.idle_gpu_agent_names;
  }
  if (ctx.expected_gpus > 0) {
    j["expected_gpus"] = ctx.expected_gpus;
  } else {
    j["expected_gpus"] = nullptr;
  }
  j["profile_steps"] = s.profile_steps;
  j["profile_steps_source"] =
      std::string(aggregate::ProfileStepsSourceName(s.profile_steps_source));
  j["profile_steps_disagreement"] = OrNull(s.profile_steps_disagreement);
  j["divisor"] = s.divisor();
  j["launcher_mode"] = std::string(aggregate::LauncherModeName(s.launcher_mode));
  j["gpus_per_file"] = s.gpus_per_file;
  j["events"] = s.events;
  j["truncated"] = s.truncated;
  // The drops the metrics count too.
  j["dropped_events"] = w.dropped_events;
  j["rule_set"] = s.rule_set;
}

// A family's bytes (figures/byte_figures.h); every key null without them.
void AddFamilyBytes(Json& fj, const figures::FamilyByteFigures* b) {
  if (b == nullptr) {
    for (const char* key :
         {"bytes_per_gpu_step", "bytes_modeled_seconds_per_gpu_step", "achieved_bytes_per_second",
          "arithmetic_intensity", "roofline_bound", "roofline_fraction"}) {
      fj[key] = nullptr;
    }
    return;
  }
  fj["bytes_per_gpu_step"] = b->bytes_per_gpu_step;
  fj["bytes_modeled_seconds_per_gpu_step"] = b->modeled_seconds_per_gpu_step;
  fj["achieved_bytes_per_second"] = OrNull(b->achieved_bytes_per_second);
  fj["arithmetic_intensity"] = OrNull(b->arithmetic_intensity);
  fj["roofline_bound"] = b->roofline_bound ? Json(std::string(*b->roofline_bound)) : Json(nullptr);
  fj["roofline_fraction"] = OrNull(b->roofline_fraction);
}

// The window's bytes: totals, coverage, memory operations, the roofline's
// peaks; null when the window has no GPU kernels.
Json BytesJson(const WindowFigures& w) {
  if (w.stats->divisor() <= 0) return nullptr;
  const figures::ByteFigures& b = w.bytes;
  Json bj;
  bj["bytes_per_gpu_step"] = OrNull(b.bytes_per_gpu_step);
  bj["bytes_coverage"] = OrNull(b.coverage);
  bj["note"] = OrNull(b.note);
  bj["unknown_ops"] = b.unknown_ops;
  bj["memop_bytes_per_gpu_step"] = OrNull(b.memop_bytes_per_gpu_step);
  bj["memop_seconds_per_gpu_step"] = OrNull(b.memop_seconds_per_gpu_step);
  bj["peak_hbm_bytes_per_second"] = OrNull(b.peak_hbm_bytes_per_second);
  bj["peak_hbm_source"] = OrNull(b.peak_hbm_source);
  bj["ridge_flops_per_byte"] = OrNull(b.ridge);
  bj["roofline_note"] = OrNull(b.roofline_note);
  return bj;
}

// Per kernel family, with its top kernels.
Json FamiliesJson(const WindowFigures& w) {
  Json families = Json::array();
  for (const figures::FamilyFigures& ff : w.families) {
    Json fj;
    fj["family"] = ff.family;
    fj["kind"] = std::string(classify::FamilyKindName(ff.kind));
    // A family that launched no kernel: its times were not measured (null,
    // never 0); its counts are 0.
    auto time = [&](double v) { return ff.ran ? Json(v) : Json(nullptr); };
    fj["seconds_per_gpu_step"] = time(ff.seconds_per_gpu_step);
    fj["launches_per_gpu_step"] = ff.launches_per_gpu_step;
    fj["total_seconds"] = time(ff.raw_seconds);
    fj["launches"] = ff.launches;
    fj["distinct_kernels"] = ff.distinct_kernels;
    fj["exclusive_seconds_per_gpu_step"] = time(ff.exclusive_seconds_per_gpu_step);
    fj["idle_before_seconds_per_gpu_step"] = time(ff.idle_before_seconds_per_gpu_step);
    AddFamilyBytes(fj, ff.bytes ? &w.bytes.families[*ff.bytes] : nullptr);
    Json kernels = Json::array();
    for (const figures::KernelFigures& k : ff.kernels) {
      Json kj;
      kj["name"] = k.kernel.name;
      kj["seconds_per_gpu_step"] = k.seconds_per_gpu_step;
      kj["launches_per_gpu_step"] = k.launches_per_gpu_step;
      kj["launches"] = k.kernel.launches;
      kj["exclusive_seconds_per_gpu_step"] = k.exclusive_seconds_per_gpu_step;
      kj["idle_before_seconds_per_gpu_step"] = k.idle_before_seconds_per_gpu_step;
      kernels.push_back(std::move(kj));
    }
    fj["kernels"] = std::move(kernels);
    families.push_back(std::move(fj));
  }
  return families;
}

// Kernel, busy, idle, overlap and exposed-comm time, and the ranked kernels.
void AddTimeTotals(Json& j, const WindowFigures& w) {
  j["total_kernel_seconds_per_gpu_step"] = w.time.total_kernel_seconds;
  j["busy_seconds_per_gpu_step"] = w.time.busy_seconds;
  j["idle_seconds_per_gpu_step"] = w.time.idle_seconds;
  j["overlap_seconds_per_gpu_step"] = w.time.overlap_seconds;
  j["exposed_comm_seconds_per_gpu_step"] = w.time.exposed_comm_seconds;
  auto ranked = [](const std::vector<figures::RankedFigures>& v) {
    Json out = Json::array();
    for (const auto& k : v) {
      out.push_back({{"name", k.kernel.name},
                     {"family", k.kernel.family},
                     {"seconds_per_gpu_step", k.seconds_per_gpu_step}});
    }
    return out;
  };
  j["top_exclusive_kernels"] = ranked(w.top_exclusive);
  j["top_idle_before_kernels"] = ranked(w.top_idle_before);
}

// Kernel time by source scope, and the unscoped kernels placed from the graph.
void AddRegions(Json& j, const WindowFigures& w) {
  const figures::RegionsFigures& r = w.regions;
  if (r.has_regions) {
    Json regions = Json::array();
    for (const auto& region : r.listed) {
      regions.push_back({{"region", region.region},
                         {"kernel_seconds_per_gpu_step", region.kernel_seconds_per_gpu_step}});
    }
    if (r.other_seconds_per_gpu_step) {
      regions.push_back(
          {{"region", "other"}, {"kernel_seconds_per_gpu_step", *r.other_seconds_per_gpu_step}});
    }
    j["regions"] = std::move(regions);
    j["region_coverage"] = r.coverage;
  } else {
    j["regions"] = nullptr;  // the input carries no scopes
    j["region_coverage"] = nullptr;
  }
  if (r.unscoped) {
    j["unscoped_kernels"] = {
        {"kernel_seconds_per_gpu_step", r.unscoped->kernel_seconds_per_gpu_step},
        {"placed_seconds_per_gpu_step", r.unscoped->placed_seconds_per_gpu_step},
        {"unplaced_reason", OrNull(r.unscoped->unplaced_reason)}};
  } else {
    j["unscoped_kernels"] = nullptr;
  }
}

// The slowest GPU against the median, the spread of compute-busy time, and
// the step time the trace itself shows.
void AddStraggler(Json& j, const WindowFigures& w) {
  if (const auto& st = w.straggler) {
    const aggregate::DeviceSummary& d = st->device;
    j["straggler"] = {{"file", d.file},
                      {"host", st->host},
                      {"device", d.device},
                      {"compute_busy_seconds", st->compute_busy_seconds},
                      {"median_compute_busy_seconds", st->median_compute_busy_seconds},
                      {"ratio", st->ratio}};
    j["gpu_compute_busy_seconds"] = {{"min", st->min_seconds_per_step},
                                     {"median", st->median_seconds_per_step},
                                     {"max", st->max_seconds_per_step}};
  } else {
    j["straggler"] = nullptr;
    j["gpu_compute_busy_seconds"] = nullptr;
  }
  j["trace_step_seconds"] = OrNull(w.trace_step_seconds);
}

// FLOPs per kind and family, achieved rate and MFU; null when the window has
// no GPU kernels. `note` / `mfu_note` say why a figure is null.
Json FlopsJson(const WindowFigures& w) {
  const aggregate::WindowStats& s = *w.stats;
  if (s.divisor() <= 0) return nullptr;
  const figures::FlopFigures& ff = w.flops;
  Json fj;
  Json kind_notes = Json::object();
  for (size_t k = 0; k < ff.per_gpu_step.size(); ++k) {
    const std::string kind(aggregate::FlopKindName(static_cast<aggregate::FlopKind>(k)));
    fj[kind + "_per_gpu_step"] = OrNull(ff.per_gpu_step[k]);
    if (!ff.kind_notes[k].empty()) kind_notes[kind] = ff.kind_notes[k];
  }
  fj["kind_notes"] = std::move(kind_notes);
  fj["total_per_gpu_step"] = OrNull(ff.total_per_gpu_step);
  fj["note"] = OrNull(ff.note);
  fj["counted_kernel_seconds_per_gpu_step"] = OrNull(ff.counted_kernel_seconds_per_gpu_step);
  fj["unknown_ops"] = ff.unknown_ops;
  fj["math_kernel_seconds_per_gpu_step"] = ff.math_kernel_seconds_per_gpu_step;
  fj["coverage"] = OrNull(ff.coverage);
  fj["unknown_kernel_seconds_per_gpu_step"] = ff.unknown_kernel_seconds_per_gpu_step;
  Json uncounted = Json::array();
  for (const figures::FlopFigures::Uncounted& u : ff.uncounted) {
    uncounted.push_back({{"name", u.name},
                         {"by", u.op ? "operator" : "kernel"},
                         {"seconds_per_gpu_step", u.seconds_per_gpu_step}});
  }
  fj["uncounted"] = std::move(uncounted);
  fj["achieved_per_second"] = OrNull(ff.achieved_per_second);
  fj["model_per_second"] = OrNull(ff.model_per_second);
  fj["device"] = OrNull(s.flops.device_name);
  fj["peak_per_second"] = OrNull(ff.peak_per_second);
  fj["peak_source"] = OrNull(s.flops.peak_source);
  fj["mfu"] = OrNull(ff.mfu);
  fj["mfu_lower_bound"] = ff.lower_bound;
  fj["mfu_note"] = OrNull(ff.mfu_note);
  Json fams = Json::array();
  for (const auto& f : ff.families) {
    fams.push_back({{"family", f.family},
                    {"flops_per_gpu_step", f.per_gpu_step},
                    {"achieved_per_second", OrNull(f.achieved_per_second)}});
  }
  fj["families"] = std::move(fams);
  return fj;
}

// Per collective kind (aggregate/collectives.h); null when the window has no
// GPU kernels, absent figures null.
Json CollectivesJson(const WindowFigures& w) {
  if (w.stats->divisor() <= 0) return nullptr;
  Json cj = Json::array();
  for (const figures::CollectiveFigures& f : w.collectives) {
    Json r;
    r["collective"] = std::string(aggregate::CollectiveKindName(f.kind));
    r["calls"] = f.calls;
    r["calls_per_gpu_step"] = f.calls_per_gpu_step;
    r["kernel_seconds_per_gpu_step"] = f.kernel_seconds_per_gpu_step;
    r["exposed_seconds_per_gpu_step"] = f.exposed_seconds_per_gpu_step;
    r["sized_calls"] = f.sized_calls;
    r["bytes_per_gpu_step"] = OrNull(f.bytes_per_gpu_step);
    r["algbw_bytes_per_second"] = OrNull(f.alg_bandwidth);
    r["busbw_bytes_per_second"] = OrNull(f.bus_bandwidth);
    r["group_sizes"] = f.group_sizes;
    r["more_group_sizes"] = f.more_group_sizes;
    r["process_groups"] = ProcessGroupsJson(f);
    r["more_process_groups"] = f.more_process_groups;
    r["note"] = OrNull(f.note);
    cj.push_back(std::move(r));
  }
  return cj;
}

// The step time against kernel time; null without a step time.
Json StepJson(const WindowFigures& w) {
  const auto& gap = w.step_gap;
  if (!gap) return nullptr;
  return {{"seconds", gap->step_seconds},
          {"source", w.step.source},
          {"minus_kernel_seconds", gap->minus_kernel_seconds},
          {"minus_kernel_ratio", gap->ratio}};
}

// What holds the step: blocking kernels, host stall, math alone, and the
// collective with the most exposed time.
Json DiagnosisJson(const WindowFigures& w) {
  const figures::Diagnosis& dg = w.diagnosis;
  Json dj;
  dj["step_seconds"] = dg.step_seconds;
  dj["step_basis"] = dg.step_basis;
  Json blockers = Json::array();
  for (const auto& b : dg.blockers) {
    blockers.push_back({{"kernel", b.kernel},
                        {"family", b.family},
                        {"exclusive_seconds_per_gpu_step", b.exclusive_seconds_per_gpu_step},
                        {"share_of_step", b.share_of_step},
                        {"seconds_per_call", b.seconds_per_call}});
  }
  dj["blockers"] = std::move(blockers);
  if (dg.host_stall) {
    const auto& h = *dg.host_stall;
    dj["host_stall"] = {{"stalled", h.stalled},
                        {"seconds_per_step", h.seconds_per_step},
                        {"share_of_step", h.share_of_step},
                        {"gaps_per_gpu", h.gaps_per_gpu},
                        {"worst_gpu", h.gpu},
                        {"worst_gpu_gaps_seconds", h.gaps_seconds}};
  } else {
    dj["host_stall"] = nullptr;  // one profiled step: no boundary between steps
  }
  dj["math_alone_seconds_per_gpu_step"] = dg.math_alone_seconds_per_gpu_step;
  dj["math_alone_share_of_step"] = dg.math_alone_share_of_step;
  if (const auto& e = w.exposed_collective) {
    const figures::CollectiveFigures* c = &w.collectives[e->index];
    dj["exposed_collective"] = {{"collective", std::string(aggregate::CollectiveKindName(c->kind))},
                                {"exposed_seconds_per_gpu_step", c->exposed_seconds_per_gpu_step},
                                {"share_of_step", OrNull(e->share_of_step)},
                                {"group_sizes", c->group_sizes},
                                {"process_groups", ProcessGroupsJson(*c)},
                                {"busbw_bytes_per_second", OrNull(c->bus_bandwidth)}};
  } else {
    dj["exposed_collective"] = nullptr;  // no collective time exposed
  }
  return dj;
}

// Per device (GPU) of every file.
Json DevicesJson(const WindowFigures& w) {
  Json devices = Json::array();
  for (const figures::DeviceFigures& df : w.devices) {
    const aggregate::DeviceSummary& d = df.device;
    Json dj;
    dj["file"] = d.file;
    dj["device"] = d.device;
    if (d.pid) {  // nsys: the device is (pid, CUDA device); rank from NVTX
      dj["pid"] = *d.pid;
      dj["device_id"] = d.device_id ? Json(*d.device_id) : nullptr;
      dj["rank"] = d.rank ? Json(*d.rank) : nullptr;
    }
    dj["kernels"] = d.kernels;
    dj["kernel_seconds"] = df.kernel_seconds;
    dj["busy_seconds"] = df.busy_seconds;
    dj["span_seconds"] = df.span_seconds;
    dj["idle_seconds"] = df.idle_seconds;
    dj["overlap_seconds"] = df.overlap_seconds;
    dj["streams"] = d.streams;
    dj["comm_seconds"] = df.comm_seconds;
    dj["exposed_comm_seconds"] = df.exposed_comm_seconds;
    dj["compute_busy_seconds"] = df.compute_busy_seconds;
    dj["exclusive_seconds"] = df.exclusive_seconds;
    dj["overlapped_seconds"] = df.overlapped_seconds;
    dj["memops"] = d.memops;
    dj["memop_seconds"] = df.memop_seconds;
    devices.push_back(std::move(dj));
  }
  return devices;
}

Json ErrorsJson(const ReportContext& ctx) {
  Json errors = Json::array();
  for (const auto& e : ctx.errors) {
    errors.push_back({{"file", e.file}, {"reason", e.reason}, {"message", e.message}});
  }
  return errors;
}

}  // namespace

// One section per helper, in schema order (ordered_json keeps insertion order).
nlohmann::ordered_json WindowToJson(const WindowFigures& w, const ReportContext& ctx) {
  Json j;
  AddInputs(j, w, ctx);
  j["families"] = FamiliesJson(w);
  AddTimeTotals(j, w);
  AddRegions(j, w);
  AddStraggler(j, w);
  j["flops"] = FlopsJson(w);
  j["bytes"] = BytesJson(w);
  j["collectives"] = CollectivesJson(w);
  j["step"] = StepJson(w);
  j["diagnosis"] = DiagnosisJson(w);
  j["devices"] = DevicesJson(w);
  j["errors"] = ErrorsJson(ctx);
  return j;
}

nlohmann::ordered_json RunReportToJson(const snapshot::RunState& rs) {
  ReportContext ctx;
  ctx.window = rs.window_id;
  ctx.format = rs.format;
  ctx.expected_gpus = rs.expected_gpus;
  return WindowToJson(*rs.figures, ctx);
}

std::string JsonText(const nlohmann::ordered_json& j, int indent) {
  // Names and paths in their reversible form (core/text.h), as in the
  // --state and --history files: a byte that is not UTF-8 reads \xHH.
  nlohmann::ordered_json out = j;
  ReversibleUtf8Strings(out);
  return out.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace profwatch::expose
