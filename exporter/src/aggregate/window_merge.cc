// MergeWindow: combines a window's FileStats (file_stats.h) into its
// WindowStats, one file at a time (WindowMerge::AddFile), then the
// window-wide figures in named steps.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aggregate/aggregator.h"
#include "aggregate/bytes.h"
#include "aggregate/file_stats.h"
#include "aggregate/flops.h"
#include "aggregate/profile_steps.h"
#include "aggregate/region.h"
#include "watch/layout.h"

namespace profwatch::aggregate {

using classify::FamilyId;
using classify::FamilyKind;

namespace {

// Compares strings with digit runs as numbers: "/device:GPU:2" < "/device:GPU:10".
bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9';
    const bool db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && a[ie] >= '0' && a[ie] <= '9') ++ie;
      while (je < b.size() && b[je] >= '0' && b[je] <= '9') ++je;
      std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

// The `keep` largest (then by name) of `v`; all when keep is 0.
std::vector<RankedKernel> TopRanked(std::vector<RankedKernel> v, size_t keep) {
  auto larger = [](const RankedKernel& a, const RankedKernel& b) {
    if (a.ps != b.ps) return a.ps > b.ps;
    return a.name < b.name;
  };
  if (keep == 0 || keep > v.size()) keep = v.size();
  std::partial_sort(v.begin(), v.begin() + static_cast<ptrdiff_t>(keep), v.end(), larger);
  v.resize(keep);
  return v;
}

class WindowMerge {
 public:
  WindowMerge(const classify::Classifier& classifier, const AggregateOptions& options);
  // Adds the file at window position `fi`.
  void AddFile(size_t fi, const FileStats& fs);
  // The window's figures; call once, after every AddFile.
  WindowStats Finish();

 private:
  void AddKernels(const FileStats& fs);
  void AddFlops(const FileStats& fs);
  // The diagnosis lists: top exclusive, serial kernels, top idle-before.
  void RankKernels();
  // Each family's distinct and top kernels, and the window's kernel totals.
  void FinishFamilies();
  void FinishFlops();
  void FinishRegions();
  // Profile steps (profile_steps.h), launcher mode and GPUs per file.
  void FinishProcesses();

