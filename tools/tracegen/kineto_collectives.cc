// profwatch-tracegen `kineto`: see kineto_collectives.h.
#include "kineto_collectives.h"

#include "gen_util.h"

namespace profwatch::tracegen {
namespace {

// One kind of call per step and GPU. `overlap_pct`: the share of the call
// a compute kernel covers (0: fully exposed, 100: fully hidden).
struct CallSpec {
  const char* kernel;  // NCCL's name for it
  const char* collective_name;
  const char* kind;
  const char* dtype;
  int64_t in_nelems, out_nelems, group_size;
  const char* pg_name;
  const char* pg_desc;
  const char* pg_ranks;
  int64_t base_ns;  // duration before jitter
  int overlap_pct;
};

constexpr const char* kSendRecv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
// The kernel name says SendRecv for all_to_allv, send, recv and gather: the
// metadata decides. all_gather is the most exposed (the dominant one).
constexpr CallSpec kCalls[] = {
    {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "allreduce",
     "all_reduce", "BFloat16", 4194304, 4194304, 8, "1", "dp", "[0, 1, 2, 3, 4, 5, 6, 7]", 300000,
     60},
    {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "_allgather_base",
     "all_gather", "BFloat16", 1048576, 8388608, 8, "2", "fsdp", "[0, 1, 2, 3, 4, 5, 6, 7]", 400000,
     10},
    {"ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "reduce_scatter_tensor_coalesced", "reduce_scatter", "Float", 8388608, 1048576, 8, "2", "fsdp",
     "[0, 1, 2, 3, 4, 5, 6, 7]", 350000, 50},
    {kSendRecv, "all_to_allv", "all_to_all", "BFloat16", 2097152, 2097152, 4, "3", "ep",
     "[0, 2, 4, 6]", 200000, 30},
    {kSendRecv, "send", "send_recv", "BFloat16", 524288, 524288, 2, "4", "pp", "[0, 4]", 80000, 0},
    {kSendRecv, "recv", "send_recv", "BFloat16", 524288, 524288, 2, "4", "pp", "[0, 4]", 80000, 0},
    {"ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "broadcast", "broadcast",
     "Float", 262144, 262144, 4, "5", "tp", "[0, 1, 2, 3]", 50000, 100},
    {"ncclDevKernel_Reduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "reduce", "reduce",
     "Float", 65536, 65536, 4, "5", "tp", "[0, 1, 2, 3]", 40000, 20},
    {kSendRecv, "gather", "other", "Float", 131072, 131072, 8, "1", "dp",
     "[0, 1, 2, 3, 4, 5, 6, 7]", 60000, 40},
};
constexpr const char* kRcclGeneric = "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)";
constexpr const char* kGemm =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
    "segment_k_off_kernel__5x_cublas";

constexpr int64_t kUs = 1000;  // ns
constexpr int64_t kStepNs = 5000 * kUs;
constexpr int64_t kGapNs = 30 * kUs;   // between calls on the comm stream
constexpr int64_t kLeadNs = 20 * kUs;  // compute kernel start before its call
constexpr int64_t kCpuPid = 3141;
constexpr int64_t kComputeStream = 7, kCommStream = 20;

// The collective args of a call, without the braces (leading comma).
std::string CommArgs(const CallSpec& c, PgDescForm pg) {
  std::string a = std::string(",\"Collective name\":\"") + c.collective_name +
                  "\",\"In msg nelems\":" + std::to_string(c.in_nelems) +
                  ",\"Out msg nelems\":" + std::to_string(c.out_nelems) +
                  ",\"Group size\":" + std::to_string(c.group_size) + ",\"dtype\":\"" + c.dtype +
                  "\",\"In split size\":\"[]\",\"Out split size\":\"[]\"";
  if (pg != PgDescForm::kAbsent) {
    a += std::string(",\"Process Group Name\":\"") + c.pg_name +
         "\",\"Process Group Description\":\"" +
         (pg == PgDescForm::kNamed ? c.pg_desc : "undefined") + "\",\"Process Group Ranks\":\"" +
         c.pg_ranks + "\"";
  }
  return a;
}

}  // namespace

bool WriteKinetoCollectiveTrace(const KinetoCollectiveParams& p, const std::string& path,
                                KinetoCollectiveTruth* truth, std::string* error) {
  *truth = KinetoCollectiveTruth{};
  const bool bare = p.form == KinetoCommForm::kRcclBare;
  const bool kernel_args = p.form == KinetoCommForm::kNccl || p.form == KinetoCommForm::kRccl;
  const bool op_args = !bare;  // record_param_comms carries them
  for (const CallSpec& c : kCalls) {
    KinetoCallTruth t;
    t.kernel = p.form == KinetoCommForm::kRccl || bare ? kRcclGeneric : c.kernel;
    t.kind = bare ? "other" : c.kind;
    if (!bare) {
      t.collective_name = c.collective_name;
      t.dtype = c.dtype;
      t.in_nelems = c.in_nelems;
      t.out_nelems = c.out_nelems;
      t.group_size = c.group_size;
      if (p.pg != PgDescForm::kAbsent) {
        t.pg_desc = p.pg == PgDescForm::kNamed ? c.pg_desc : "undefined";
        t.pg_ranks = c.pg_ranks;
      }
    }
    truth->calls.push_back(std::move(t));
  }

  std::string cpu, gpu;
  uint64_t rng = p.seed * 0x2545f4914f6cdd1dULL + 0x40;
  const int64_t base_ns = 4458676416431000LL + static_cast<int64_t>(SplitMix(rng) % 1000000) * kUs;
  int64_t external_id = 100, correlation = 5000;
  auto cpu_event = [&](const char* cat, const std::string& name, int64_t ts, int64_t dur,
                       const std::string& args) {
    cpu += "{\"ph\":\"X\",\"cat\":\"" + std::string(cat) + "\",\"name\":\"" + name +
           "\",\"pid\":" + std::to_string(kCpuPid) + ",\"tid\":" + std::to_string(kCpuPid) +
           ",\"ts\":" + MicrosText(ts) + ",\"dur\":" + MicrosText(dur) + ",\"args\":{" + args +
           "}},\n";
  };
  auto kernel = [&](int dev, int64_t stream, const std::string& name, int64_t ts, int64_t dur,
                    int64_t ext, int64_t corr, const std::string& extra) {
    gpu += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + name +
           "\",\"pid\":" + std::to_string(dev) + ",\"tid\":" + std::to_string(stream) +
           ",\"ts\":" + MicrosText(ts) + ",\"dur\":" + MicrosText(dur) +
           ",\"args\":{\"External id\":" + std::to_string(ext) +
           ",\"queued\":0,\"device\":" + std::to_string(dev) +
           ",\"context\":1,\"stream\":" + std::to_string(stream) +
           ",\"correlation\":" + std::to_string(corr) +
           ",\"registers per thread\":96,\"grid\":[8, 1, 1],\"block\":[544, 1, 1]" + extra +
           "}},\n";
    ++truth->kernel_launches;
  };
  for (int k = 0; k < p.steps; ++k) {
    const int64_t step_ns = base_ns + k * kStepNs;
    cpu_event("user_annotation", "ProfilerStep#" + std::to_string(k + 10), step_ns, kStepNs - kUs,
              "\"External id\":" + std::to_string(external_id++));
  }
  for (int dev = 0; dev < p.gpus; ++dev) {
    for (int k = 0; k < p.steps; ++k) {
      int64_t t = base_ns + k * kStepNs + 100 * kUs + dev * 1300;
      for (size_t v = 0; v < std::size(kCalls); ++v) {
        const CallSpec& c = kCalls[v];
        KinetoCallTruth& tr = truth->calls[v];
        const int64_t dur = c.base_ns + static_cast<int64_t>(SplitMix(rng) % 2000);
        const int64_t overlap = dur * c.overlap_pct / 100;
        const int64_t ext = external_id++, corr = correlation++;
        if (op_args) {
          cpu_event("cpu_op", "record_param_comms", t - 40 * kUs, 5 * kUs,
                    "\"External id\":" + std::to_string(ext) + ",\"Record function id\":0" +
                        CommArgs(c, p.pg));
        }
        cpu_event("cuda_runtime", "cudaLaunchKernelExC", t - 35 * kUs, 4 * kUs,
                  "\"External id\":" + std::to_string(ext) +
                      ",\"cbid\":430,\"correlation\":" + std::to_string(corr));
        // The compute kernel covering [t, t + overlap): it starts kLeadNs
        // before the call, after the previous call's end (kGapNs > kLeadNs).
        const int64_t cext = external_id++, ccorr = correlation++;
        kernel(dev, kComputeStream, kGemm, t - kLeadNs, kLeadNs + overlap, cext, ccorr, "");
        kernel(dev, kCommStream, tr.kernel, t, dur, ext, corr,
               kernel_args ? CommArgs(c, p.pg) : std::string());
        ++tr.calls;
        tr.ps += dur * 1000;
        tr.exposed_ps += (dur - overlap) * 1000;
        t += dur + kGapNs;
      }
    }
  }

  std::string meta;
  for (int dev = 0; dev < p.gpus; ++dev) {
    const std::string pid = std::to_string(dev);
    meta += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
            ",\"tid\":0,\"args\":{\"name\":\"python3.10\"}},\n"
            "{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":" +
            pid + ",\"tid\":0,\"args\":{\"labels\":\"GPU " + pid + "\"}},\n";
    for (int64_t s : {kComputeStream, kCommStream}) {
      meta += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
              ",\"tid\":" + std::to_string(s) + ",\"args\":{\"name\":\"stream " +
              std::to_string(s) + " \"}},\n";
    }
  }
  const std::string head =
      "{\"schemaVersion\":1,\"deviceProperties\":[],\"distributedInfo\":{\"backend\":\"nccl\","
      "\"rank\":0,\"world_size\":8},\"traceEvents\":[\n";
  const std::string tail =
      "{\"name\":\"Record Window End\",\"ph\":\"i\",\"s\":\"g\",\"pid\":\"\",\"tid\":\"\","
      "\"ts\":" +
      MicrosText(base_ns + p.steps * kStepNs) +
      "}],\"traceName\":\"profwatch-tracegen\",\"displayTimeUnit\":\"ms\","
      "\"baseTimeNanoseconds\":1711964646000000000}\n";
  return WriteGzipParts(path, {&head, &meta, &cpu, &gpu, &tail}, error);
}

}  // namespace profwatch::tracegen
