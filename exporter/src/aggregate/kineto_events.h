// Internal to aggregate/. KinetoEvents: turns PyTorch Kineto complete events
// (those with a cat, nsys's excepted) into KernelTable entries (detection
// rules: aggregator.h): kernels, memory operations, ProfilerStep#N steps,
// gpu_user_annotation ranges, and the operators and kernel links of the
// FLOP join. One owner thread.
//
// A communication kernel's collective (kind, bytes, group) comes from, in
// order: its own args (Collective name, PyTorch 2.1 and later); the
// record_param_comms operator with its External id; the operators that
// launched it (kernel args.correlation -> the cuda_runtime launch with that
// correlation -> on that thread, the innermost enclosing nccl:*, c10d::*,
// symm_mem::* ... operators: collectives.h CollectiveCallOfLaunchers);
// its name, last. Kernels whose name may be a collective's wait for the
// file's end, since Kineto writes launches after their kernels. An External
// id equal to the kernel's correlation id is no operator's (older Kineto)
// and joins nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "aggregate/collectives.h"
#include "aggregate/flop_join.h"
#include "aggregate/kernel_table.h"
#include "aggregate/launch_join.h"
#include "aggregate/limits.h"
#include "parse/op_shape_reader.h"
#include "parse/trace_parser.h"

namespace profwatch::aggregate {

class KinetoEvents {
 public:
  // `table`, `flops` and `launches` must outlive this.
  KinetoEvents(KernelTable& table, FlopJoin& flops, LaunchJoin& launches)
      : table_(table), flops_(flops), launches_(launches) {}

  // REQUIRES: e.ph == 'X', a non-empty name and cat.
  void OnComplete(const parse::TraceEvent& e);

  // The file ended: gives each held kernel its collective and adds it to
  // the table. Call once, before the table is finished.
  void Finish();

 private:
  struct HeldKernel {
    int64_t start = 0, end = 0, stream = 0, correlation = 0;
    std::optional<int64_t> external_id;  // trusted only
    uint32_t name = 0;
    int dev = 0;
  };
  // A gpu_user_annotation range: a region for the kernels inside it.
  void OnAnnotation(const parse::TraceEvent& e);
  // A host event: operators (FLOPs, collectives), launches, steps.
  void OnHost(const parse::TraceEvent& e);
  void OnKernel(const parse::TraceEvent& e, int dev, int64_t stream, int64_t start, int64_t end);
  // A cpu_op with an External id: an operator whose FLOPs may be counted.
  void OnOperator(const parse::TraceEvent& e, uint32_t thread, int64_t start, int64_t end);
  // The device ordinal of a GPU event: args.device, else an integer pid.
  std::optional<int64_t> Ordinal(const parse::TraceEvent& e);
  // The table's device of an ordinal (created on first sight).
  int DeviceOf(int64_t ordinal);
  // Whether a kernel name may be a collective's (by name id, cached): NCCL,
  // RCCL, symmetric memory, custom all-reduces.
  bool MaybeCollective(uint32_t name);
  // The collective of a held kernel (see the file comment).
  CollectiveCall CallOf(const HeldKernel& k);

  KernelTable& table_;
  FlopJoin& flops_;
  LaunchJoin& launches_;
  std::unordered_map<int64_t, int> devices_;  // ordinal -> device index
  size_t annotation_count_ = 0;
  CollectiveOps collective_ops_;             // record_param_comms metadata by External id
  parse::OpShapeReader op_shapes_;           // decodes counted operators' shapes
  std::vector<CollectiveOpCall> launchers_;  // LaunchJoin kCollective payload -> call
  std::vector<HeldKernel> held_;
  std::vector<int8_t> maybe_collective_;  // by name id: -1 unknown, 0, 1
};

}  // namespace profwatch::aggregate
