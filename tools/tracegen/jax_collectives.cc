// profwatch-tracegen `jax-collectives`: see jax_collectives.h.
#include "jax_collectives.h"

#include <fstream>

#include "gen_util.h"
#include "xspace_writer.h"

namespace profwatch::tracegen {
namespace {

constexpr int64_t kBf16 = 16, kF32 = 11;  // xla PrimitiveType

JaxArray Bf16(std::vector<int64_t> dims) { return {"bf16", kBf16, std::move(dims)}; }
JaxArray F32(std::vector<int64_t> dims) { return {"f32", kF32, std::move(dims)}; }

// One collective instruction, called `per_step` times per GPU and step.
// `overlap_pct`: the share of each call a compute kernel covers.
struct CallSpec {
  const char* hlo_op;
  const char* opcode;
  const char* kernel;  // NCCL's kernel for it
  const char* kind;
  std::vector<JaxArray> operands, outputs;
  // Explicit groups (list), or iota_groups x iota_size (iota), or neither.
  std::vector<std::vector<int64_t>> list;
  int64_t iota_groups = 0, iota_size = 0;
  int per_step;
  int64_t base_ns;  // duration before jitter
  int overlap_pct;
};

constexpr const char* kSendRecv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";

// The kinds XLA's GPU collectives take; the all-reduce combines two arrays
// of different types (one call, both operands' bytes); the all-gather is
// the most exposed.
const std::vector<CallSpec>& Calls() {
  static const std::vector<CallSpec> calls = {
      {"all-gather-start.1",
       "all-gather-start",
       "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       "all_gather",
       {Bf16({1024, 512})},
       {Bf16({4096, 512})},
       {{0, 1, 2, 3}, {4, 5, 6, 7}},
       0,
       0,
       2,
       400000,
       10},
      {"reduce-scatter.3",
       "reduce-scatter",
       "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       "reduce_scatter",
       {F32({8192, 256})},
       {F32({1024, 256})},
       {},
       1,
       8,
       1,
       350000,
       50},
      {"all-reduce-start.2",
       "all-reduce-start",
       "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       "all_reduce",
       {Bf16({2048, 1024}), F32({4096})},
       {Bf16({2048, 1024}), F32({4096})},
       {},
       2,
       4,
       1,
       300000,
       60},
      {"all-to-all.4",
       "all-to-all",
       kSendRecv,
       "all_to_all",
       {Bf16({4, 512, 256})},
       {Bf16({4, 512, 256})},
       {{0, 1}, {2, 3}, {4, 5}, {6, 7}},
       0,
       0,
       1,
       200000,
       30},
      {"collective-permute-start.5",
       "collective-permute-start",
       kSendRecv,
       "send_recv",
       {Bf16({256, 1024})},
       {Bf16({256, 1024})},
       {},
       0,
       0,
       1,
       80000,
       0},
  };
  return calls;
}

// Compute kernels, alternating, each with its own instruction name.
constexpr const char* kCompute[][2] = {
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
     "segment_k_off_kernel__5x_cublas",
     "custom-call.9"},
    {"loop_add_fusion", "loop_add_fusion"},
};

constexpr const char* kModule = "jit_train_step";
constexpr int64_t kUs = 1000;  // ns
constexpr int64_t kStepNs = 6000 * kUs;
constexpr int64_t kGapNs = 30 * kUs;   // between calls on the NCCL stream
constexpr int64_t kLeadNs = 20 * kUs;  // compute kernel start before its call
constexpr int64_t kComputeStream = 7, kCommStream = 8;

// The module's HloProto: a parameter per operand, then the collectives.
// The hostile parameters (JaxCollectiveParams) add empty tuple shapes and
// dimensions of 1, spread evenly over the collective instructions.
std::string ModuleHlo(const JaxCollectiveParams& p) {
  namespace w = pb;
  auto shape = [](const JaxArray& a) { return w::HloArrayShape(a.element_type, a.dims); };
  const auto n = static_cast<int64_t>(Calls().size());
  auto share = [&](int64_t total, int64_t i) { return total / n + (i < total % n ? 1 : 0); };
  std::vector<std::string> instrs;
  std::vector<int64_t> order;
  int64_t id = 1;
  int64_t index = 0;
  for (const CallSpec& c : Calls()) {
    std::vector<int64_t> operand_ids;
    for (const JaxArray& a : c.operands) {
      std::string s = shape(a);
      if (operand_ids.empty()) {
        for (int64_t d = share(p.extra_dims, index); d > 0; --d) s += w::VarintField(3, 1);
      }
      instrs.push_back(w::HloInstr(id, "p" + std::to_string(id), "parameter", "") +
                       w::LenField(3, s));
      operand_ids.push_back(id);
      order.push_back(id++);
    }
    // The result: one array, or a tuple of them; an all-gather-start's and a
    // collective-permute-start's tuple holds the operands before the outputs.
    std::vector<std::string> leaves;
    const std::string op = c.opcode;
    if (op == "all-gather-start" || op == "collective-permute-start") {
      for (const JaxArray& a : c.operands) leaves.push_back(shape(a));
    }
    for (const JaxArray& a : c.outputs) leaves.push_back(shape(a));
    const int64_t empties = share(p.empty_tuple_shapes, index++);
    std::string result = leaves.size() == 1 && empties == 0 ? leaves[0] : w::HloTupleShape(leaves);
    for (int64_t e = 0; e < empties; ++e) result += w::LenField(4, "");
    std::string in = w::HloInstr(id, c.hlo_op, c.opcode, std::string("jit(train_step)/") + c.kind) +
                     w::LenField(3, result) + w::HloOperands(operand_ids);
    if (!c.list.empty()) in += w::HloReplicaGroups(c.list);
    if (c.iota_groups > 0) in += w::HloIotaReplicaGroups(c.iota_groups, c.iota_size);
    instrs.push_back(in);
    order.push_back(id++);
  }
  return w::HloModule(kModule, 1, {w::HloComputation(1, instrs)}, w::HloSequence(1, order));
}

}  // namespace

