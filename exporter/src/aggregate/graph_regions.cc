#include "aggregate/graph_regions.h"

#include <algorithm>
#include <unordered_map>

namespace profwatch::aggregate {
namespace {

using Kind = parse::HloLaunch::Kind;

struct Gap {
  size_t first_kernel, end_kernel;  // kernels [first, end)
  size_t from, length;              // launches from, from+1, ... (mod n)
};

void FillGap(const parse::HloModuleSchedule& s, const Gap& g, GraphPlacement& out) {
  const size_t n = s.launches.size();
  std::vector<uint32_t> library;   // scopes of the library calls, in order
  std::vector<size_t> library_at;  // and their positions
  std::vector<std::string_view> scopes;
  bool fusion = false;
  for (size_t i = 0; i < g.length; ++i) {
    const parse::HloLaunch& l = s.launches[(g.from + i) % n];
    if (l.kind == Kind::kOpaque) return;
    if (l.kind == Kind::kLibrary) {
      library.push_back(l.scope);
      library_at.push_back((g.from + i) % n);
    }
    fusion = fusion || l.kind == Kind::kFusion;
    scopes.push_back(s.scopes[l.scope]);
  }
  if (scopes.empty()) return;
  const size_t kernels = g.end_kernel - g.first_kernel;
  if (!fusion && library.size() == kernels) {
    for (size_t k = 0; k < kernels; ++k) {
      out.scope[g.first_kernel + k] = static_cast<int32_t>(library[k]);
      out.executions.push_back({g.first_kernel + k, g.first_kernel + k + 1, {library_at[k]}});
    }
    return;
  }
  // Only library calls ran here: the kernels together executed them once.
  if (!fusion && !library_at.empty()) {
    out.executions.push_back({g.first_kernel, g.end_kernel, library_at});
  }
  std::string shared = parse::CommonScope(scopes);
  if (shared.empty()) return;
  int32_t id = -1;
  for (size_t i = 0; i < s.scopes.size() && id < 0; ++i) {
    if (s.scopes[i] == shared) id = static_cast<int32_t>(i);
  }
  if (id < 0) {
    auto it = std::find(out.shared_scopes.begin(), out.shared_scopes.end(), shared);
    id = static_cast<int32_t>(s.scopes.size() + (it - out.shared_scopes.begin()));
    if (it == out.shared_scopes.end()) out.shared_scopes.push_back(std::move(shared));
  }
  for (size_t k = g.first_kernel; k < g.end_kernel; ++k) out.scope[k] = id;
}

}  // namespace

GraphPlacement PlaceGraphKernels(const parse::HloModuleSchedule& schedule,
                                 const std::vector<std::string_view>& kernels) {
  GraphPlacement out;
  out.scope.assign(kernels.size(), -1);
  const size_t n = schedule.launches.size();
  if (n == 0) return out;
  std::unordered_map<std::string_view, std::vector<size_t>> by_base;  // positions, ascending
  for (size_t i = 0; i < n; ++i) {
    const parse::HloLaunch& l = schedule.launches[i];
    if (l.kind == Kind::kFusion) by_base[l.kernel_base].push_back(i);
  }
  std::vector<int64_t> position(kernels.size(), -1);
  size_t next = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    auto it = by_base.find(parse::KernelBaseOfKernel(kernels[k]));
    if (it == by_base.end()) continue;
    const std::vector<size_t>& at = it->second;
    auto q = std::lower_bound(at.begin(), at.end(), next);
    const size_t pos = q != at.end() ? *q : at.front();  // none left: the next step
    position[k] = static_cast<int64_t>(pos);
    out.scope[k] = static_cast<int32_t>(schedule.launches[pos].scope);
    out.executions.push_back({k, k + 1, {pos}});
    next = pos + 1;
    ++out.anchors;
  }
  const size_t budget = kGapWorkPerItem * (n + kernels.size());
  int64_t previous = -1;  // the last anchor kernel
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (position[k] < 0) continue;
    if (previous >= 0 && k - static_cast<size_t>(previous) > 1) {
      const size_t from = static_cast<size_t>(position[static_cast<size_t>(previous)] + 1) % n;
      const size_t to = static_cast<size_t>(position[k]);
      const size_t length = (to + n - from) % n;
      if (out.gap_work + length > budget) {
        out.gaps_over_budget = true;
        break;
      }
      out.gap_work += length;
      FillGap(schedule, Gap{static_cast<size_t>(previous) + 1, k, from, length}, out);
    }
    previous = static_cast<int64_t>(k);
  }
  return out;
}

}  // namespace profwatch::aggregate
