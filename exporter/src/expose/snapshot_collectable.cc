#include "expose/snapshot_collectable.h"

#include <prometheus/metric_type.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <map>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "aggregate/flops.h"
#include "core/build_revision.h"
#include "core/log.h"
#include "expose/metric_names.h"
#include "figures/kernel_label.h"

namespace profwatch::expose {
namespace {

using figures::WindowFigures;
using M = Metric;
using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

prometheus::MetricType ToPrometheus(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return prometheus::MetricType::Counter;
    case MetricType::kHistogram:
      return prometheus::MetricType::Histogram;
    case MetricType::kSummary:
      return prometheus::MetricType::Summary;
    case MetricType::kGauge:
      break;
  }
  return prometheus::MetricType::Gauge;
}

// A value as prometheus-cpp's TextSerializer writes it (%.16g; Nan, +Inf,
// -Inf), so both renderings of a snapshot are the same bytes.
void AppendValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "Nan";
  } else if (std::isinf(v)) {
    out += v < 0 ? "-Inf" : "+Inf";
  } else {
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.16g", v);
    out.append(buf, static_cast<size_t>(n));
  }
}

// Text-format escaping: `\` and newline always, `"` in label values only.
void AppendEscaped(std::string& out, std::string_view v, bool quote) {
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// Collects samples per family name, then emits the non-empty families in
// table order. Only gauges and summaries are rendered here (counters and the
// histogram live in the daemon's registry). Two outputs: prometheus-cpp MetricFamily objects
// (the Collectable, tests), or the exposition text directly, one buffer per
// family, which needs a fraction of the objects' memory (the /metrics body).
class Builder {
 public:
  // kText with `dedupe`: drop repeated series while writing (the second pass
  // of RenderSnapshotText, needed only after a label value was cut).
  enum class Output { kFamilies, kText };
  explicit Builder(Output output = Output::kFamilies, bool dedupe = false)
      : output_(output), dedupe_(dedupe) {
    if (output_ == Output::kText) {
      text_.resize(std::size(kMetrics));
      seen_.resize(dedupe_ ? std::size(kMetrics) : 0);
    }
    families_.reserve(std::size(kMetrics));
    for (const MetricSpec& spec : kMetrics) {
      prometheus::MetricFamily f;
      f.name = std::string(spec.name);
      f.help = std::string(spec.help);
      f.type = ToPrometheus(spec.type);
      families_.push_back(std::move(f));
    }
  }

  // With `detail` false (the default) the detail metrics are left out.
  void SetDetail(bool detail) { detail_ = detail; }
  bool detail() const { return detail_; }

  void SetRun(const snapshot::RunKey* key) {
    job_ = key ? Repaired(key->training_job) : std::string();
    run_ = key ? Repaired(key->run) : std::string();
    per_run_ = key != nullptr;
  }

  // `labels` are the metric's own labels, in metric_names.h order.
  void Add(Metric id, double value, Labels labels = {}) {
    if (!detail_ && IsDetail(id)) return;
    const size_t family = static_cast<size_t>(id);
    if (output_ == Output::kText) {
      AddText(family, "", value, labels);
      return;
    }
    prometheus::MetricFamily* f = &families_[family];
    prometheus::ClientMetric m;
    m.label.reserve(labels.size() + 2);
    if (per_run_) {
      m.label.push_back({std::string(kJobLabel), job_});
      m.label.push_back({std::string(kRunLabel), run_});
    }
    for (const auto& [k, v] : labels) m.label.push_back({std::string(k), Repaired(v)});
    m.gauge.value = value;
    f->metric.push_back(std::move(m));
  }

  // A summary sample: quantiles (ascending), sum and count, written in the
  // order prometheus-cpp's TextSerializer writes them.
  void AddSummary(Metric id, std::initializer_list<std::pair<double, double>> quantiles, double sum,
                  uint64_t count) {
    const size_t family = static_cast<size_t>(id);
    if (output_ == Output::kText) {
      AddText(family, "_count", static_cast<double>(count), {});
      AddText(family, "_sum", sum, {});
      for (const auto& [q, v] : quantiles) {
        std::string qs;
        AppendValue(qs, q);
        AddText(family, "", v, {{"quantile", qs}});
      }
      return;
    }
    prometheus::MetricFamily* f = &families_[family];
    prometheus::ClientMetric m;
    if (per_run_) {
      m.label.push_back({std::string(kJobLabel), job_});
      m.label.push_back({std::string(kRunLabel), run_});
    }
    for (const auto& [q, v] : quantiles) m.summary.quantile.push_back({q, v});
    m.summary.sample_sum = sum;
    m.summary.sample_count = count;
    f->metric.push_back(std::move(m));
  }

  int64_t capped() const { return capped_; }
  int64_t invalid_utf8() const { return invalid_utf8_; }

  bool repaired() const { return repaired_; }

  // The exposition text: HELP, TYPE and the samples of each non-empty family.
  std::string FinishText() && {
    size_t size = 0;
    for (const std::string& t : text_) size += t.size() + 256;
    std::string out;
    out.reserve(size);
    for (size_t i = 0; i < families_.size(); ++i) {
      if (text_[i].empty()) continue;
      out += "# HELP ";
      out += families_[i].name;
      out += ' ';
      AppendEscaped(out, families_[i].help, false);
      out += "\n# TYPE ";
      out += families_[i].name;
      out += families_[i].type == prometheus::MetricType::Summary ? " summary\n" : " gauge\n";
      out += text_[i];
      std::string().swap(text_[i]);  // free as we go
    }
    return out;
  }

  std::vector<prometheus::MetricFamily> Finish() && {
    if (repaired_) DropDuplicateSeries();
    std::vector<prometheus::MetricFamily> out;
    for (auto& f : families_) {
      if (!f.metric.empty()) out.push_back(std::move(f));
    }
    return out;
  }

 private:
  // Valid UTF-8 in the reversible form (distinct names stay distinct), at
  // most kMaxLabelValueBytes (a 100,000-byte directory name must not reach
  // Prometheus whole); rewritten values are counted.
  std::string Repaired(std::string_view v) {
    std::string out;
    if (ReversibleUtf8Into(v, out) > 0) ++invalid_utf8_;
    if (out.size() > kMaxLabelValueBytes) {
      out = figures::CutUtf8(std::move(out), kMaxLabelValueBytes);
      repaired_ = true;  // two long values may now be one
      ++capped_;
    }
    return out;
  }

  // Two samples with one label set make Prometheus reject the whole scrape.
  // Distinct names (kernels, runs) can collide only once long values are
  // cut, so this pass runs only after a cut; the first sample
  // (for kernels the largest, as top_kernels is sorted) keeps the series.
  void DropDuplicateSeries() {
    for (auto& f : families_) {
      std::unordered_set<std::string> seen;
      std::vector<prometheus::ClientMetric> kept;
      kept.reserve(f.metric.size());
      for (auto& m : f.metric) {
        std::string series;
        for (const auto& l : m.label) {
          series += l.name;
          series += '=';
          series += l.value;
          series += '\0';
        }
        if (seen.insert(std::move(series)).second) kept.push_back(std::move(m));
      }
      f.metric = std::move(kept);
    }
  }

  // `suffix`: "_sum" / "_count" of a summary, else empty.
  void AddText(size_t family, std::string_view suffix, double value, Labels labels) {
    std::string& out = text_[family];
    const size_t start = out.size();
    out += families_[family].name;
    out += suffix;
    bool any = false;
    auto label = [&](std::string_view k, std::string_view v) {
      out += any ? ',' : '{';
      any = true;
      out += k;
      out += "=\"";
      AppendEscaped(out, v, true);
      out += '"';
    };
    if (per_run_) {
      label(kJobLabel, job_);
      label(kRunLabel, run_);
    }
    for (const auto& [k, v] : labels) label(k, Repaired(v));
    if (any) out += '}';
    if (dedupe_ && !seen_[family].insert(out.substr(start)).second) {
      out.resize(start);  // a repeated series: the first one stays
      return;
    }
    out += ' ';
    AppendValue(out, value);
    out += '\n';
  }

  Output output_;
  bool dedupe_;
  std::vector<std::string> text_;                      // kText: samples per family
  std::vector<std::unordered_set<std::string>> seen_;  // kText + dedupe: series per family
  std::vector<prometheus::MetricFamily> families_;     // kMetrics order: Metric i at i
  bool repaired_ = false;                              // some label value was cut
  int64_t capped_ = 0;                                 // label values cut to kMaxLabelValueBytes
  int64_t invalid_utf8_ = 0;                           // label values with bytes written \xHH
  std::string job_, run_;
  bool per_run_ = false;
  bool detail_ = false;
};

double Bool(bool b) { return b ? 1.0 : 0.0; }

// Per collective kind that ran (figures/collective_figures.h): per GPU per
// step, the window's bandwidths and the additive raw sums the recording
// rules divide across sidecars. Absent figures are not exported (never 0).
void AddCollectives(const WindowFigures& w, Builder& b) {
  for (const figures::CollectiveFigures& f : w.collectives) {
    const std::string_view kind = aggregate::CollectiveKindName(f.kind);
    b.Add(M::kCollectiveSeconds, f.kernel_seconds_per_gpu_step, {{"collective", kind}});
    b.Add(M::kCollectiveExposedSeconds, f.exposed_seconds_per_gpu_step, {{"collective", kind}});
    b.Add(M::kCollectiveCalls, f.calls_per_gpu_step, {{"collective", kind}});
    if (f.bytes_per_gpu_step) {
      b.Add(M::kCollectiveBytes, *f.bytes_per_gpu_step, {{"collective", kind}});
    }
    if (f.alg_bandwidth) {
      b.Add(M::kCollectiveAlgorithmBandwidthBytesPerSecond, *f.alg_bandwidth,
            {{"collective", kind}});
    }
    if (f.bus_bandwidth) {
      b.Add(M::kCollectiveBusBandwidthBytesPerSecond, *f.bus_bandwidth, {{"collective", kind}});
    }
    b.Add(M::kWindowRawCollectiveSeconds, f.raw_kernel_seconds, {{"collective", kind}});
    b.Add(M::kWindowRawCollectiveExposedSeconds, f.raw_exposed_seconds, {{"collective", kind}});
    if (f.raw_sized_bytes) {
      b.Add(M::kWindowRawCollectiveSizedBytes, *f.raw_sized_bytes, {{"collective", kind}});
      b.Add(M::kWindowRawCollectiveSizedSeconds, *f.raw_sized_seconds, {{"collective", kind}});
    }
    if (f.raw_bus_bytes) {
      b.Add(M::kWindowRawCollectiveBusBytes, *f.raw_bus_bytes, {{"collective", kind}});
      b.Add(M::kWindowRawCollectiveBusSeconds, *f.raw_bus_seconds, {{"collective", kind}});
    }
  }
}

// What the window is: GPUs, files, steps, events, drops, completeness.
void AddWindowShape(const snapshot::RunState& rs, const WindowFigures& w, Builder& b) {
  const aggregate::WindowStats& st = *w.stats;
  b.Add(M::kWindowGpus, st.gpus());
  if (st.idle_gpu_agents) b.Add(M::kWindowIdleGpuAgents, static_cast<double>(*st.idle_gpu_agents));
  b.Add(M::kWindowExpectedGpus, rs.ShownExpectedGpus());
  b.Add(M::kWindowTraceFiles, static_cast<double>(st.files.size()));
  b.Add(M::kWindowTimestampDirs, static_cast<double>(st.timestamp_dirs.size()));
  b.Add(M::kWindowProfileSteps, st.profile_steps);
  b.Add(M::kWindowEvents, static_cast<double>(st.events));
  b.Add(M::kWindowTruncated, Bool(st.truncated));
  for (const auto& [reason, n] : w.dropped_events) {
    b.Add(M::kWindowDroppedEvents, static_cast<double>(n), {{"reason", reason}});
  }
  b.Add(M::kWindowIncomplete, Bool(rs.incomplete));
  // The window id is no label: a label that changes with every window would
  // start a new series each time (issue #49); its start time is a value.
  b.Add(M::kWindowInfo, 1.0,
        {{"launcher_mode", aggregate::LauncherModeName(st.launcher_mode)}, {"format", rs.format}});
  b.Add(M::kWindowAnalyzedTimestampSeconds, rs.analyzed_unix);
  b.Add(M::kWindowStartTimestampSeconds, static_cast<double>(rs.window_start));
}

// Per family per GPU per step: kernel time and launches, and its top kernels.
// A family's series are exported when it ran a kernel, or with --metrics-detail
// (a family of the rule set that ran none has only zeros).
bool Shown(const figures::FamilyFigures& f, const Builder& b) { return f.ran || b.detail(); }

void AddFamilies(const WindowFigures& w, Builder& b) {
  for (const figures::FamilyFigures& f : w.families) {
    if (!Shown(f, b)) continue;
    b.Add(M::kFamilyKernelSeconds, f.seconds_per_gpu_step, {{"family", f.family}});
  }
  for (const figures::FamilyFigures& f : w.families) {
    if (!Shown(f, b)) continue;
    b.Add(M::kFamilyKernelLaunches, f.launches_per_gpu_step, {{"family", f.family}});
  }
  for (const figures::FamilyFigures& f : w.families) {
    if (!Shown(f, b)) continue;
    for (const figures::KernelSeries& k : f.series) {
      b.Add(M::kKernelSeconds, k.seconds_per_gpu_step, {{"family", f.family}, {"kernel", k.label}});
    }
  }
}

// Kernel sum, busy, idle, overlap and exposed communication per GPU per
// step, then each family's exclusive and idle-before time and kind.
void AddDecomposition(const WindowFigures& w, Builder& b) {
  b.Add(M::kTotalKernelSeconds, w.time.total_kernel_seconds);
  b.Add(M::kGpuBusySeconds, w.time.busy_seconds);
  b.Add(M::kGpuIdleSeconds, w.time.idle_seconds);
  b.Add(M::kKernelOverlapSeconds, w.time.overlap_seconds);
  b.Add(M::kExposedCommSeconds, w.time.exposed_comm_seconds);
  for (const figures::FamilyFigures& f : w.families) {
    if (!Shown(f, b)) continue;
    b.Add(M::kFamilyExclusiveSeconds, f.exclusive_seconds_per_gpu_step, {{"family", f.family}});
  }
  for (const figures::FamilyFigures& f : w.families) {
    if (!Shown(f, b)) continue;
    b.Add(M::kFamilyIdleBeforeSeconds, f.idle_before_seconds_per_gpu_step, {{"family", f.family}});
  }
  for (const figures::FamilyFigures& f : w.families) {
    if (!Shown(f, b)) continue;
    b.Add(M::kFamilyInfo, 1.0, {{"family", f.family}, {"kind", classify::FamilyKindName(f.kind)}});
  }
}

// Kernel time by region, and the straggling GPU where one stands out.
void AddRegionsAndStraggler(const WindowFigures& w, Builder& b) {
  const figures::RegionsFigures& r = w.regions;
  for (const figures::RegionFigures& region : r.listed) {
    b.Add(M::kRegionKernelSeconds, region.kernel_seconds_per_gpu_step, {{"region", region.region}});
  }
  if (r.other_seconds_per_gpu_step) {
    b.Add(M::kRegionKernelSeconds, *r.other_seconds_per_gpu_step, {{"region", "other"}});
  }
  if (r.has_regions) b.Add(M::kRegionCoverageRatio, r.coverage, {});
  if (const auto& st = w.straggler; st && w.stats->profile_steps > 0) {
    // Per GPU already: only the steps divide.
    b.AddSummary(M::kGpuComputeBusySeconds,
                 {{0.0, st->min_seconds_per_step},
                  {0.5, st->median_seconds_per_step},
                  {1.0, st->max_seconds_per_step}},
                 st->sum_seconds_per_step, static_cast<uint64_t>(w.stats->gpus()));
    b.Add(M::kStragglerRatio, st->ratio);
    b.Add(M::kStragglerInfo, 1.0, {{"host", st->host}, {"device", st->device.device}});
  }
}

// The window's additive sums, undivided, for recording rules that add
// windows across sidecars before dividing.
void AddRawSums(const WindowFigures& w, Builder& b) {
  for (const figures::FamilyFigures& f : w.families) {
    if (!Shown(f, b)) continue;
    b.Add(M::kWindowRawFamilyKernelSeconds, f.raw_seconds, {{"family", f.family}});
  }
  for (const figures::FamilyFigures& f : w.families) {
    if (!Shown(f, b)) continue;
    b.Add(M::kWindowRawFamilyKernelLaunches, f.raw_launches, {{"family", f.family}});
  }
  b.Add(M::kWindowRawKernelSeconds, w.raw.kernel_seconds);
  b.Add(M::kWindowRawGpuBusySeconds, w.raw.busy_seconds);
  b.Add(M::kWindowRawGpuSpanSeconds, w.raw.span_seconds);
  b.Add(M::kWindowRawExposedCommSeconds, w.raw.exposed_comm_seconds);
  b.Add(M::kWindowRawGpuSteps, w.raw.gpu_steps);
}

void AddWindow(const snapshot::RunState& rs, const WindowFigures& w, Builder& b) {
  AddWindowShape(rs, w, b);
  AddFamilies(w, b);
  AddDecomposition(w, b);
  AddRegionsAndStraggler(w, b);
  AddRawSums(w, b);
  AddCollectives(w, b);
}

// `w`: the run's window figures, null for a run without a window.
void AddStep(const snapshot::RunState& rs, const WindowFigures* w, Builder& b) {
  if (rs.step_seconds) {
    // Both arms string_view: a mixed ternary would yield a temporary std::string.
    const std::string_view source =
        rs.step_source.empty() ? std::string_view("unknown") : std::string_view(rs.step_source);
    b.Add(M::kStepSeconds, *rs.step_seconds, {{"source", source}});
  }
  if (w == nullptr) return;
  // The diagnosis weighs blockers and the host stall against the step.
  if (w->stats->divisor() > 0) {
    for (const figures::Blocker& k : w->diagnosis.blockers) {
      b.Add(M::kBlockerSeconds, k.exclusive_seconds_per_gpu_step,
            {{"family", k.family}, {"kernel", k.label}});
    }
    if (const auto& h = w->diagnosis.host_stall) b.Add(M::kHostStallSeconds, h->seconds_per_step);
  }
  // The gap needs both a step time and a window with GPUs; without GPUs the
  // per-GPU kernel time is undefined, not zero.
  if (const auto& gap = w->step_gap) {
    b.Add(M::kStepMinusKernelSeconds, gap->minus_kernel_seconds);
    b.Add(M::kStepMinusKernelRatio, gap->ratio);
  }
  b.Add(M::kStepSourceMissing, Bool(!rs.step_seconds.has_value()));
  // Only the FLOP figures that could be computed: nothing counted, or an
  // impossible count, exports none (never 0).
  const figures::FlopFigures& ff = w->flops;
  for (size_t k = 0; k < ff.per_gpu_step.size(); ++k) {
    // A kind whose kernels ran uncounted is unset (no series); one with no
    // FLOPs because no such kernel ran is a zero.
    if (!ff.per_gpu_step[k] || (*ff.per_gpu_step[k] == 0 && !b.detail())) continue;
    b.Add(M::kWindowFlopsPerGpuStep, *ff.per_gpu_step[k],
          {{"kind", aggregate::FlopKindName(static_cast<aggregate::FlopKind>(k))}});
  }
  for (const auto& f : ff.families) {
    if (f.achieved_per_second) {
      b.Add(M::kAchievedFlopsPerSecond, *f.achieved_per_second, {{"family", f.family}});
    }
  }
  // A lower bound is no gauge's value: absent, and the coverage says why.
  if (ff.coverage) b.Add(M::kFlopsCoverageRatio, *ff.coverage);
  if (ff.model_per_second && !ff.lower_bound) b.Add(M::kModelFlopsPerSecond, *ff.model_per_second);
  if (ff.mfu && !ff.lower_bound) b.Add(M::kMfuRatio, *ff.mfu);
  // Bytes: the raw sums per family (recording rules derive bandwidth and
  // intensity); no series for a family without a bytes model.
  const figures::ByteFigures& bf = w->bytes;
  for (const figures::FamilyByteFigures& f : bf.families) {
    b.Add(M::kFamilyBytesPerGpuStep, f.bytes_per_gpu_step, {{"family", f.family}});
    b.Add(M::kFamilyBytesModeledSecondsPerGpuStep, f.modeled_seconds_per_gpu_step,
          {{"family", f.family}});
  }
  if (bf.coverage) b.Add(M::kBytesCoverageRatio, *bf.coverage);
  if (bf.bytes_per_gpu_step && bf.peak_hbm_bytes_per_second) {
    b.Add(M::kPeakHbmBytesPerSecond, *bf.peak_hbm_bytes_per_second);
  }
}

void AddTraining(const snapshot::TrainingInfo& t, Builder& b) {
  if (t.last_step) b.Add(M::kTrainingStep, static_cast<double>(*t.last_step));
  if (t.last_step_seconds) b.Add(M::kTrainingStepSeconds, *t.last_step_seconds);
  if (t.steady_step_seconds) b.Add(M::kTrainingSteadyStepSeconds, *t.steady_step_seconds);
  if (t.tokens_per_second_per_device) {
    b.Add(M::kTrainingTokensPerSecondPerDevice, *t.tokens_per_second_per_device);
  }
  if (t.tflops_per_device) b.Add(M::kTrainingTflopsPerDevice, *t.tflops_per_device);
  if (t.mfu_ratio) b.Add(M::kTrainingMfuRatio, *t.mfu_ratio);
  if (t.loss) b.Add(M::kTrainingLoss, *t.loss);
  if (t.last_step_unix) b.Add(M::kTrainingLastStepTimestampSeconds, *t.last_step_unix);
}

}  // namespace