bool WriteJaxCollectiveWindow(const JaxCollectiveParams& p, const std::string& dir,
                              JaxCollectiveTruth* truth, std::string* error) {
  *truth = JaxCollectiveTruth{};
  truth->module = kModule;
  for (const CallSpec& c : Calls()) {
    JaxCallTruth t;
    t.hlo_op = c.hlo_op;
    t.opcode = c.opcode;
    t.kernel = c.kernel;
    t.kind = c.kind;
    t.operands = c.operands;
    t.outputs = c.outputs;
    if (!c.list.empty()) {
      t.replica_groups = "list";
      t.groups = static_cast<int64_t>(c.list.size());
      t.group_size = static_cast<int64_t>(c.list[0].size());
    } else if (c.iota_groups > 0) {
      t.replica_groups = "iota";
      t.groups = c.iota_groups;
      t.group_size = c.iota_size;
    }
    truth->calls.push_back(std::move(t));
  }

  std::string gpu;
  uint64_t rng = p.seed * 0x2545f4914f6cdd1dULL + 0x4a;
  const int64_t base_ns = 1000000 + static_cast<int64_t>(SplitMix(rng) % 1000) * kUs;
  size_t compute = 0;
  auto kernel = [&](int pid, int64_t stream, const std::string& name, const std::string& hlo_op,
                    int64_t ts, int64_t dur) {
    gpu += ",{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(stream) +
           ",\"ts\":" + MicrosText(ts) + ",\"dur\":" + MicrosText(dur) + ",\"name\":\"" + name +
           "\",\"args\":{\"hlo_module\":\"" + kModule + "\",\"hlo_op\":\"" + hlo_op + "\"}}";
    ++truth->kernel_launches;
  };
  for (int dev = 0; dev < p.gpus; ++dev) {
    const int pid = dev + 1;
    for (int k = 0; k < p.steps; ++k) {
      int64_t t = base_ns + k * kStepNs + 100 * kUs + dev * 1300;
      for (size_t v = 0; v < Calls().size(); ++v) {
        const CallSpec& c = Calls()[v];
        JaxCallTruth& tr = truth->calls[v];
        for (int n = 0; n < c.per_step; ++n) {
          const int64_t dur = c.base_ns + static_cast<int64_t>(SplitMix(rng) % 2000);
          const int64_t overlap = dur * c.overlap_pct / 100;
          // The compute kernel covering [t, t + overlap): it starts kLeadNs
          // before the call, after the previous call's end (kGapNs > kLeadNs).
          const auto& ck = kCompute[compute++ % std::size(kCompute)];
          kernel(pid, kComputeStream, ck[0], ck[1], t - kLeadNs, kLeadNs + overlap);
          kernel(pid, kCommStream, c.kernel, c.hlo_op, t, dur);
          ++tr.calls;
          tr.ps += dur * 1000;
          tr.exposed_ps += (dur - overlap) * 1000;
          t += dur + kGapNs;
        }
      }
    }
  }

  std::string head =
      "{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true},"
      "\"traceEvents\":[";
  for (int dev = 0; dev < p.gpus; ++dev) {
    const std::string pid = std::to_string(dev + 1);
    head += std::string(dev == 0 ? "" : ",") + "{\"ph\":\"M\",\"pid\":" + pid +
            ",\"name\":\"process_name\",\"args\":{\"name\":\"/device:GPU:" + std::to_string(dev) +
            "\"}}";
    for (const auto& [tid, name] : {std::pair{kComputeStream, "Stream #7(Compute)"},
                                    std::pair{kCommStream, "Stream #8(Nccl)"}}) {
      head += ",{\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + std::to_string(tid) +
              ",\"name\":\"thread_name\",\"args\":{\"name\":\"" + name + "\"}}";
    }
  }
  const std::string tail = "]}\n";
  const std::string base = dir + "/" + p.host;
  if (!WriteGzipParts(base + ".trace.json.gz", {&head, &gpu, &tail}, error)) return false;

  const std::string xplane = pb::MetadataPlane({ModuleHlo(p)});  // an XSpace of one plane
  std::ofstream out(base + ".xplane.pb", std::ios::binary | std::ios::trunc);
  out.write(xplane.data(), static_cast<std::streamsize>(xplane.size()));
  if (!out.flush()) {
    *error = "cannot write " + base + ".xplane.pb";
    return false;
  }
  return true;
}

}  // namespace profwatch::tracegen
