// GraphKernels: see graph_kernels.h.
#include "aggregate/graph_kernels.h"

#include <algorithm>
#include <array>

#include "aggregate/aggregator.h"
#include "aggregate/bytes.h"
#include "aggregate/collectives.h"
#include "aggregate/flops.h"

namespace profwatch::aggregate {

using classify::FamilyId;

// The id (index + 1) of `name` in `table`: cut past the name bound, and
// beyond `max` names one shared entry that no module or instruction has
// (its kernels stay unplaced, its calls unsized), counted as
// "hlo_name_limit".
uint32_t GraphKernels::BoundedId(NameTable& table, std::string_view name, size_t max,
                                 uint32_t& other) {
  if (auto id = table.Find(name)) return *id + 1;
  const size_t max_bytes = table_.window_names->limits().max_name_bytes;
  std::string cut;
  if (name.size() > max_bytes) {
    ++table_.drops["hlo_name_limit"];
    cut = CutName(name, max_bytes);
    name = cut;
    if (auto id = table.Find(name)) return *id + 1;
  }
  if (table.indexed() < max) {
    if (auto id = table.Add(name)) return *id + 1;
  }
  ++table_.drops["hlo_name_limit"];
  if (other == 0) other = table.AddUnindexed("(other)") + 1;
  return other;
}

uint32_t GraphKernels::ModuleId(std::string_view module) {
  if (module.empty()) return 0;
  if (!keep_) return kAnyModule;
  return BoundedId(modules_, module, kMaxModules, other_module_);
}

uint32_t GraphKernels::HloOpId(std::string_view op) {
  return BoundedId(hlo_ops_, op, kMaxHloOps, other_op_);
}

void GraphKernels::SizeCollectives() {
  if (!table_.hlo_collectives) return;
  for (KernelTable::Device& d : table_.devices) {
    for (auto& [name, n] : d.by_name) {
      if (!n.collective) continue;
      KernelTable::CollectiveSlot& slot = *n.collective;
      for (const auto& [key, calls_ps] : slot.by_hlo_op) {
        const auto& [calls, ps] = calls_ps;
        const parse::HloModuleSchedule* schedule =
            hlo_ ? hlo_->Find(modules_[static_cast<uint32_t>(key >> 32) - 1]) : nullptr;
        const parse::HloCollective* c = nullptr;
        if (schedule != nullptr) {
          auto it = schedule->collectives.find(hlo_ops_[static_cast<uint32_t>(key) - 1]);
          if (it != schedule->collectives.end()) c = &it->second;
        }
        std::optional<int64_t> bytes, ranks;
        if (c != nullptr) {
          // HloCollective counts bytes: elements of one byte each.
          bytes = CollectiveBytes(slot.kind, 1, c->in_bytes, c->out_bytes);
          if (c->group_size > 0) ranks = c->group_size;
        }
        slot.sums.AddSized(slot.kind, bytes, ranks, ps, calls);
      }
      slot.by_hlo_op.clear();
    }
  }
  table_.hlo_collectives = false;
}

void GraphKernels::Add(int dev, uint32_t name, uint32_t module, bool scoped, int64_t start,
                       int64_t end) {
  if (!keep_) {
    if (!scoped) unkept_ps_ += end - start;
  } else if (kernels_.size() < kMaxGraphKernels) {
    kernels_.push_back({start, end, name, module, dev, scoped});
  } else {
    ++table_.drops["graph_kernel_limit"];
    if (!scoped) over_limit_ps_ += end - start;
  }
}

GraphKernels::ExecutionKernels GraphKernels::KernelsOf(const GraphPlacement::Execution& e,
                                                       size_t offset,
                                                       const std::vector<FamilyId>& family,
                                                       const MathAccount& math) const {
  ExecutionKernels x;
  int64_t longest_math = -1;
  for (size_t k = offset + e.first_kernel; k < offset + e.end_kernel; ++k) {
    const Kernel& gk = kernels_[k];
    const int64_t d = gk.end - gk.start;
    x.ps += d;
    if (d > x.longest) {
      x.longest = d;
      x.longest_name = gk.name;
    }
    if (!math.is_math[gk.name]) continue;
    if (d > longest_math) {
      longest_math = d;
      x.longest_math_name = gk.name;
    }
    if (x.runs.empty() || x.runs.back().first != family[gk.name]) {
      x.runs.emplace_back(family[gk.name], 0);
    }
    x.runs.back().second += d;
  }
  x.any_math = longest_math >= 0;
  return x;
}

void GraphKernels::CountExecution(const parse::HloModuleSchedule& schedule,
                                  const GraphPlacement::Execution& e, size_t offset,
                                  const std::vector<FamilyId>& family, MathAccount& math,
                                  FileStats& out, FamilyFlops& by_family) {
  std::array<double, 2> flops{};
  std::vector<double> by_launch;  // FLOPs of each counted launch, schedule order
  bool any = false, unknown = false;
  auto [counted, added] = launch_flops_.try_emplace(&schedule);
  if (added) {
    for (const parse::HloLaunch& launch : schedule.launches) {
      counted->second.push_back(HloLaunchFlops(launch).value_or(-1));
    }
  }
  for (size_t l : e.launches) {
    const parse::HloLaunch& launch = schedule.launches[l];
    if (launch.flop_kind == parse::HloLaunch::Flops::kNone) continue;
    any = true;
    const int64_t launch_flops_count = counted->second[l];
    if (launch_flops_count < 0) {
      unknown = true;
      continue;
    }
    flops[launch.flop_kind == parse::HloLaunch::Flops::kMatmul ? 0 : 1] +=
        static_cast<double>(launch_flops_count);
    by_launch.push_back(static_cast<double>(launch_flops_count));
  }
  if (!any) return;
  const ExecutionKernels x = KernelsOf(e, offset, family, math);
  const int64_t ps = x.ps;
  const uint32_t longest_name = x.longest_name, longest_math_name = x.longest_math_name;
  const std::vector<std::pair<FamilyId, int64_t>>& runs = x.runs;
  if (unknown) {
    ++out.flops.unknown_ops;
    return;
  }
  for (size_t k = offset + e.first_kernel; k < offset + e.end_kernel; ++k) {
    const Kernel& gk = kernels_[k];
    if (math.is_math[gk.name]) math.counted_ps[gk.name] += gk.end - gk.start;
  }
  out.flops.flops[0] += flops[0];
  out.flops.flops[1] += flops[1];
  if (flops[0] > 0 && flops[1] > 0) {
    out.flops.mixed_kernel_ps += ps;
  } else {
    out.flops.kernel_ps[flops[0] > 0 ? 0 : 1] += ps;
  }
  // Each count in the family of the kernels that ran it: library calls
  // launch their kernels in schedule order, so when the math kernels form
  // one run of a family per counted launch, the launches pair with the runs
  // in order (a cuBLAS GEMM's kernel, then cuDNN attention's). Otherwise the
  // whole execution is in the family of its longest math kernel (else its
  // longest kernel). Either way the families sum to the total.
  if (by_launch.size() > 1 && runs.size() == by_launch.size()) {
    for (size_t i = 0; i < runs.size(); ++i) {
      FlopStats::Family& f = by_family[runs[i].first];
      f.flops += by_launch[i];
      f.kernel_ps += runs[i].second;
    }
    return;
  }
  FlopStats::Family& f = by_family[family[x.any_math ? longest_math_name : longest_name]];
  f.flops += flops[0] + flops[1];
  f.kernel_ps += ps;
}

void GraphKernels::CountExecutionBytes(const parse::HloModuleSchedule& schedule,
                                       const GraphPlacement::Execution& e, size_t offset,
                                       const std::vector<FamilyId>& family, const MathAccount& math,
                                       FileStats& out, FamilyBytes& by_family) {
  auto [counted, added] = launch_bytes_.try_emplace(&schedule);
  if (added) {
    counted->second.reserve(schedule.launches.size());
    for (const parse::HloLaunch& launch : schedule.launches) {
      counted->second.push_back(HloLaunchBytes(launch).value_or(-1));
    }
  }
  double bytes = 0;
  for (size_t l : e.launches) {
    if (counted->second[l] < 0) {
      ++out.bytes.unknown_ops;
      return;
    }
    bytes += static_cast<double>(counted->second[l]);
  }
  if (e.launches.empty()) return;
  const ExecutionKernels x = KernelsOf(e, offset, family, math);
  const int64_t longest = x.longest;
  const uint32_t longest_name = x.longest_name;
  const std::vector<std::pair<FamilyId, int64_t>>& runs = x.runs;
  if (longest < 0) return;
  // As for FLOPs (CountExecution): library calls launch their kernels in
  // schedule order, so when every launch is a math launch and the math
  // kernels form one run of a family per launch, each launch's bytes and
  // its run's time go to the run's family (a cuBLAS GEMM beside cuDNN
  // attention's backward keeps its bytes in gemm). Otherwise the whole
  // execution's bytes are in the family of its longest kernel. Either way a
  // family's time is only its own kernels' (ByteStats): the execution's
  // other kernels' time is their families', never this count's. XLA
  // launches have no memory-bound kind (memory_bound_ps stays 0).
  const bool all_math = std::all_of(e.launches.begin(), e.launches.end(), [&](size_t l) {
    return schedule.launches[l].flop_kind != parse::HloLaunch::Flops::kNone;
  });
  if (e.launches.size() > 1 && all_math && runs.size() == e.launches.size()) {
    for (size_t i = 0; i < runs.size(); ++i) {
      ByteStats::Family& f = by_family[runs[i].first];
      f.bytes += static_cast<double>(counted->second[e.launches[i]]);
      f.kernel_ps += runs[i].second;
    }
    return;
  }
  const FamilyId id = family[longest_name];
  ByteStats::Family& f = by_family[id];
  f.bytes += bytes;
  for (size_t k = offset + e.first_kernel; k < offset + e.end_kernel; ++k) {
    if (family[kernels_[k].name] == id) f.kernel_ps += kernels_[k].end - kernels_[k].start;
  }
}

void GraphKernels::Place(const std::vector<FamilyId>& family, MathAccount& math, FileStats& out) {
  GraphRegionStats& g = out.graph;
  g.kernel_ps = unkept_ps_ + over_limit_ps_;
  for (const Kernel& k : kernels_) g.kernel_ps += k.scoped ? 0 : k.end - k.start;
  if (g.kernel_ps == 0 && kernels_.empty()) return;
  if (over_limit_ps_ > 0) {
    g.unplaced = "more than " + std::to_string(kMaxGraphKernels) +
                 " kernels without a scope in the file: the later ones are not placed";
  }
  if (!hlo_ || unkept_ps_ > 0) {
    if (g.kernel_ps > 0) {
      g.unplaced = hlo_missing_.empty() ? "no HLO modules for this file" : hlo_missing_;
    }
    return;
  }
  FamilyFlops flop_by_family;
  FamilyBytes bytes_by_family;
  std::stable_sort(kernels_.begin(), kernels_.end(), [](const Kernel& a, const Kernel& b) {
    if (a.dev != b.dev) return a.dev < b.dev;
    if (a.module != b.module) return a.module < b.module;
    return a.start < b.start;
  });
  for (size_t begin = 0; begin < kernels_.size();) {
    size_t end = begin;
    while (end < kernels_.size() && kernels_[end].dev == kernels_[begin].dev &&
           kernels_[end].module == kernels_[begin].module) {
      ++end;
    }
    PlaceGroup(begin, end, family, math, out, flop_by_family, bytes_by_family);
    begin = end;
  }
  for (auto& [id, f] : flop_by_family) out.flop_families.emplace_back(id, std::move(f));
  for (auto& [id, f] : bytes_by_family) out.byte_families.emplace_back(id, std::move(f));
  std::vector<Kernel>().swap(kernels_);
}

void GraphKernels::PlaceGroup(size_t begin, size_t end, const std::vector<FamilyId>& family,
                              MathAccount& math, FileStats& out, FamilyFlops& by_family,
                              FamilyBytes& bytes_by_family) {
  GraphRegionStats& g = out.graph;
  const std::string module(modules_[kernels_[begin].module - 1]);
  const parse::HloModuleSchedule* schedule = hlo_->Find(module);
  if (schedule == nullptr) {
    const bool unscoped = std::any_of(kernels_.begin() + static_cast<ptrdiff_t>(begin),
                                      kernels_.begin() + static_cast<ptrdiff_t>(end),
                                      [](const Kernel& k) { return !k.scoped; });
    if (unscoped && g.unplaced.empty()) {
      auto skipped = hlo_->too_complex.find(module);
      g.unplaced = skipped != hlo_->too_complex.end()
                       ? "module " + module + " skipped: " + skipped->second
                       : "module " + module + " is not among the HLO modules";
    }
    return;
  }
  std::vector<std::string_view> group_names;
  for (size_t i = begin; i < end; ++i) group_names.push_back(table_.names[kernels_[i].name]);
  const GraphPlacement placed = aggregate::PlaceGraphKernels(*schedule, group_names);
  if (placed.gaps_over_budget && g.unplaced.empty()) {
    g.unplaced = "module " + module +
                 ": too_complex: kernels between its fusions' kernels wrap around the "
                 "schedule too often to place them all";
  }
  for (const GraphPlacement::Execution& e : placed.executions) {
    CountExecution(*schedule, e, begin, family, math, out, by_family);
    CountExecutionBytes(*schedule, e, begin, family, math, out, bytes_by_family);
  }
  for (size_t i = begin; i < end; ++i) {
    const Kernel& k = kernels_[i];
    const int32_t at = placed.scope[i - begin];
    if (at < 0 || k.scoped) continue;
    const size_t idx = static_cast<size_t>(at);
    const std::string& scope = idx < schedule->scopes.size()
                                   ? schedule->scopes[idx]
                                   : placed.shared_scopes[idx - schedule->scopes.size()];
    const uint32_t sid = table_.ScopeId(scope);
    if (sid == 0) continue;
    table_.AddScopeTime(sid, k.name, k.end - k.start);
    g.placed_ps += k.end - k.start;
  }
}

}  // namespace profwatch::aggregate
