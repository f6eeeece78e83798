#include "figures/window_figures.h"

#include <algorithm>
#include <utility>

#include "figures/kernel_label.h"

namespace profwatch::figures {
namespace {

using aggregate::PsToSeconds;
using aggregate::WindowStats;

// Kernels whose short forms are equal are one series (their sum), largest first.
std::vector<KernelSeries> SeriesOf(const WindowStats& s, const aggregate::FamilySummary& f) {
  std::vector<std::pair<std::string, int64_t>> kernels;
  for (const aggregate::KernelSummary& k : f.top_kernels) {
    std::string label = ShortKernelName(k.name);
    auto same = std::find_if(kernels.begin(), kernels.end(),
                             [&](const auto& e) { return e.first == label; });
    if (same == kernels.end()) {
      kernels.emplace_back(std::move(label), k.total_ps);
    } else {
      same->second += k.total_ps;
    }
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<KernelSeries> out;
  out.reserve(kernels.size());
  for (auto& [label, ps] : kernels) out.push_back({std::move(label), s.PerGpuStepSeconds(ps)});
  return out;
}

void AddFamilies(const WindowStats& s, WindowFigures& w) {
  w.families.reserve(s.families.size());
  for (const aggregate::FamilySummary& f : s.families) {
    FamilyFigures ff;
    ff.family = f.family;
    ff.kind = f.kind;
    ff.launches = f.launches;
    ff.distinct_kernels = f.distinct_kernels;
    ff.seconds_per_gpu_step = s.PerGpuStepSeconds(f.total_ps);
    ff.launches_per_gpu_step = s.PerGpuStepCount(f.launches);
    ff.exclusive_seconds_per_gpu_step = s.PerGpuStepSeconds(f.exclusive_ps);
    ff.idle_before_seconds_per_gpu_step = s.PerGpuStepSeconds(f.idle_before_ps);
    ff.share_of_kernel_time = s.total_kernel_ps > 0 ? static_cast<double>(f.total_ps) /
                                                          static_cast<double>(s.total_kernel_ps)
                                                    : 0.0;
    ff.raw_seconds = PsToSeconds(f.total_ps);
    ff.raw_launches = static_cast<double>(f.launches);
    ff.ran = f.launches > 0;
    ff.kernels.reserve(f.top_kernels.size());
    for (const aggregate::KernelSummary& k : f.top_kernels) {
      ff.kernels.push_back({k, s.PerGpuStepSeconds(k.total_ps), s.PerGpuStepCount(k.launches),
                            s.PerGpuStepSeconds(k.exclusive_ps),
                            s.PerGpuStepSeconds(k.idle_before_ps)});
    }
    ff.series = SeriesOf(s, f);
    w.families.push_back(std::move(ff));
  }
  const aggregate::FamilySummary* top = nullptr;
  for (size_t i = 0; i < s.families.size(); ++i) {
    if (!top || s.families[i].total_ps > top->total_ps) {
      top = &s.families[i];
      w.top_family = i;
    }
  }
  if (top != nullptr && top->total_ps <= 0) w.top_family.reset();
}

void AddTimes(const WindowStats& s, WindowFigures& w) {
  const int64_t busy = s.SumBusyPs(), span = s.SumSpanPs(), exposed = s.SumExposedCommPs();
  w.time.total_kernel_seconds = s.PerGpuStepSeconds(s.total_kernel_ps);
  w.time.launches = s.PerGpuStepCount(s.total_launches);
  w.time.busy_seconds = s.PerGpuStepSeconds(busy);
  w.time.idle_seconds = s.PerGpuStepSeconds(span - busy);
  w.time.overlap_seconds = s.PerGpuStepSeconds(s.total_kernel_ps - busy);
  w.time.exposed_comm_seconds = s.PerGpuStepSeconds(exposed);
  int64_t memops = 0, memop_ps = 0;
  for (const aggregate::DeviceSummary& d : s.devices) {
    memops += d.memops;
    memop_ps += d.memop_ps;
  }
  w.time.memops = s.PerGpuStepCount(memops);
  w.time.memop_seconds = s.PerGpuStepSeconds(memop_ps);
  w.raw.kernel_seconds = PsToSeconds(s.total_kernel_ps);
  w.raw.busy_seconds = PsToSeconds(busy);
  w.raw.span_seconds = PsToSeconds(span);
  w.raw.exposed_comm_seconds = PsToSeconds(exposed);
  w.raw.gpu_steps = static_cast<double>(s.divisor());
  for (const aggregate::RankedKernel& k : s.top_exclusive) {
    w.top_exclusive.push_back({k, s.PerGpuStepSeconds(k.ps)});
  }
  for (const aggregate::RankedKernel& k : s.top_idle_before) {
    w.top_idle_before.push_back({k, s.PerGpuStepSeconds(k.ps)});
  }
}

void AddRegions(const WindowStats& s, WindowFigures& w) {
  RegionsFigures& r = w.regions;
  r.has_regions = s.has_regions;
  for (const aggregate::RegionSummary& region : s.regions) {
    r.listed.push_back({region.region, s.PerGpuStepSeconds(region.kernel_ps)});
  }
  if (s.regions_other_ps > 0)
    r.other_seconds_per_gpu_step = s.PerGpuStepSeconds(s.regions_other_ps);
  r.coverage = s.region_coverage;
  const int64_t unattributed =
      s.total_kernel_ps - static_cast<int64_t>(s.region_coverage * s.total_kernel_ps + 0.5);
  r.unattributed_seconds_per_gpu_step = s.PerGpuStepSeconds(std::max<int64_t>(0, unattributed));
  if (s.graph.kernel_ps > 0) {
    r.unscoped = UnscopedFigures{s.PerGpuStepSeconds(s.graph.kernel_ps),
                                 s.PerGpuStepSeconds(s.graph.placed_ps), s.graph.unplaced};
  }
  for (const aggregate::FileSummary& f : s.files) {
    r.jax_input = r.jax_input || f.schema == parse::TraceSchema::kJaxTraceEvents ||
                  f.schema == parse::TraceSchema::kXPlane;
    r.torch_input = r.torch_input || f.schema == parse::TraceSchema::kKineto;
  }
}

void AddStraggler(const WindowStats& s, WindowFigures& w) {
  const std::optional<aggregate::Straggler> st = s.FindStraggler();
  if (!st) return;
  const aggregate::BusyQuantiles q = s.ComputeBusyQuantiles();
  StragglerFigures f;
  f.device = s.devices[st->device];
  f.host = st->host;
  f.compute_busy_seconds = PsToSeconds(st->compute_busy_ps);
  f.median_compute_busy_seconds = st->median_compute_busy_ps * 1e-12;
  f.ratio = st->ratio;
  f.compute_busy_seconds_per_step = s.PerStepSeconds(static_cast<double>(st->compute_busy_ps));
  f.median_compute_busy_seconds_per_step = s.PerStepSeconds(st->median_compute_busy_ps);
  f.min_seconds_per_step = s.PerStepSeconds(q.min_ps);
  f.median_seconds_per_step = s.PerStepSeconds(q.median_ps);
  f.max_seconds_per_step = s.PerStepSeconds(q.max_ps);
  f.sum_seconds_per_step = s.PerStepSeconds(static_cast<double>(s.SumComputeBusyPs()));
  w.straggler = std::move(f);
}

void AddDevices(const WindowStats& s, WindowFigures& w) {
  w.devices.reserve(s.devices.size());
  for (const aggregate::DeviceSummary& d : s.devices) {
    DeviceFigures f;
    f.device = d;
    f.kernel_seconds = PsToSeconds(d.kernel_ps);
    f.busy_seconds = PsToSeconds(d.busy_ps);
    f.span_seconds = PsToSeconds(d.span_ps);
    f.idle_seconds = PsToSeconds(d.span_ps - d.busy_ps);
    f.overlap_seconds = PsToSeconds(d.kernel_ps - d.busy_ps);
    f.comm_seconds = PsToSeconds(d.comm_ps);
    f.exposed_comm_seconds = PsToSeconds(d.exposed_comm_ps);
    f.compute_busy_seconds = PsToSeconds(d.compute_busy_ps);
    f.exclusive_seconds = PsToSeconds(d.exclusive_ps);
    f.overlapped_seconds = PsToSeconds(d.busy_ps - d.exclusive_ps);
    f.memop_seconds = PsToSeconds(d.memop_ps);
    w.devices.push_back(f);
  }
}

// The step against kernel time, the diagnosis, and the exposed collective's
// share of the diagnosis step.
void AddStep(const WindowStats& s, WindowFigures& w) {
  if (w.step.seconds && *w.step.seconds > 0 && s.divisor() > 0) {
    StepGap g;
    g.total_kernel_seconds = w.time.total_kernel_seconds;
    g.step_seconds = *w.step.seconds;
    g.minus_kernel_seconds = g.step_seconds - g.total_kernel_seconds;
    g.ratio = g.minus_kernel_seconds / g.step_seconds;
    w.step_gap = g;
  }
  w.diagnosis = Diagnose(s, w.step);
  if (auto dominant = DominantExposedCollective(w.collectives)) {
    ExposedCollective e;
    e.index = *dominant;
    if (w.diagnosis.step_seconds > 0) {
      e.share_of_step =
          w.collectives[*dominant].exposed_seconds_per_gpu_step / w.diagnosis.step_seconds;
    }
    w.exposed_collective = e;
  }
}

}  // namespace

WindowFigures FiguresOf(std::shared_ptr<const aggregate::WindowStats> stats, const StepTime& step) {
  WindowFigures w;
  w.stats = std::move(stats);
  w.step = step;
  const WindowStats& s = *w.stats;
  for (const aggregate::FileSummary& f : s.files) {
    for (const auto& [reason, n] : f.drops) w.dropped_events[reason] += n;
  }
  AddFamilies(s, w);
  AddTimes(s, w);
  AddRegions(s, w);
  AddStraggler(s, w);
  if (const double t = s.TraceStepSeconds(); t > 0) w.trace_step_seconds = t;
  w.flops = ComputeFlopFigures(s, step);
  w.bytes = ComputeByteFigures(s, w.flops);
  for (FamilyFigures& ff : w.families) {
    for (size_t i = 0; i < w.bytes.families.size(); ++i) {
      if (w.bytes.families[i].family == ff.family) ff.bytes = i;
    }
  }
  w.collectives = ComputeCollectiveFigures(s.collectives, s.divisor());
  AddStep(s, w);
  AddDevices(s, w);
  return w;
}

}  // namespace profwatch::figures
