// profwatch-tracegen `kineto`: a PyTorch Kineto trace (one process, `gpus`
// devices) whose communication kernels are collectives of every kind with
// known sizes, dtypes, group sizes, process groups and overlap with
// compute, in the forms real traces take (tools/tracegen/README.md):
//
//   nccl     NCCL kernel names (ncclDevKernel_AllGather_RING_LL, ...) with
//            PyTorch 2.1+'s kernel args (Collective name, In/Out msg nelems,
//            Group size, dtype, Process Group Name/Description/Ranks) and a
//            record_param_comms operator carrying the same
//   rccl     RCCL's ncclDevKernel_Generic_1 for every call, same args
//   rccl-bare  the generic kernel with no collective args and no
//            record_param_comms: nothing says the kind or the size (`other`)
//   cpu-op   NCCL kernel names without collective args; only the
//            record_param_comms operator with the kernel's External id
//            carries them (Kineto before the args moved onto kernels)
//   old-nccl NCCL before ncclDevKernel_*: every collective's kernel is
//            ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t, no collective args,
//            no record_param_comms; the kind and shapes are in the nccl:*
//            operator that launched the kernel (and for _all_gather_base /
//            _reduce_scatter_base the group size only in the enclosing
//            c10d:: operator); a kernel's External id equals its
//            correlation id, as in older Kineto; one SendRecv kernel per
//            GPU and step has no launch in the window; compute kernels are
//            launched by aten::mm operators with shapes
//   deepep   expert-parallel token exchange of DeepEP (deep_ep::) and
//            DeepSeek's build of it (dpsk::ep::): dispatch and combine
//            kernels are all-to-alls, its notify kernels communication of
//            no modelled kind; no collective args, no operator with shapes
//            (unsized)
//   symm-mem all-reduces of PyTorch's symmetric memory
//            (multimem_all_reduce_kernel, one_shot_all_reduce_kernel) and
//            vLLM's custom all-reduce (cross_device_reduce_1stage) under
//            their operators with shapes, no collective args
//
// Per GPU and step, each call runs alone on the comm stream; a compute
// kernel on the compute stream covers exactly its first `overlap` part, so
// exposed = duration - overlap by construction. Times are whole
// nanoseconds. Deterministic in `seed`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace profwatch::tracegen {

enum class KinetoCommForm { kNccl, kRccl, kRcclBare, kCpuOp, kOldNccl, kSymmMem, kDeepEp };
// How the calls name their process group: each kind's own description
// (fsdp, tp, pp, ep, dp, default_pg), torch's "undefined", or no
// description/ranks args at all.
enum class PgDescForm { kNamed, kUndefined, kAbsent };

struct KinetoCollectiveParams {
  int gpus = 2;
  int steps = 3;
  uint64_t seed = 1;
  KinetoCommForm form = KinetoCommForm::kNccl;
  PgDescForm pg = PgDescForm::kNamed;
};

// One kind of call the file holds, with the generator's own parameters and
// the sums over the file's GPUs and steps.
struct KinetoCallTruth {
  std::string kernel;           // the kernel name written
  std::string collective_name;  // args "Collective name" ("" in rccl-bare)
  std::string kind;             // the kind a correct reader finds
  // The operators that launched it, outermost first (old-nccl, symm-mem).
  std::vector<std::string> launchers;
  // What a correct reader finds of the size: "" / -1 when the trace does
  // not say (old-nccl: the group size of most kinds; a kernel without its
  // launch: nothing).
  std::string dtype;
  int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  std::string pg_desc;  // "" when not in the trace
  std::string pg_ranks;
  uint64_t calls = 0;
  int64_t ps = 0;          // summed kernel time
  int64_t exposed_ps = 0;  // summed (duration - overlap with compute)
};

struct KinetoCollectiveTruth {
  std::vector<KinetoCallTruth> calls;
  int64_t kernel_launches = 0;  // all kernels, compute included
  // old-nccl: the compute kernels' aten::mm FLOPs, summed (0 otherwise).
  double matmul_flops = 0;
};

bool WriteKinetoCollectiveTrace(const KinetoCollectiveParams& p, const std::string& path,
                                KinetoCollectiveTruth* truth, std::string* error);

}  // namespace profwatch::tracegen
