// Internal to aggregate/. GraphKernels: what of one file needs its HLO
// modules. JAX kernels that carry an hlo_module (those of a CUDA graph, and
// scoped ones whose launch FLOPs the schedule knows) are kept as they arrive
// and placed by their module's launch schedule (graph_regions.h) when the
// file finishes; JAX collective calls kept by HLO instruction in the kernel
// table are sized from that instruction. One owner thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aggregate/file_stats.h"
#include "aggregate/graph_regions.h"
#include "aggregate/kernel_table.h"
#include "aggregate/limits.h"
#include "aggregate/name_table.h"
#include "classify/classifier.h"
#include "parse/hlo_schedule.h"

namespace profwatch::aggregate {

class GraphKernels {
 public:
  // `table` (names, scopes, drops) must outlive this.
  explicit GraphKernels(KernelTable& table) : table_(table) {}

  // false: no HLO modules can come, so kernels are only summed, not kept.
  void Keep(bool keep) { keep_ = keep; }
  // The compiled modules to place by; null: `missing` says why there are none.
  void SetModules(std::shared_ptr<const parse::HloIndex> index, std::string missing) {
    hlo_ = std::move(index);
    hlo_missing_ = std::move(missing);
  }
  // Kernels to place or collective calls to size were seen.
  bool Any() const { return !kernels_.empty() || unkept_ps_ > 0 || table_.hlo_collectives; }

  // The id of args.hlo_module: 0 = none. Without HLO modules to come
  // (Keep(false)) only whether there is one matters: kAnyModule, nothing
  // interned.
  static constexpr uint32_t kAnyModule = ~uint32_t{0};
  uint32_t ModuleId(std::string_view module);
  // The id of a collective kernel's args.hlo_op: index + 1.
  uint32_t HloOpId(std::string_view op);

  // Sizes the JAX collective calls the table kept by HLO instruction: bytes
  // and group size from the instruction in their module (parse::
  // HloCollective), by the nccl-tests rules of collectives.h. Calls whose
  // module or instruction is not in the index stay unsized.
  void SizeCollectives();

  // A kernel of module `module` (!= 0) on device `dev`; `scoped`: it has its
  // own args.name scope (placed for FLOPs only). Beyond kMaxGraphKernels
  // counted in drops["graph_kernel_limit"].
  void Add(int dev, uint32_t name, uint32_t module, bool scoped, int64_t start, int64_t end);

  // Gives unscoped kernels the scopes their module's schedule implies
  // (added to the table's scope_name_ps like args.name scopes), fills
  // `out.graph` and adds the placed launches' FLOPs to `out.flops` and
  // `out.flop_families` (`family` by name id), and the counted math
  // kernels' time to `math`. Frees the kept kernels.
  void Place(const std::vector<classify::FamilyId>& family, MathAccount& math, FileStats& out);

 private:
  struct Kernel {
    int64_t start = 0, end = 0;
    uint32_t name = 0, module = 0;  // module: ModuleId
    int dev = 0;
    bool scoped = false;  // has its own scope: placed for FLOPs only
  };
  // The kernels of one execution: their total time, the longest one, the
  // longest math kernel, and the math kernels in start order as runs of one
  // family (family, time).
  struct ExecutionKernels {
    int64_t ps = 0, longest = -1;
    uint32_t longest_name = 0, longest_math_name = 0;
    bool any_math = false;
    std::vector<std::pair<classify::FamilyId, int64_t>> runs;
  };
  ExecutionKernels KernelsOf(const GraphPlacement::Execution& e, size_t offset,
                             const std::vector<classify::FamilyId>& family,
                             const MathAccount& math) const;
  using FamilyFlops = std::map<classify::FamilyId, FlopStats::Family>;
  using FamilyBytes = std::map<classify::FamilyId, ByteStats::Family>;
  // The kernels [begin, end) of one (device, module).
  void PlaceGroup(size_t begin, size_t end, const std::vector<classify::FamilyId>& family,
                  MathAccount& math, FileStats& out, FamilyFlops& by_family,
                  FamilyBytes& bytes_by_family);
  // FLOPs of one execution of launches and its kernels' time: by kind when
  // one kind did them, else in the total only; by the family of the
  // kernels that ran them.
  void CountExecution(const parse::HloModuleSchedule& schedule, const GraphPlacement::Execution& e,
                      size_t offset, const std::vector<classify::FamilyId>& family,
                      MathAccount& math, FileStats& out, FamilyFlops& by_family);

  // Bytes of one execution of launches (bytes.h HloLaunchBytes) with its
  // kernels' time: per launch in the family of its math kernels where they
  // pair with the launches as for FLOPs, else in the family of its longest
  // kernel; not counted when a launch of it has no bytes
  // (out.bytes.unknown_ops).
  void CountExecutionBytes(const parse::HloModuleSchedule& schedule,
                           const GraphPlacement::Execution& e, size_t offset,
                           const std::vector<classify::FamilyId>& family, const MathAccount& math,
                           FileStats& out, FamilyBytes& by_family);

  uint32_t BoundedId(NameTable& table, std::string_view name, size_t max, uint32_t& other);

  KernelTable& table_;
  NameTable modules_;  // args.hlo_module values; ModuleId = index + 1
  NameTable hlo_ops_;  // collective kernels' args.hlo_op values; HloOpId = index + 1
  uint32_t other_module_ = 0, other_op_ = 0;  // the shared ids past the caps
  std::vector<Kernel> kernels_;
  bool keep_ = true;
  int64_t unkept_ps_ = 0;
  int64_t over_limit_ps_ = 0;  // beyond kMaxGraphKernels
  std::shared_ptr<const parse::HloIndex> hlo_;
  std::string hlo_missing_;  // why there is no index, when there is none
  // FLOPs of each launch of a module (HloLaunchFlops, -1: unusable shapes),
  // computed once per module.
  std::unordered_map<const parse::HloModuleSchedule*, std::vector<int64_t>> launch_flops_;
  // Bytes of each launch of a module (HloLaunchBytes, -1: none), likewise.
  std::unordered_map<const parse::HloModuleSchedule*, std::vector<int64_t>> launch_bytes_;
};

}  // namespace profwatch::aggregate
