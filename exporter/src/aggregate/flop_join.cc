// FlopJoin: see flop_join.h.
#include "aggregate/flop_join.h"

#include <algorithm>

#include "aggregate/aggregator.h"

namespace profwatch::aggregate {

using classify::FamilyId;

void FlopJoin::AddOperator(int64_t external_id, const OpFlops& flops, uint32_t thread,
                           int64_t start, int64_t end) {
  if (ops_.size() >= kMaxFlopLinks) {
    ++drops_["flop_op_limit"];
    return;
  }
  ops_[external_id] = flops;
  launches_.AddRange(LaunchJoin::kFlops, thread, start, end,
                     static_cast<uint32_t>(range_op_.size()));
  range_op_.push_back(external_id);
}

void FlopJoin::AddBytesOperator(int64_t external_id, const OpBytes& bytes, uint32_t thread,
                                int64_t start, int64_t end) {
  if (byte_ops_.size() >= kMaxFlopLinks) {
    ++drops_["bytes_op_limit"];
    return;
  }
  byte_ops_[external_id] = bytes;
  launches_.AddRange(LaunchJoin::kBytes, thread, start, end,
                     static_cast<uint32_t>(range_byte_op_.size()));
  range_byte_op_.push_back(external_id);
}

void FlopJoin::AddOperatorName(int64_t external_id, std::string_view name) {
  if (op_name_of_.size() >= kMaxFlopLinks) {
    ++drops_["flop_op_name_limit"];
    return;
  }
  bool added;
  const std::optional<uint32_t> id = op_names_.Intern(name, added);
  if (!id) {  // the name table's cap (name_table.h): the operator stays unnamed
    ++drops_["flop_op_name_limit"];
    return;
  }
  op_name_of_.emplace_back(external_id, *id);
}

void FlopJoin::AddKernel(int64_t external_id, int64_t ps, uint32_t name, int64_t correlation) {
  if (links_.size() < kMaxFlopLinks) {
    links_.push_back({external_id, correlation, ps, name, false, true});
  } else {
    ++drops_["flop_link_limit"];
  }
}

void FlopJoin::AddLaunchedKernel(int64_t correlation, int64_t ps, uint32_t name) {
  if (links_.size() < kMaxFlopLinks) {
    links_.push_back({correlation, correlation, ps, name, true, true});
  } else {
    ++drops_["flop_link_limit"];
  }
}

void FlopJoin::CountBytes(const std::vector<FamilyId>& family, const MathAccount& math,
                          FileStats& out) {
  if (byte_ops_.empty()) return;
  // (operator External id, index into links_) of every kernel that joins
  // an operator with a bytes model.
  std::vector<std::pair<int64_t, size_t>> joined;
  std::vector<uint32_t> open;
  for (size_t i = 0; i < links_.size(); ++i) {
    const KernelLink& l = links_[i];
    int64_t key = l.key;
    if (l.by_launch || !byte_ops_.contains(key)) {
      const int64_t launch = l.by_launch ? l.key : l.correlation;
      if (launch < 0 || (!l.by_launch && !math.is_math[l.name])) continue;
      if (!launches_.Enclosing(LaunchJoin::kBytes, launch, 1, &open) || open.empty()) continue;
      key = range_byte_op_[open.front()];
    }
    joined.emplace_back(key, i);
  }
  std::sort(joined.begin(), joined.end());
  std::map<FamilyId, ByteStats::Family> by_family;
  for (size_t i = 0; i < joined.size();) {
    const size_t begin = i;
    size_t end = i;
    int64_t longest = -1, longest_math = -1;
    uint32_t longest_name = 0, longest_math_name = 0;
    for (; end < joined.size() && joined[end].first == joined[i].first; ++end) {
      const KernelLink& l = links_[joined[end].second];
      if (l.ps > longest) {
        longest = l.ps;
        longest_name = l.name;
      }
      if (math.is_math[l.name] && l.ps > longest_math) {
        longest_math = l.ps;
        longest_math_name = l.name;
      }
    }
    const OpBytes& op = byte_ops_.at(joined[i].first);
    i = end;
    if (!op.known) {
      ++out.bytes.unknown_ops;
      continue;
    }
    // The family's own kernels of the operator: its kernels of other
    // families (a norm backward's reduction, a fill before attention's
    // backward) are their families' time, which this count must not claim.
    const FamilyId id = family[longest_math >= 0 ? longest_math_name : longest_name];
    ByteStats::Family& f = by_family[id];
    f.bytes += static_cast<double>(op.bytes);
    for (size_t k = begin; k < end; ++k) {
      const KernelLink& l = links_[joined[k].second];
      if (family[l.name] != id) continue;
      f.kernel_ps += l.ps;
      if (op.memory_bound && !math.is_math[l.name]) f.memory_bound_ps += l.ps;
    }
  }
  for (auto& [id, f] : by_family) out.byte_families.emplace_back(id, std::move(f));
}

void FlopJoin::Count(const std::vector<FamilyId>& family, MathAccount& math, FileStats& out) {
  if (links_.empty()) return;
  CountBytes(family, math, out);
  // Launched kernels: the innermost counted operator open at their launch.
  // Math kernels whose operator is no counted one: the counted operator
  // enclosing their launch, if any.
  std::vector<uint32_t> open;
  for (KernelLink& l : links_) {
    if (!l.by_launch) {
      if (l.correlation >= 0 && math.is_math[l.name] && !ops_.contains(l.key) &&
          launches_.Enclosing(LaunchJoin::kFlops, l.correlation, 1, &open) && !open.empty()) {
        l.key = range_op_[open.front()];
      }
      continue;
    }
    l.by_launch = false;
    if (launches_.Enclosing(LaunchJoin::kFlops, l.key, 1, &open) && !open.empty()) {
      l.key = range_op_[open.front()];
    } else {
      l.linked = false;
    }
  }
  std::sort(links_.begin(), links_.end(), [](const KernelLink& a, const KernelLink& b) {
    if (a.linked != b.linked) return a.linked;
    return a.key < b.key;
  });
  std::sort(op_name_of_.begin(), op_name_of_.end());
  auto op_name = [&](int64_t id) -> std::optional<std::string_view> {
    auto it = std::lower_bound(op_name_of_.begin(), op_name_of_.end(),
                               std::pair<int64_t, uint32_t>{id, 0});
    if (it == op_name_of_.end() || it->first != id) return std::nullopt;
    return op_names_[it->second];
  };
  std::map<FamilyId, FlopStats::Family> by_family;
  for (size_t i = 0; i < links_.size() && links_[i].linked;) {
    size_t end = i;
    int64_t ps = 0, longest = -1, longest_math = -1;
    uint32_t longest_name = 0, longest_math_name = 0;
    for (; end < links_.size() && links_[end].linked && links_[end].key == links_[i].key; ++end) {
      const KernelLink& l = links_[end];
      ps += l.ps;
      if (l.ps > longest) {
        longest = l.ps;
        longest_name = l.name;
      }
      if (math.is_math[l.name] && l.ps > longest_math) {
        longest_math = l.ps;
        longest_math_name = l.name;
      }
    }
    const int64_t id = links_[i].key;
    auto op = ops_.find(id);
    const bool counted = op != ops_.end() && op->second.known;
    const std::optional<std::string_view> name = counted ? std::nullopt : op_name(id);
    for (size_t k = i; k < end; ++k) {
      const KernelLink& l = links_[k];
      if (!math.is_math[l.name]) continue;
      if (counted) {
        math.counted_ps[l.name] += l.ps;
      } else if (name) {
        math.named_ps[l.name] += l.ps;
        math.operators[std::string(*name)] += l.ps;
      }
    }
    i = end;
    if (op == ops_.end()) continue;
    if (!op->second.known) {
      ++out.flops.unknown_ops;
      continue;
    }
    const auto k = static_cast<size_t>(op->second.kind);
    out.flops.flops[k] += static_cast<double>(op->second.flops);
    out.flops.kernel_ps[k] += ps;
    FlopStats::Family& f = by_family[family[longest_math >= 0 ? longest_math_name : longest_name]];
    f.flops += static_cast<double>(op->second.flops);
    f.kernel_ps += ps;
  }
  for (auto& [id, f] : by_family) out.flop_families.emplace_back(id, std::move(f));
}

}  // namespace profwatch::aggregate
