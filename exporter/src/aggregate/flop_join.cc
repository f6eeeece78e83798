// FlopJoin: see flop_join.h.
#include "aggregate/flop_join.h"

#include <algorithm>

#include "aggregate/aggregator.h"

namespace profwatch::aggregate {

using classify::FamilyId;

void FlopJoin::AddOperator(int64_t external_id, const OpFlops& flops) {
  if (ops_.size() >= FileAggregator::kMaxFlopLinks) {
    ++drops_["flop_op_limit"];
    return;
  }
  ops_[external_id] = flops;
}

void FlopJoin::AddKernel(int64_t external_id, int64_t ps, uint32_t name) {
  if (links_.size() < FileAggregator::kMaxFlopLinks) {
    links_.push_back({external_id, ps, name});
  } else {
    ++drops_["flop_link_limit"];
  }
}

void FlopJoin::Count(const std::vector<FamilyId>& family, FileStats& out) {
  if (ops_.empty() || links_.empty()) return;
  std::sort(links_.begin(), links_.end(),
            [](const KernelLink& a, const KernelLink& b) { return a.external_id < b.external_id; });
  std::map<FamilyId, FlopStats::Family> by_family;
  for (size_t i = 0; i < links_.size();) {
    size_t end = i;
    int64_t ps = 0, longest = -1;
    uint32_t longest_name = 0;
    for (; end < links_.size() && links_[end].external_id == links_[i].external_id; ++end) {
      ps += links_[end].ps;
      if (links_[end].ps > longest) {
        longest = links_[end].ps;
        longest_name = links_[end].name;
      }
    }
    auto op = ops_.find(links_[i].external_id);
    i = end;
    if (op == ops_.end()) continue;
    if (!op->second.known) {
      ++out.flops.unknown_ops;
      out.flops.unknown_kernel_ps += ps;
      continue;
    }
    const auto k = static_cast<size_t>(op->second.kind);
    out.flops.flops[k] += static_cast<double>(op->second.flops);
    out.flops.kernel_ps[k] += ps;
    FlopStats::Family& f = by_family[family[longest_name]];
    f.flops += static_cast<double>(op->second.flops);
    f.kernel_ps += ps;
  }
  for (auto& [id, f] : by_family) out.flop_families.emplace_back(id, std::move(f));
}

}  // namespace profwatch::aggregate