BuildInfo DefaultBuildInfo() { return BuildInfo{PROFWATCH_VERSION, BuildRevision()}; }

namespace {

void Render(const snapshot::Snapshot& snap, const BuildInfo& build, Builder& b) {
  b.SetDetail(snap.metrics_detail);
  b.SetRun(nullptr);
  b.Add(M::kBuildInfo, 1.0, {{"version", build.version}, {"revision", build.revision}});
  if (snap.shards > 0) {
    b.Add(M::kShardInfo, 1.0,
          {{"shard", std::to_string(snap.shard)}, {"shards", std::to_string(snap.shards)}});
  }
  b.Add(M::kWorkersBusy, static_cast<double>(snap.workers_busy));
  b.Add(M::kWorkersStuck, static_cast<double>(snap.workers_stuck));
  b.Add(M::kOldestWaitingWindowSeconds, snap.oldest_waiting_seconds);
  for (const auto& [key, n] : snap.owner_capped) {
    b.Add(M::kOwnerCapped, static_cast<double>(n), {{"owner", key.first}, {"reason", key.second}});
  }
  // 0 means no full scan has completed yet: no sample rather than 1970.
  if (snap.last_scan_unix > 0) b.Add(M::kLastScanTimestampSeconds, snap.last_scan_unix);
  for (const auto& [root, readable] : snap.watch_roots) {
    b.Add(M::kWatchRootReadable, readable ? 1.0 : 0.0, {{"root", root}});
  }
  // Pending windows per run: every exported run (0 when none), and runs
  // whose first window is still pending.
  for (const auto& [key, n] : snap.pending_by_run) {
    if (snap.runs.count(key) != 0) continue;
    b.SetRun(&key);
    b.Add(M::kPendingWindows, static_cast<double>(n));
  }
  for (const auto& [key, rs] : snap.runs) {
    b.SetRun(&key);
    auto pending = snap.pending_by_run.find(key);
    b.Add(M::kPendingWindows,
          pending == snap.pending_by_run.end() ? 0.0 : static_cast<double>(pending->second));
    // A run with a window renders its figures (computed when the window or
    // its step time changed: snapshot::RefreshFigures), never computes them.
    const WindowFigures* w = rs.has_window ? rs.figures.get() : nullptr;
    if (w != nullptr) AddWindow(rs, *w, b);
    if (!rs.window_failure.empty()) {
      b.Add(M::kWindowFailed, 1.0, {{"reason", rs.window_failure}});
    }
    AddStep(rs, w, b);
    AddTraining(rs.training, b);
    // Every exported run has it (0: unknown), so liveness never falls back
    // to the analysis time.
    b.Add(M::kRunActivityTimestampSeconds, rs.last_activity_unix);
  }
  b.SetRun(nullptr);
  const double too_long = static_cast<double>(b.capped());
  const double invalid = static_cast<double>(b.invalid_utf8());
  b.Add(M::kLabelValuesRewritten, invalid, {{"reason", "invalid_utf8"}});
  b.Add(M::kLabelValuesRewritten, too_long, {{"reason", "too_long"}});
}

}  // namespace