  const classify::Classifier& classifier_;
  const AggregateOptions& options_;
  const std::vector<std::string>& fam_names_;
  WindowStats w_;
  // Per family: its kernels by name (index into kernels_).
  std::vector<std::unordered_map<std::string_view, size_t>> index_;
  std::vector<std::vector<KernelSummary>> kernels_;
  std::set<std::string> ts_dirs_;
  std::vector<std::pair<size_t, DeviceSummary>> devices_;  // (file position, device)
  std::map<std::string, int64_t> region_ps_;
  std::map<FamilyId, FlopStats::Family> flop_families_;
  std::map<FamilyId, ByteStats::Family> byte_families_;
  std::map<std::pair<bool, std::string>, int64_t> uncounted_;  // (op?, name) -> math ps
};

WindowMerge::WindowMerge(const classify::Classifier& classifier, const AggregateOptions& options)
    : classifier_(classifier),
      options_(options),
      fam_names_(classifier.FamilyNames()),
      index_(fam_names_.size()),
      kernels_(fam_names_.size()) {
  w_.rule_set = classifier.RuleSetName();
  w_.families.resize(fam_names_.size());
  for (size_t f = 0; f < fam_names_.size(); ++f) {
    w_.families[f].family = fam_names_[f];
    w_.families[f].kind = classifier.KindOf(static_cast<FamilyId>(f));
  }
}

void WindowMerge::AddFile(size_t fi, const FileStats& fs) {
  w_.files.push_back(fs.summary);
  w_.events += fs.summary.events;
  w_.truncated = w_.truncated || fs.summary.suspected_truncated || fs.summary.partial;
  const std::filesystem::path parent = std::filesystem::path(fs.summary.path).parent_path();
  // A file directly in a <ts> dir names it; the profile layout owns the test.
  if (watch::ParseTimestampDirName(parent.filename().string())) ts_dirs_.insert(parent.string());
  for (const auto& d : fs.devices) devices_.emplace_back(fi, d);
  if (fs.idle_gpu_agents) {
    w_.idle_gpu_agents = w_.idle_gpu_agents.value_or(0) + *fs.idle_gpu_agents;
    for (const std::string& name : fs.idle_gpu_agent_names) {
      if (w_.idle_gpu_agent_names.size() >= kIdleGpuAgentNamesListed) break;
      w_.idle_gpu_agent_names.push_back(name);
    }
  }
  const auto file = static_cast<uint32_t>(w_.files.size() - 1);
  for (StepSpan s : fs.steps) {
    s.file = file;
    w_.trace_steps.push_back(s);
  }
  for (const auto& sc : fs.scopes) {
    w_.has_regions = true;
    std::string region = RegionOfScope(sc.scope, options_.region_depth);
    if (!region.empty()) region_ps_[std::move(region)] += sc.kernel_ps;
  }
  w_.has_regions = w_.has_regions || fs.annotated;
  for (const auto& a : fs.annotations) region_ps_[std::string(a.scope)] += a.kernel_ps;
  AddFlops(fs);
  w_.collectives.Merge(fs.collectives);
  w_.graph.kernel_ps += fs.graph.kernel_ps;
  w_.graph.placed_ps += fs.graph.placed_ps;
  if (w_.graph.unplaced.empty()) w_.graph.unplaced = fs.graph.unplaced;
  AddKernels(fs);
}

void WindowMerge::AddFlops(const FileStats& fs) {
  for (size_t k = 0; k < w_.flops.flops.size(); ++k) {
    w_.flops.flops[k] += fs.flops.flops[k];
    w_.flops.kernel_ps[k] += fs.flops.kernel_ps[k];
  }
  w_.flops.mixed_kernel_ps += fs.flops.mixed_kernel_ps;
  w_.flops.unknown_ops += fs.flops.unknown_ops;
  w_.flops.unknown_kernel_ps += fs.flops.unknown_kernel_ps;
  w_.flops.math_ps += fs.flops.math_ps;
  w_.flops.math_counted_ps += fs.flops.math_counted_ps;
  for (const FlopStats::Uncounted& u : fs.flops.uncounted) uncounted_[{u.op, u.name}] += u.ps;
  for (const auto& [id, f] : fs.flop_families) {
    FlopStats::Family& to = flop_families_[id];
    to.family = fam_names_[id];
    to.flops += f.flops;
    to.kernel_ps += f.kernel_ps;
  }
  if (w_.flops.device_name.empty()) w_.flops.device_name = fs.flops.device_name;
  for (const auto& [id, f] : fs.byte_families) {
    ByteStats::Family& to = byte_families_[id];
    to.family = fam_names_[id];
    to.bytes += f.bytes;
    to.kernel_ps += f.kernel_ps;
    to.memory_bound_ps += f.memory_bound_ps;
  }
  w_.bytes.unknown_ops += fs.bytes.unknown_ops;
  w_.bytes.memop_bytes += fs.bytes.memop_bytes;
  w_.bytes.memop_ps += fs.bytes.memop_ps;
  w_.bytes.memops += fs.bytes.memops;
  if (w_.bytes.absent.empty()) w_.bytes.absent = fs.bytes.absent;
}

void WindowMerge::AddKernels(const FileStats& fs) {
  for (const auto& k : fs.kernels) {
    // REQUIRES: Finish used the same classifier; ids beyond it are reclassified.
    FamilyId id = k.family < fam_names_.size() ? k.family : classifier_.Classify(k.name);
    FamilySummary& fam = w_.families[id];
    fam.launches += k.launches;
    fam.total_ps += k.total_ps;
    fam.exclusive_ps += k.exclusive_ps;
    fam.idle_before_ps += k.idle_before_ps;
    auto [it, inserted] = index_[id].emplace(k.name, kernels_[id].size());
    if (inserted) kernels_[id].push_back(KernelSummary{std::string(k.name), 0, 0, 0, 0});
    KernelSummary& ks = kernels_[id][it->second];
    ks.launches += k.launches;
    ks.total_ps += k.total_ps;
    ks.exclusive_ps += k.exclusive_ps;
    ks.idle_before_ps += k.idle_before_ps;
  }
}

void WindowMerge::RankKernels() {
  // The diagnosis lists rank every kernel of every family (memory excluded).
  std::vector<RankedKernel> by_exclusive, by_idle_before;
  for (size_t f = 0; f < fam_names_.size(); ++f) {
    if (w_.families[f].kind == FamilyKind::kMemory) continue;
    for (const KernelSummary& k : kernels_[f]) {
      if (k.exclusive_ps > 0) by_exclusive.push_back({k.name, fam_names_[f], k.exclusive_ps});
      if (k.idle_before_ps > 0) {
        by_idle_before.push_back({k.name, fam_names_[f], k.idle_before_ps});
      }
    }
  }
  w_.top_exclusive = TopRanked(std::move(by_exclusive), options_.top_kernels);
  for (size_t f = 0; f < fam_names_.size(); ++f) {
    const FamilyKind kind = w_.families[f].kind;
    if (kind == FamilyKind::kMemory || kind == FamilyKind::kMath) continue;
    for (const KernelSummary& k : kernels_[f]) {
      if (k.launches > 0 && 2 * k.exclusive_ps >= k.total_ps &&
          k.exclusive_ps >= kSerialCallPs * k.launches) {
        w_.serial_kernels.push_back(
            {k.name, fam_names_[f], k.launches, k.total_ps, k.exclusive_ps});
      }
    }
  }
  std::sort(w_.serial_kernels.begin(), w_.serial_kernels.end(),
            [](const SerialKernel& a, const SerialKernel& b) {
              if (a.exclusive_ps != b.exclusive_ps) return a.exclusive_ps > b.exclusive_ps;
              return a.name < b.name;
            });
  if (options_.top_kernels > 0 && w_.serial_kernels.size() > options_.top_kernels) {
    w_.serial_kernels.resize(options_.top_kernels);
  }
  w_.top_idle_before = TopRanked(std::move(by_idle_before), options_.top_kernels);
}

void WindowMerge::FinishFamilies() {
  for (size_t f = 0; f < fam_names_.size(); ++f) {
    FamilySummary& fam = w_.families[f];
    auto& ks = kernels_[f];
    fam.distinct_kernels = static_cast<int64_t>(ks.size());
    auto by_time = [](const KernelSummary& a, const KernelSummary& b) {
      if (a.total_ps != b.total_ps) return a.total_ps > b.total_ps;
      return a.name < b.name;
    };
    const size_t keep =
        options_.top_kernels == 0 ? ks.size() : std::min(options_.top_kernels, ks.size());
    std::partial_sort(ks.begin(), ks.begin() + static_cast<ptrdiff_t>(keep), ks.end(), by_time);
    ks.resize(keep);
    fam.top_kernels = std::move(ks);
    if (fam.kind != FamilyKind::kMemory) {
      w_.total_kernel_ps += fam.total_ps;
      w_.total_launches += fam.launches;
    }
  }
}

void WindowMerge::FinishFlops() {
  for (auto& [id, f] : flop_families_) w_.flops.families.push_back(std::move(f));
  std::vector<FlopStats::Uncounted>& u = w_.flops.uncounted;
  for (const auto& [key, ps] : uncounted_) u.push_back({key.second, key.first, ps});
  std::stable_sort(
      u.begin(), u.end(),
      [](const FlopStats::Uncounted& a, const FlopStats::Uncounted& b) { return a.ps > b.ps; });
  if (u.size() > kTopUncounted) u.resize(kTopUncounted);
  if (options_.peak_flops > 0) {
    w_.flops.peak_per_second = options_.peak_flops;
    w_.flops.peak_source = "--peak-flops";
  } else if (auto peak = DensePeakFlops(w_.flops.device_name)) {
    w_.flops.peak_per_second = *peak;
    w_.flops.peak_source = "datasheet";
  }
  for (auto& [id, f] : byte_families_) w_.bytes.families.push_back(std::move(f));
  if (!w_.bytes.families.empty() || w_.bytes.unknown_ops > 0) w_.bytes.absent.clear();
  if (options_.peak_hbm_bandwidth > 0) {
    w_.bytes.peak_hbm_bytes_per_second = options_.peak_hbm_bandwidth;
    w_.bytes.peak_hbm_source = "--peak-hbm-bandwidth";
  } else if (auto peak = PeakHbmBandwidth(w_.flops.device_name)) {
    w_.bytes.peak_hbm_bytes_per_second = peak->bytes_per_second;
    w_.bytes.peak_hbm_source = peak->source;
  }
}

void WindowMerge::FinishRegions() {
  int64_t region_total_ps = 0;
  for (const auto& [region, ps] : region_ps_) {
    w_.regions.push_back({region, ps});
    region_total_ps += ps;
  }
  w_.has_regions = w_.has_regions || w_.graph.kernel_ps > 0;
  w_.region_coverage = w_.total_kernel_ps > 0 ? static_cast<double>(region_total_ps) /
                                                    static_cast<double>(w_.total_kernel_ps)
                                              : 0.0;
  std::stable_sort(
      w_.regions.begin(), w_.regions.end(),
      [](const RegionSummary& a, const RegionSummary& b) { return a.kernel_ps > b.kernel_ps; });
  if (options_.top_regions > 0 && w_.regions.size() > options_.top_regions) {
    for (size_t i = options_.top_regions; i < w_.regions.size(); ++i) {
      w_.regions_other_ps += w_.regions[i].kernel_ps;
    }
    w_.regions.resize(options_.top_regions);
  }
}

void WindowMerge::FinishProcesses() {
  const ProfileStepsChoice steps = ChooseProfileSteps(
      options_.profile_steps_flag, options_.profile_steps_log, w_.files, w_.trace_steps);
  w_.profile_steps = steps.steps;
  w_.profile_steps_source = steps.source;
  w_.profile_steps_disagreement = steps.disagreement;
  const int nfiles = static_cast<int>(w_.files.size());
  // A process per file, except in nsys exports (a file per node holding
  // several processes) and rocprofv3 JSON (a process per tool entry): told
  // apart by the devices' pids.
  std::set<std::pair<std::string, int64_t>> nsys_processes;
  int processes = 0;
  for (const FileSummary& f : w_.files) {
    const bool by_pid =
        f.schema == parse::TraceSchema::kNsys || f.schema == parse::TraceSchema::kRocprof;
    processes += by_pid ? 0 : 1;
  }
  for (const DeviceSummary& d : w_.devices) {
    if (d.pid) nsys_processes.emplace(d.file, *d.pid);
  }
  processes += static_cast<int>(nsys_processes.size());
  w_.launcher_mode = LauncherModeFor(w_.gpus(), processes);
  w_.gpus_per_file = nfiles > 0 ? static_cast<double>(w_.gpus()) / nfiles : 0.0;
}

WindowStats WindowMerge::Finish() {
  RankKernels();
  FinishFamilies();
  std::stable_sort(devices_.begin(), devices_.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return NaturalLess(a.second.device, b.second.device);
  });
  for (auto& [fi, d] : devices_) w_.devices.push_back(std::move(d));
  w_.timestamp_dirs.assign(ts_dirs_.begin(), ts_dirs_.end());
  FinishFlops();
  FinishRegions();
  FinishProcesses();
  return std::move(w_);
}

}  // namespace

WindowStats MergeWindow(const std::vector<std::shared_ptr<FileStats>>& files,
                        const classify::Classifier& classifier, const AggregateOptions& options) {
  WindowMerge merge(classifier, options);
  for (size_t fi = 0; fi < files.size(); ++fi) {
    if (files[fi] != nullptr) merge.AddFile(fi, *files[fi]);
  }
  return merge.Finish();
}

}  // namespace profwatch::aggregate
