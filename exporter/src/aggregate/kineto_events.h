// Internal to aggregate/. KinetoEvents: turns PyTorch Kineto complete events
// (those with a cat, nsys's excepted) into KernelTable entries (detection
// rules: aggregator.h): kernels, memory operations, ProfilerStep#N steps,
// gpu_user_annotation ranges, and the operators and kernel links of the
// FLOP join. One owner thread.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "aggregate/collectives.h"
#include "aggregate/flop_join.h"
#include "aggregate/kernel_table.h"
#include "parse/op_shape_reader.h"
#include "parse/trace_parser.h"

namespace profwatch::aggregate {

class KinetoEvents {
 public:
  // `table` and `flops` must outlive this.
  KinetoEvents(KernelTable& table, FlopJoin& flops) : table_(table), flops_(flops) {}

  // REQUIRES: e.ph == 'X', a non-empty name and cat.
  void OnComplete(const parse::TraceEvent& e);

 private:
  // A gpu_user_annotation range: a region for the kernels inside it.
  void OnAnnotation(const parse::TraceEvent& e);
  // A cpu_op with an External id: an operator whose FLOPs may be counted.
  void OnOperator(const parse::TraceEvent& e);
  // The device ordinal of a GPU event: args.device, else an integer pid.
  std::optional<int64_t> Ordinal(const parse::TraceEvent& e);
  // The table's device of an ordinal (created on first sight).
  int DeviceOf(int64_t ordinal);

  KernelTable& table_;
  FlopJoin& flops_;
  std::unordered_map<int64_t, int> devices_;  // ordinal -> device index
  size_t annotation_count_ = 0;
  CollectiveOps collective_ops_;    // record_param_comms metadata by External id
  parse::OpShapeReader op_shapes_;  // decodes counted operators' shapes
};

}  // namespace profwatch::aggregate