std::vector<prometheus::MetricFamily> RenderSnapshot(const snapshot::Snapshot& snap,
                                                     const BuildInfo& build) {
  Builder b;
  Render(snap, build, b);
  return std::move(b).Finish();
}

std::string RenderSnapshotText(const snapshot::Snapshot& snap, const BuildInfo& build) {
  Builder b(Builder::Output::kText);
  Render(snap, build, b);
  if (!b.repaired()) return std::move(b).FinishText();
  // A repaired label value may now equal another series: write again,
  // dropping repeats (kept apart so the common case keeps no series set).
  Builder again(Builder::Output::kText, /*dedupe=*/true);
  Render(snap, build, again);
  return std::move(again).FinishText();
}

SnapshotCollectable::SnapshotCollectable(std::shared_ptr<const snapshot::SnapshotStore> store,
                                         BuildInfo build)
    : store_(std::move(store)), build_(std::move(build)) {}

std::vector<prometheus::MetricFamily> SnapshotCollectable::Collect() const {
  // prometheus-cpp calls this from its HTTP handler; an exception here would
  // fail the whole scrape, including the daemon's own counters.
  try {
    std::shared_ptr<const snapshot::Snapshot> snap = store_->Current();
    if (!snap) return {};
    return RenderSnapshot(*snap, build_);
  } catch (const std::exception& e) {
    LogError("collect failed", {{"stage", "expose"}, {"reason", "internal"}, {"what", e.what()}});
    return {};
  }
}

}  // namespace profwatch::expose
