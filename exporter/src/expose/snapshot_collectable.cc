#include "expose/snapshot_collectable.h"

#include <prometheus/metric_type.h>
#include <spdlog/spdlog.h>

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

#include "aggregate/collectives.h"
#include "aggregate/diagnosis.h"
#include "aggregate/flops.h"
#include "core/build_revision.h"
#include "expose/kernel_label.h"
#include "expose/metric_names.h"

namespace profwatch::expose {
namespace {

using aggregate::PsToSeconds;
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
  // of RenderSnapshotText, needed only after a label value was repaired).
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

  void SetRun(const snapshot::RunKey* key) {
    job_ = key ? Repaired(key->training_job) : std::string();
    run_ = key ? Repaired(key->run) : std::string();
    per_run_ = key != nullptr;
  }

  // `labels` are the metric's own labels, in metric_names.h order.
  void Add(std::string_view name, double value, Labels labels = {}) {
    prometheus::MetricFamily* f = Find(name);
    if (f == nullptr) return;  // unreachable for names in kMetrics (tested)
    if (output_ == Output::kText) {
      AddText(last_, "", value, labels);
      return;
    }
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
  void AddSummary(std::string_view name, std::initializer_list<std::pair<double, double>> quantiles,
                  double sum, uint64_t count) {
    prometheus::MetricFamily* f = Find(name);
    if (f == nullptr) return;
    if (output_ == Output::kText) {
      AddText(last_, "_count", static_cast<double>(count), {});
      AddText(last_, "_sum", sum, {});
      for (const auto& [q, v] : quantiles) {
        std::string qs;
        AppendValue(qs, q);
        AddText(last_, "", v, {{"quantile", qs}});
      }
      return;
    }
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
  prometheus::MetricFamily* Find(std::string_view name) {
    // Samples of one family mostly come in a row: try the last one first.
    if (families_[last_].name == name) return &families_[last_];
    for (size_t i = 0; i < families_.size(); ++i) {
      if (families_[i].name == name) {
        last_ = i;
        return &families_[i];
      }
    }
    return nullptr;
  }

  // Valid UTF-8, at most kMaxLabelValueBytes (a 100,000-byte directory
  // name must not reach Prometheus whole); shortened values are counted.
  std::string Repaired(std::string_view v) {
    std::string out;
    if (ValidUtf8Into(v, out)) {
      repaired_ = true;
      ++invalid_utf8_;
    }
    if (out.size() > kMaxLabelValueBytes) {
      out = CutUtf8(std::move(out), kMaxLabelValueBytes);
      repaired_ = true;  // two long values may now be one
      ++capped_;
    }
    return out;
  }

  // Two samples with one label set make Prometheus reject the whole scrape.
  // Distinct names (kernels, runs) can collide only once bad UTF-8 is
  // replaced, so this pass runs only after a replacement; the first sample
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
  std::vector<prometheus::MetricFamily> families_;
  size_t last_ = 0;           // index of the family Find() returned last
  bool repaired_ = false;     // some label value had bad UTF-8 replaced or was cut
  int64_t capped_ = 0;        // label values cut to kMaxLabelValueBytes
  int64_t invalid_utf8_ = 0;  // label values whose bad UTF-8 was replaced
  std::string job_, run_;
  bool per_run_ = false;
};

// Length of the well-formed UTF-8 sequence at s[i], or 0 (RFC 3629: no
// overlongs, no surrogates, nothing above U+10FFFF).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return n;
}

double Bool(bool b) { return b ? 1.0 : 0.0; }

// Per collective kind that ran (aggregate/collectives.h): per GPU per step,
// the window's bandwidths and the additive raw sums the recording rules
// divide across sidecars. Absent figures are not exported (never 0).
void AddCollectives(const aggregate::WindowStats& st, Builder& b) {
  for (const aggregate::CollectiveFigures& f :
       aggregate::ComputeCollectiveFigures(st.collectives, st.divisor())) {
    const std::string_view kind = aggregate::CollectiveKindName(f.kind);
    b.Add("profwatch_collective_seconds", f.kernel_seconds_per_gpu_step, {{"collective", kind}});
    b.Add("profwatch_collective_exposed_seconds", f.exposed_seconds_per_gpu_step,
          {{"collective", kind}});
    b.Add("profwatch_collective_calls", f.calls_per_gpu_step, {{"collective", kind}});
    if (f.bytes_per_gpu_step) {
      b.Add("profwatch_collective_bytes", *f.bytes_per_gpu_step, {{"collective", kind}});
    }
    if (f.alg_bandwidth) {
      b.Add("profwatch_collective_algorithm_bandwidth_bytes_per_second", *f.alg_bandwidth,
            {{"collective", kind}});
    }
    if (f.bus_bandwidth) {
      b.Add("profwatch_collective_bus_bandwidth_bytes_per_second", *f.bus_bandwidth,
            {{"collective", kind}});
    }
    const aggregate::CollectiveSums& s = st.collectives[f.kind];
    b.Add("profwatch_window_raw_collective_seconds", PsToSeconds(s.kernel_ps),
          {{"collective", kind}});
    b.Add("profwatch_window_raw_collective_exposed_seconds", PsToSeconds(s.exposed_ps),
          {{"collective", kind}});
    if (f.alg_bandwidth) {
      b.Add("profwatch_window_raw_collective_sized_bytes", s.bytes, {{"collective", kind}});
      b.Add("profwatch_window_raw_collective_sized_seconds", PsToSeconds(s.sized_ps),
            {{"collective", kind}});
    }
    if (f.bus_bandwidth) {
      b.Add("profwatch_window_raw_collective_bus_bytes", s.bus_bytes, {{"collective", kind}});
      b.Add("profwatch_window_raw_collective_bus_seconds", PsToSeconds(s.bus_ps),
            {{"collective", kind}});
    }
  }
}

// What the window is: GPUs, files, steps, events, drops, completeness.
void AddWindowShape(const snapshot::RunState& rs, Builder& b) {
  const aggregate::WindowStats& st = *rs.stats;
  b.Add("profwatch_window_gpus", st.gpus());
  if (rs.expected_gpus > 0) b.Add("profwatch_window_expected_gpus", rs.expected_gpus);
  b.Add("profwatch_window_trace_files", static_cast<double>(st.files.size()));
  b.Add("profwatch_window_timestamp_dirs", static_cast<double>(st.timestamp_dirs.size()));
  b.Add("profwatch_window_profile_steps", st.profile_steps);
  b.Add("profwatch_window_events", static_cast<double>(st.events));
  b.Add("profwatch_window_truncated", Bool(st.truncated));
  std::map<std::string, uint64_t> dropped;
  for (const auto& f : st.files) {
    for (const auto& [reason, n] : f.drops) dropped[reason] += n;
  }
  for (const auto& [reason, n] : dropped) {
    b.Add("profwatch_window_dropped_events", static_cast<double>(n), {{"reason", reason}});
  }
  b.Add("profwatch_window_incomplete", Bool(rs.incomplete));
  b.Add("profwatch_window_info", 1.0,
        {{"launcher_mode", aggregate::LauncherModeName(st.launcher_mode)},
         {"window", rs.window_id},
         {"format", rs.format}});
  b.Add("profwatch_window_analyzed_timestamp_seconds", rs.analyzed_unix);
}

// Per family per GPU per step: kernel time and launches, and its top kernels.
void AddFamilies(const aggregate::WindowStats& st, Builder& b) {
  for (const aggregate::FamilySummary& f : st.families) {
    b.Add("profwatch_family_kernel_seconds", st.PerGpuStepSeconds(f.total_ps),
          {{"family", f.family}});
  }
  for (const aggregate::FamilySummary& f : st.families) {
    b.Add("profwatch_family_kernel_launches", st.PerGpuStepCount(f.launches),
          {{"family", f.family}});
  }
  for (const aggregate::FamilySummary& f : st.families) {
    // Kernels whose short forms are equal are one series (their sum), largest first.
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
    for (const auto& [label, ps] : kernels) {
      b.Add("profwatch_kernel_seconds", st.PerGpuStepSeconds(ps),
            {{"family", f.family}, {"kernel", label}});
    }
  }
}

// Kernel sum, busy, idle, overlap and exposed communication per GPU per
// step, then each family's exclusive and idle-before time and kind.
void AddDecomposition(const aggregate::WindowStats& st, Builder& b) {
  const int64_t busy_ps = st.SumBusyPs();
  const int64_t span_ps = st.SumSpanPs();
  const int64_t exposed_ps = st.SumExposedCommPs();
  b.Add("profwatch_total_kernel_seconds", st.PerGpuStepSeconds(st.total_kernel_ps));
  b.Add("profwatch_gpu_busy_seconds", st.PerGpuStepSeconds(busy_ps));
  b.Add("profwatch_gpu_idle_seconds", st.PerGpuStepSeconds(span_ps - busy_ps));
  b.Add("profwatch_kernel_overlap_seconds", st.PerGpuStepSeconds(st.total_kernel_ps - busy_ps));
  b.Add("profwatch_exposed_comm_seconds", st.PerGpuStepSeconds(exposed_ps));
  for (const aggregate::FamilySummary& f : st.families) {
    b.Add("profwatch_family_exclusive_seconds", st.PerGpuStepSeconds(f.exclusive_ps),
          {{"family", f.family}});
  }
  for (const aggregate::FamilySummary& f : st.families) {
    b.Add("profwatch_family_idle_before_seconds", st.PerGpuStepSeconds(f.idle_before_ps),
          {{"family", f.family}});
  }
  for (const aggregate::FamilySummary& f : st.families) {
    b.Add("profwatch_family_info", 1.0,
          {{"family", f.family}, {"kind", classify::FamilyKindName(f.kind)}});
  }
}

// Kernel time by region, and the straggling GPU where one stands out.
void AddRegionsAndStraggler(const aggregate::WindowStats& st, Builder& b) {
  for (const aggregate::RegionSummary& r : st.regions) {
    b.Add("profwatch_region_kernel_seconds", st.PerGpuStepSeconds(r.kernel_ps),
          {{"region", r.region}});
  }
  if (st.regions_other_ps > 0) {
    b.Add("profwatch_region_kernel_seconds", st.PerGpuStepSeconds(st.regions_other_ps),
          {{"region", "other"}});
  }
  if (st.has_regions) b.Add("profwatch_region_coverage_ratio", st.region_coverage, {});
  if (auto straggler = st.FindStraggler(); straggler && st.profile_steps > 0) {
    // Per GPU already: only the steps divide.
    const aggregate::BusyQuantiles q = st.ComputeBusyQuantiles();
    b.AddSummary("profwatch_gpu_compute_busy_seconds",
                 {{0.0, st.PerStepSeconds(q.min_ps)},
                  {0.5, st.PerStepSeconds(q.median_ps)},
                  {1.0, st.PerStepSeconds(q.max_ps)}},
                 st.PerStepSeconds(static_cast<double>(st.SumComputeBusyPs())),
                 static_cast<uint64_t>(st.gpus()));
    b.Add("profwatch_straggler_ratio", straggler->ratio);
    b.Add("profwatch_straggler_info", 1.0,
          {{"host", straggler->host}, {"device", st.devices[straggler->device].device}});
  }
}

// The window's additive sums, undivided, for recording rules that add
// windows across sidecars before dividing.
void AddRawSums(const aggregate::WindowStats& st, Builder& b) {
  const int64_t busy_ps = st.SumBusyPs();
  const int64_t span_ps = st.SumSpanPs();
  const int64_t exposed_ps = st.SumExposedCommPs();
  for (const aggregate::FamilySummary& f : st.families) {
    b.Add("profwatch_window_raw_family_kernel_seconds", PsToSeconds(f.total_ps),
          {{"family", f.family}});
  }
  for (const aggregate::FamilySummary& f : st.families) {
    b.Add("profwatch_window_raw_family_kernel_launches", static_cast<double>(f.launches),
          {{"family", f.family}});
  }
  b.Add("profwatch_window_raw_kernel_seconds", PsToSeconds(st.total_kernel_ps));
  b.Add("profwatch_window_raw_gpu_busy_seconds", PsToSeconds(busy_ps));
  b.Add("profwatch_window_raw_gpu_span_seconds", PsToSeconds(span_ps));
  b.Add("profwatch_window_raw_exposed_comm_seconds", PsToSeconds(exposed_ps));
  b.Add("profwatch_window_raw_gpu_steps", static_cast<double>(st.divisor()));
}

void AddWindow(const snapshot::RunState& rs, Builder& b) {
  const aggregate::WindowStats& st = *rs.stats;
  AddWindowShape(rs, b);
  AddFamilies(st, b);
  AddDecomposition(st, b);
  AddRegionsAndStraggler(st, b);
  AddRawSums(st, b);
  AddCollectives(st, b);
}

void AddStep(const snapshot::RunState& rs, Builder& b) {
  if (rs.step_seconds) {
    // Both arms string_view: a mixed ternary would yield a temporary std::string.
    const std::string_view source =
        rs.step_source.empty() ? std::string_view("unknown") : std::string_view(rs.step_source);
    b.Add("profwatch_step_seconds", *rs.step_seconds, {{"source", source}});
  }
  if (!rs.has_window) return;
  // The diagnosis weighs blockers and the host stall against the step.
  const aggregate::WindowStats& st = *rs.stats;
  if (st.divisor() > 0) {
    const aggregate::Diagnosis dg = aggregate::Diagnose(st, rs.step_seconds, rs.step_source);
    for (const aggregate::Blocker& k : dg.blockers) {
      b.Add("profwatch_blocker_seconds", k.exclusive_seconds_per_gpu_step,
            {{"family", k.family}, {"kernel", ShortKernelName(k.kernel)}});
    }
    if (dg.host_stall) b.Add("profwatch_host_stall_seconds", dg.host_stall->seconds_per_step);
  }
  // The gap needs both a step time and a window with GPUs; without GPUs the
  // per-GPU kernel time is undefined, not zero.
  if (rs.step_seconds && rs.stats->divisor() > 0) {
    const double step = *rs.step_seconds;
    const double gap = step - rs.stats->PerGpuStepSeconds(rs.stats->total_kernel_ps);
    b.Add("profwatch_step_minus_kernel_seconds", gap);
    if (step > 0) b.Add("profwatch_step_minus_kernel_ratio", gap / step);
  }
  b.Add("profwatch_step_source_missing", Bool(!rs.step_seconds.has_value()));
  // Only the FLOP figures that could be computed: nothing counted, or an
  // impossible count, exports none (never 0).
  const aggregate::FlopFigures ff = aggregate::ComputeFlopFigures(*rs.stats, rs.step_seconds);
  if (ff.per_gpu_step) {
    for (size_t k = 0; k < ff.per_gpu_step->size(); ++k) {
      b.Add("profwatch_window_flops_per_gpu_step", (*ff.per_gpu_step)[k],
            {{"kind", aggregate::FlopKindName(static_cast<aggregate::FlopKind>(k))}});
    }
  }
  for (const auto& f : ff.families) {
    if (f.achieved_per_second) {
      b.Add("profwatch_achieved_flops_per_second", *f.achieved_per_second, {{"family", f.family}});
    }
  }
  // A lower bound is no gauge's value: absent, and the coverage says why.
  if (ff.coverage) b.Add("profwatch_flops_coverage_ratio", *ff.coverage);
  if (ff.model_per_second && !ff.lower_bound) {
    b.Add("profwatch_model_flops_per_second", *ff.model_per_second);
  }
  if (ff.mfu && !ff.lower_bound) b.Add("profwatch_mfu_ratio", *ff.mfu);
}

void AddTraining(const snapshot::TrainingInfo& t, Builder& b) {
  if (t.last_step) b.Add("profwatch_training_step", static_cast<double>(*t.last_step));
  if (t.last_step_seconds) b.Add("profwatch_training_step_seconds", *t.last_step_seconds);
  if (t.steady_step_seconds) {
    b.Add("profwatch_training_steady_step_seconds", *t.steady_step_seconds);
  }
  if (t.tokens_per_second_per_device) {
    b.Add("profwatch_training_tokens_per_second_per_device", *t.tokens_per_second_per_device);
  }
  if (t.tflops_per_device) b.Add("profwatch_training_tflops_per_device", *t.tflops_per_device);
  if (t.mfu_ratio) b.Add("profwatch_training_mfu_ratio", *t.mfu_ratio);
  if (t.loss) b.Add("profwatch_training_loss", *t.loss);
  if (t.last_step_unix) {
    b.Add("profwatch_training_last_step_timestamp_seconds", *t.last_step_unix);
  }
}

}  // namespace

bool ValidUtf8Into(std::string_view s, std::string& out) {
  // Label values are nearly always ASCII: one pass to check, one copy.
  size_t i = 0;
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  out.assign(s.data(), i);
  if (i == s.size()) return false;
  bool replaced = false;
  out.reserve(s.size());
  while (i < s.size()) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      replaced = true;
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return replaced;
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  ValidUtf8Into(s, out);
  return out;
}

BuildInfo DefaultBuildInfo() { return BuildInfo{PROFWATCH_VERSION, BuildRevision()}; }

namespace {

void Render(const snapshot::Snapshot& snap, const BuildInfo& build, Builder& b) {
  b.SetRun(nullptr);
  b.Add("profwatch_build_info", 1.0, {{"version", build.version}, {"revision", build.revision}});
  if (snap.shards > 0) {
    b.Add("profwatch_shard_info", 1.0,
          {{"shard", std::to_string(snap.shard)}, {"shards", std::to_string(snap.shards)}});
  }
  b.Add("profwatch_workers_busy", static_cast<double>(snap.workers_busy));
  b.Add("profwatch_workers_stuck", static_cast<double>(snap.workers_stuck));
  // 0 means no full scan has completed yet: no sample rather than 1970.
  if (snap.last_scan_unix > 0) {
    b.Add("profwatch_last_scan_timestamp_seconds", snap.last_scan_unix);
  }
  for (const auto& [root, readable] : snap.watch_roots) {
    b.Add("profwatch_watch_root_readable", readable ? 1.0 : 0.0, {{"root", root}});
  }
  // Pending windows per run: every exported run (0 when none), and runs
  // whose first window is still pending.
  for (const auto& [key, n] : snap.pending_by_run) {
    if (snap.runs.count(key) != 0) continue;
    b.SetRun(&key);
    b.Add("profwatch_pending_windows", static_cast<double>(n));
  }
  for (const auto& [key, rs] : snap.runs) {
    b.SetRun(&key);
    auto pending = snap.pending_by_run.find(key);
    b.Add("profwatch_pending_windows",
          pending == snap.pending_by_run.end() ? 0.0 : static_cast<double>(pending->second));
    if (rs.has_window) AddWindow(rs, b);
    if (!rs.window_failure.empty()) {
      b.Add("profwatch_window_failed", 1.0, {{"reason", rs.window_failure}});
    }
    AddStep(rs, b);
    AddTraining(rs.training, b);
    // Every exported run has it (0: unknown), so liveness never falls back
    // to the analysis time.
    b.Add("profwatch_run_activity_timestamp_seconds", rs.last_activity_unix);
  }
  b.SetRun(nullptr);
  const double too_long = static_cast<double>(b.capped());
  const double invalid = static_cast<double>(b.invalid_utf8());
  b.Add("profwatch_label_values_rewritten", invalid, {{"reason", "invalid_utf8"}});
  b.Add("profwatch_label_values_rewritten", too_long, {{"reason", "too_long"}});
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
    spdlog::error("collect failed stage=expose reason=internal what={}", e.what());
    return {};
  }
}

}  // namespace profwatch::expose
