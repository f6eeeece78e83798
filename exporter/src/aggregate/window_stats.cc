#include "aggregate/window_stats.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "watch/layout.h"

namespace profwatch::aggregate {

std::string_view LauncherModeName(LauncherMode m) {
  switch (m) {
    case LauncherMode::kUnknown:
      return "unknown";
    case LauncherMode::kOneNodePerProcess:
      return "1-node/proc";
    case LauncherMode::kOneGpuPerProcess:
      return "1-GPU/proc";
    case LauncherMode::kMixed:
      return "mixed";
  }
  return "unknown";
}

LauncherMode LauncherModeFor(int gpus, int processes) {
  if (gpus <= 0 || processes <= 0) return LauncherMode::kUnknown;
  if (gpus >= 2 * processes) return LauncherMode::kOneNodePerProcess;
  if (gpus == processes) return LauncherMode::kOneGpuPerProcess;
  return LauncherMode::kMixed;
}

double WindowStats::PerGpuStepSeconds(int64_t ps) const {
  const int64_t d = divisor();
  if (d <= 0) return 0.0;
  return PsToSeconds(ps) / static_cast<double>(d);
}

double WindowStats::PerGpuStepCount(int64_t n) const {
  const int64_t d = divisor();
  if (d <= 0) return 0.0;
  return static_cast<double>(n) / static_cast<double>(d);
}

double WindowStats::PerStepSeconds(double ps) const {
  if (profile_steps <= 0) return 0.0;
  return ps * 1e-12 / profile_steps;
}

namespace {

int64_t SumOver(const std::vector<DeviceSummary>& devices, int64_t DeviceSummary::*field) {
  int64_t s = 0;
  for (const auto& d : devices) s += d.*field;
  return s;
}

}  // namespace

int64_t WindowStats::SumBusyPs() const { return SumOver(devices, &DeviceSummary::busy_ps); }
int64_t WindowStats::SumSpanPs() const { return SumOver(devices, &DeviceSummary::span_ps); }
int64_t WindowStats::SumKernelPs() const { return SumOver(devices, &DeviceSummary::kernel_ps); }
int64_t WindowStats::SumExposedCommPs() const {
  return SumOver(devices, &DeviceSummary::exposed_comm_ps);
}
int64_t WindowStats::SumComputeBusyPs() const {
  return SumOver(devices, &DeviceSummary::compute_busy_ps);
}

namespace {

// Median of a sorted, non-empty vector: the mean of the middle two if even.
double MedianOfSorted(const std::vector<int64_t>& v) {
  const size_t n = v.size();
  if (n % 2 == 1) return static_cast<double>(v[n / 2]);
  return (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2.0;
}

std::vector<int64_t> SortedComputeBusy(const std::vector<DeviceSummary>& devices) {
  std::vector<int64_t> v;
  v.reserve(devices.size());
  for (const auto& d : devices) v.push_back(d.compute_busy_ps);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

std::optional<Straggler> WindowStats::FindStraggler() const {
  if (devices.empty()) return std::nullopt;
  Straggler s;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].compute_busy_ps > devices[s.device].compute_busy_ps) s.device = i;
  }
  s.compute_busy_ps = devices[s.device].compute_busy_ps;
  s.host =
      watch::HostOfTraceFile(std::filesystem::path(devices[s.device].file).filename().string());
  s.median_compute_busy_ps = MedianOfSorted(SortedComputeBusy(devices));
  if (s.median_compute_busy_ps > 0) {
    s.ratio = static_cast<double>(s.compute_busy_ps) / s.median_compute_busy_ps;
  }
  return s;
}

BusyQuantiles WindowStats::ComputeBusyQuantiles() const {
  if (devices.empty()) return {};
  const std::vector<int64_t> v = SortedComputeBusy(devices);
  return BusyQuantiles{static_cast<double>(v.front()), MedianOfSorted(v),
                       static_cast<double>(v.back())};
}

// Numbered spans are grouped by step number; unnumbered spans (-1) are grouped
// by their position among their file's unnumbered spans (the k-th marker of
// every file is taken to be the same step). Per group the slowest span counts
// (a step ends when its slowest participant does); the median is over groups,
// the mean of the middle two for an even count.
double WindowStats::TraceStepSeconds() const {
  std::map<std::pair<int, int64_t>, int64_t> slowest;  // (numbered?0:1, key) -> ps
  std::map<uint32_t, int64_t> unnumbered_seen;
  for (const StepSpan& s : trace_steps) {
    std::pair<int, int64_t> key;
    if (s.step >= 0) {
      key = {0, s.step};
    } else {
      key = {1, unnumbered_seen[s.file]++};
    }
    auto [it, inserted] = slowest.emplace(key, s.dur_ps);
    if (!inserted) it->second = std::max(it->second, s.dur_ps);
  }
  if (slowest.empty()) return 0.0;
  std::vector<int64_t> v;
  v.reserve(slowest.size());
  for (const auto& [k, ps] : slowest) v.push_back(ps);
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n % 2 == 1) return PsToSeconds(v[n / 2]);
  return (PsToSeconds(v[n / 2 - 1]) + PsToSeconds(v[n / 2])) / 2.0;
}

}  // namespace profwatch::aggregate
