// Scopes for kernels that ran inside a CUDA graph (XLA command buffer),
// from their module's launch schedule (parse/hlo_schedule.h). Pure
// functions; thread-safe.
//
// The kernels of one device and one module, in start order, are laid over
// the schedule, which repeats once per profiled step:
//  1. Anchors: a kernel whose name has the base of a fusion's kernel
//     (KernelBaseOfKernel == HloLaunch::kernel_base) takes the next such
//     fusion at or after the previous anchor's position, wrapping to the
//     schedule's start (the next step) when none is left.
//  2. Kernels between two anchors (library kernels: cuBLAS, cuDNN, NCCL, and
//     names no fusion explains) belong to the launches strictly between the
//     anchors' positions. When those are library calls only and as many as
//     the kernels, each call launched one kernel (every call launches at
//     least one), so they pair in order. Otherwise the kernels get the scope
//     all those launches share (their common prefix): exact, if coarser.
//     An opaque launch (a loop or conditional whose kernels are not in the
//     order) between them, or kernels before the first or after the last
//     anchor, leave them without a scope. Nothing is guessed.
// The work is bounded: anchors cost a binary search each, and the gaps
// together walk at most kGapWorkPerItem x (launches + kernels) launches (a
// steady capture walks each step's schedule about once). Gaps beyond that
// (kernels crafted to wrap around the schedule at every other kernel) stay
// without a scope, and `gaps_over_budget` says so.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "parse/hlo_schedule.h"

namespace profwatch::aggregate {

struct GraphPlacement {
  // Per kernel: an index into the schedule's scopes, then into
  // `shared_scopes` (index - scopes.size()); -1 = no scope.
  std::vector<int32_t> scope;
  std::vector<std::string> shared_scopes;  // common prefixes of several launches
  // Kernels that together are one execution of some launches: an anchor and
  // its fusion, a library kernel paired with its call, or all the kernels
  // between two anchors with the library calls there (when nothing else
  // runs between them). FLOPs count once per group.
  struct Execution {
    size_t first_kernel = 0, end_kernel = 0;  // [first, end)
    std::vector<size_t> launches;             // positions in the schedule
  };
  std::vector<Execution> executions;
  size_t anchors = 0;   // kernels placed by their name
  size_t gap_work = 0;  // launches the gaps walked
  bool gaps_over_budget = false;
};

inline constexpr size_t kGapWorkPerItem = 4;

GraphPlacement PlaceGraphKernels(const parse::HloModuleSchedule& schedule,
                                 const std::vector<std::string_view>& kernels);

}  // namespace profwatch::aggregate
