#include <map>
#include <string>

#include "aggregate/collectives.h"
#include "aggregate/diagnosis.h"
#include "aggregate/flops.h"
#include "aggregate/profile_steps.h"
#include "expose/report.h"

namespace profwatch::expose {
namespace {

using aggregate::PsToSeconds;
using Json = nlohmann::ordered_json;

// Absent is absent: a figure that could not be computed is null.
Json OrNull(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
// A reason or name that is empty is absent too.
Json OrNull(const std::string& v) { return v.empty() ? Json(nullptr) : Json(v); }

// A kind's named process groups (aggregate::ProcessGroup): description and
// the trace's ranks text (null when absent).
Json ProcessGroupsJson(const aggregate::CollectiveFigures& f) {
  Json out = Json::array();
  for (const aggregate::ProcessGroup& g : f.process_groups) {
    out.push_back({{"description", g.description}, {"ranks", OrNull(g.ranks)}});
  }
  return out;
}

// What was read: window, format, files, GPUs, steps, events and drops.
void AddInputs(Json& j, const aggregate::WindowStats& s, const ReportContext& ctx) {
  j["schema"] = "profwatch.window.v1";
  j["window"] = ctx.window;
  j["format"] = ctx.format;
  Json files = Json::array();
  for (const auto& f : s.files) files.push_back(f.path);
  j["files"] = files;
  j["timestamp_dirs"] = s.timestamp_dirs;
  j["gpus"] = s.gpus();
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
  // The drops profwatch_window_dropped_events counts, summed the same way.
  std::map<std::string, uint64_t> dropped;
  for (const auto& f : s.files) {
    for (const auto& [reason, n] : f.drops) dropped[reason] += n;
  }
  j["dropped_events"] = dropped;
  j["rule_set"] = s.rule_set;
}

// Per kernel family, with its top kernels.
Json FamiliesJson(const aggregate::WindowStats& s) {
  Json families = Json::array();
  for (const auto& f : s.families) {
    Json fj;
    fj["family"] = f.family;
    fj["kind"] = std::string(classify::FamilyKindName(f.kind));
    fj["seconds_per_gpu_step"] = s.PerGpuStepSeconds(f.total_ps);
    fj["launches_per_gpu_step"] = s.PerGpuStepCount(f.launches);
    fj["total_seconds"] = PsToSeconds(f.total_ps);
    fj["launches"] = f.launches;
    fj["distinct_kernels"] = f.distinct_kernels;
    fj["exclusive_seconds_per_gpu_step"] = s.PerGpuStepSeconds(f.exclusive_ps);
    fj["idle_before_seconds_per_gpu_step"] = s.PerGpuStepSeconds(f.idle_before_ps);
    Json kernels = Json::array();
    for (const auto& k : f.top_kernels) {
      Json kj;
      kj["name"] = k.name;
      kj["seconds_per_gpu_step"] = s.PerGpuStepSeconds(k.total_ps);
      kj["launches_per_gpu_step"] = s.PerGpuStepCount(k.launches);
      kj["launches"] = k.launches;
      kj["exclusive_seconds_per_gpu_step"] = s.PerGpuStepSeconds(k.exclusive_ps);
      kj["idle_before_seconds_per_gpu_step"] = s.PerGpuStepSeconds(k.idle_before_ps);
      kernels.push_back(std::move(kj));
    }
    fj["kernels"] = std::move(kernels);
    families.push_back(std::move(fj));
  }
  return families;
}

// Kernel, busy, idle, overlap and exposed-comm time, and the ranked kernels.
void AddTimeTotals(Json& j, const aggregate::WindowStats& s) {
  j["total_kernel_seconds_per_gpu_step"] = s.PerGpuStepSeconds(s.total_kernel_ps);
  const int64_t busy = s.SumBusyPs(), span = s.SumSpanPs();
  j["busy_seconds_per_gpu_step"] = s.PerGpuStepSeconds(busy);
  j["idle_seconds_per_gpu_step"] = s.PerGpuStepSeconds(span - busy);
  j["overlap_seconds_per_gpu_step"] = s.PerGpuStepSeconds(s.total_kernel_ps - busy);
  j["exposed_comm_seconds_per_gpu_step"] = s.PerGpuStepSeconds(s.SumExposedCommPs());
  auto ranked = [&](const std::vector<aggregate::RankedKernel>& v) {
    Json out = Json::array();
    for (const auto& k : v) {
      out.push_back({{"name", k.name},
                     {"family", k.family},
                     {"seconds_per_gpu_step", s.PerGpuStepSeconds(k.ps)}});
    }
    return out;
  };
  j["top_exclusive_kernels"] = ranked(s.top_exclusive);
  j["top_idle_before_kernels"] = ranked(s.top_idle_before);
}

// Kernel time by source scope, and the unscoped kernels placed from the graph.
void AddRegions(Json& j, const aggregate::WindowStats& s) {
  if (s.has_regions) {
    Json regions = Json::array();
    for (const auto& r : s.regions) {
      regions.push_back({{"region", r.region},
                         {"kernel_seconds_per_gpu_step", s.PerGpuStepSeconds(r.kernel_ps)}});
    }
    if (s.regions_other_ps > 0) {
      regions.push_back({{"region", "other"},
                         {"kernel_seconds_per_gpu_step", s.PerGpuStepSeconds(s.regions_other_ps)}});
    }
    j["regions"] = std::move(regions);
    j["region_coverage"] = s.region_coverage;
  } else {
    j["regions"] = nullptr;  // the input carries no scopes
    j["region_coverage"] = nullptr;
  }
  if (s.graph.kernel_ps > 0) {
    j["unscoped_kernels"] = {
        {"kernel_seconds_per_gpu_step", s.PerGpuStepSeconds(s.graph.kernel_ps)},
        {"placed_seconds_per_gpu_step", s.PerGpuStepSeconds(s.graph.placed_ps)},
        {"unplaced_reason", OrNull(s.graph.unplaced)}};
  } else {
    j["unscoped_kernels"] = nullptr;
  }
}

// The slowest GPU against the median, the spread of compute-busy time, and
// the step time the trace itself shows.
void AddStraggler(Json& j, const aggregate::WindowStats& s) {
  if (auto st = s.FindStraggler()) {
    const aggregate::DeviceSummary& d = s.devices[st->device];
    j["straggler"] = {{"file", d.file},
                      {"host", st->host},
                      {"device", d.device},
                      {"compute_busy_seconds", PsToSeconds(st->compute_busy_ps)},
                      {"median_compute_busy_seconds", st->median_compute_busy_ps * 1e-12},
                      {"ratio", st->ratio}};
    const aggregate::BusyQuantiles q = s.ComputeBusyQuantiles();
    j["gpu_compute_busy_seconds"] = {{"min", s.PerStepSeconds(q.min_ps)},
                                     {"median", s.PerStepSeconds(q.median_ps)},
                                     {"max", s.PerStepSeconds(q.max_ps)}};
  } else {
    j["straggler"] = nullptr;
    j["gpu_compute_busy_seconds"] = nullptr;
  }
  if (double ts = s.TraceStepSeconds(); ts > 0) {
    j["trace_step_seconds"] = ts;
  } else {
    j["trace_step_seconds"] = nullptr;
  }
}

// FLOPs per kind and family, achieved rate and MFU; null when the window has
// no GPU kernels. `note` / `mfu_note` say why a figure is null.
Json FlopsJson(const aggregate::WindowStats& s, const ReportContext& ctx) {
  if (s.divisor() <= 0) return nullptr;
  const aggregate::FlopFigures ff = aggregate::ComputeFlopFigures(s, ctx.step_seconds);
  Json fj;
  for (size_t k = 0; k < 3; ++k) {
    fj[std::string(aggregate::FlopKindName(static_cast<aggregate::FlopKind>(k))) +
       "_per_gpu_step"] = ff.per_gpu_step ? Json((*ff.per_gpu_step)[k]) : Json(nullptr);
  }
  fj["total_per_gpu_step"] = OrNull(ff.total_per_gpu_step);
  fj["note"] = OrNull(ff.note);
  fj["counted_kernel_seconds_per_gpu_step"] =
      ff.total_per_gpu_step ? Json(s.PerGpuStepSeconds(s.flops.TotalKernelPs())) : Json(nullptr);
  fj["unknown_ops"] = s.flops.unknown_ops;
  fj["math_kernel_seconds_per_gpu_step"] = s.PerGpuStepSeconds(s.flops.math_ps);
  fj["coverage"] = OrNull(ff.coverage);
  fj["unknown_kernel_seconds_per_gpu_step"] = s.PerGpuStepSeconds(s.flops.unknown_kernel_ps);
  Json uncounted = Json::array();
  for (const aggregate::FlopStats::Uncounted& u : s.flops.uncounted) {
    uncounted.push_back({{"name", u.name},
                         {"by", u.op ? "operator" : "kernel"},
                         {"seconds_per_gpu_step", s.PerGpuStepSeconds(u.ps)}});
  }
  fj["uncounted"] = std::move(uncounted);
  fj["achieved_per_second"] = OrNull(ff.achieved_per_second);
  fj["model_per_second"] = OrNull(ff.model_per_second);
  fj["device"] = OrNull(s.flops.device_name);
  fj["peak_per_second"] =
      s.flops.peak_per_second > 0 ? Json(s.flops.peak_per_second) : Json(nullptr);
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
Json CollectivesJson(const aggregate::WindowStats& s) {
  if (s.divisor() <= 0) return nullptr;
  Json cj = Json::array();
  for (const aggregate::CollectiveFigures& f :
       aggregate::ComputeCollectiveFigures(s.collectives, s.divisor())) {
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
Json StepJson(const aggregate::WindowStats& s, const ReportContext& ctx) {
  auto gap = ComputeStepGap(s, ctx.step_seconds);
  if (!gap) return nullptr;
  return {{"seconds", gap->step_seconds},
          {"source", ctx.step_source},
          {"minus_kernel_seconds", gap->minus_kernel_seconds},
          {"minus_kernel_ratio", gap->ratio}};
}

// What holds the step: blocking kernels, host stall, math alone, and the
// collective with the most exposed time.
Json DiagnosisJson(const aggregate::WindowStats& s, const ReportContext& ctx) {
  const aggregate::Diagnosis dg = aggregate::Diagnose(s, ctx.step_seconds, ctx.step_source);
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
  if (auto c = aggregate::DominantExposedCollective(s.collectives, s.divisor())) {
    dj["exposed_collective"] = {
        {"collective", std::string(aggregate::CollectiveKindName(c->kind))},
        {"exposed_seconds_per_gpu_step", c->exposed_seconds_per_gpu_step},
        {"share_of_step", dg.step_seconds > 0
                              ? Json(c->exposed_seconds_per_gpu_step / dg.step_seconds)
                              : Json(nullptr)},
        {"group_sizes", c->group_sizes},
        {"process_groups", ProcessGroupsJson(*c)},
        {"busbw_bytes_per_second", OrNull(c->bus_bandwidth)}};
  } else {
    dj["exposed_collective"] = nullptr;  // no collective time exposed
  }
  return dj;
}

// Per device (GPU) of every file.
Json DevicesJson(const aggregate::WindowStats& s) {
  Json devices = Json::array();
  for (const auto& d : s.devices) {
    Json dj;
    dj["file"] = d.file;
    dj["device"] = d.device;
    if (d.pid) {  // nsys: the device is (pid, CUDA device); rank from NVTX
      dj["pid"] = *d.pid;
      dj["device_id"] = d.device_id ? Json(*d.device_id) : nullptr;
      dj["rank"] = d.rank ? Json(*d.rank) : nullptr;
    }
    dj["kernels"] = d.kernels;
    dj["kernel_seconds"] = PsToSeconds(d.kernel_ps);
    dj["busy_seconds"] = PsToSeconds(d.busy_ps);
    dj["span_seconds"] = PsToSeconds(d.span_ps);
    dj["idle_seconds"] = PsToSeconds(d.span_ps - d.busy_ps);
    dj["overlap_seconds"] = PsToSeconds(d.kernel_ps - d.busy_ps);
    dj["streams"] = d.streams;
    dj["comm_seconds"] = PsToSeconds(d.comm_ps);
    dj["exposed_comm_seconds"] = PsToSeconds(d.exposed_comm_ps);
    dj["compute_busy_seconds"] = PsToSeconds(d.compute_busy_ps);
    dj["exclusive_seconds"] = PsToSeconds(d.exclusive_ps);
    dj["overlapped_seconds"] = PsToSeconds(d.busy_ps - d.exclusive_ps);
    dj["memops"] = d.memops;
    dj["memop_seconds"] = PsToSeconds(d.memop_ps);
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
nlohmann::ordered_json WindowToJson(const aggregate::WindowStats& s, const ReportContext& ctx) {
  Json j;
  AddInputs(j, s, ctx);
  j["families"] = FamiliesJson(s);
  AddTimeTotals(j, s);
  AddRegions(j, s);
  AddStraggler(j, s);
  j["flops"] = FlopsJson(s, ctx);
  j["collectives"] = CollectivesJson(s);
  j["step"] = StepJson(s, ctx);
  j["diagnosis"] = DiagnosisJson(s, ctx);
  j["devices"] = DevicesJson(s);
  j["errors"] = ErrorsJson(ctx);
  return j;
}

nlohmann::ordered_json RunReportToJson(const snapshot::RunState& rs) {
  ReportContext ctx;
  ctx.window = rs.window_id;
  ctx.format = rs.format;
  ctx.expected_gpus = rs.expected_gpus;
  ctx.step_seconds = rs.step_seconds;
  ctx.step_source = rs.step_source;
  return WindowToJson(*rs.stats, ctx);
}

}  // namespace profwatch::expose
