// profwatch-tracegen `jax-collectives`: one JAX profile window (<ts>/) whose
// communication kernels are collectives of every kind XLA emits on GPU, with
// known shapes, element types, replica groups and overlap with compute:
//
//   <host>.trace.json.gz  the trace as XLA's converter writes it: per GPU a
//                         /device:GPU:N process, a compute and an NCCL
//                         stream; every kernel carries hlo_module/hlo_op
//   <host>.xplane.pb      an XSpace with a /host:metadata plane holding the
//                         module's HloProto: the collective instructions
//                         with their operand and result shapes and
//                         replica groups (explicit lists and the iota form;
//                         collective-permute has none)
//
// Only the HLO says how many bytes a JAX collective moves and over how many
// devices (the trace names the instruction, nothing more). Per GPU and
// step, each call runs alone on the NCCL stream; a compute kernel covers
// exactly its first `overlap` part, so exposed = duration - overlap by
// construction. Times are whole nanoseconds. Deterministic in `seed`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace profwatch::tracegen {

struct JaxCollectiveParams {
  int gpus = 2;
  int steps = 3;
  uint64_t seed = 1;
  std::string host = "node0";
  // Hostile HLO (both 0 in a real module): empty tuple_shapes added to the
  // collective instructions' result shapes, and dimensions of 1 to their
  // first operands' shapes, each spread evenly over the instructions.
  int64_t empty_tuple_shapes = 0;
  int64_t extra_dims = 0;
};

// One array of an instruction's shape: the dtype's HLO name (bf16, f32),
// its xla PrimitiveType number and its dimensions.
struct JaxArray {
  std::string dtype;
  int64_t element_type = 0;
  std::vector<int64_t> dims;
};

// One collective instruction of the module, with the generator's own
// parameters and the sums over the window's GPUs and steps.
struct JaxCallTruth {
  std::string hlo_op;  // instruction name (the kernels' hlo_op)
  std::string opcode;
  std::string kernel;  // the kernel name written
  std::string kind;    // the kind a correct reader finds
  std::vector<JaxArray> operands;
  std::vector<JaxArray> outputs;  // the result's arrays, all-gather-start's operands left out
  std::string replica_groups;     // "list", "iota", or "" (none in the HLO)
  int64_t groups = -1, group_size = -1;  // -1: the HLO gives none
  uint64_t calls = 0;
  int64_t ps = 0;          // summed kernel time
  int64_t exposed_ps = 0;  // summed (duration - overlap with compute)
};

struct JaxCollectiveTruth {
  std::string module;  // hlo_module
  std::vector<JaxCallTruth> calls;
  int64_t kernel_launches = 0;  // all kernels, compute included
};

// Writes <dir>/<host>.trace.json.gz and <dir>/<host>.xplane.pb.
bool WriteJaxCollectiveWindow(const JaxCollectiveParams& p, const std::string& dir,
                              JaxCollectiveTruth* truth, std::string* error);

}  // namespace profwatch::tracegen
