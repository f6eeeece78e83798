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

// A host operator enclosing a launch: its name, Input Dims and Input type
// (raw JSON arrays; empty: not written).
struct Launcher {
  const char* name;
  std::string dims, types;
};

// One kind of call as a form writes it.
struct CallDef {
  std::string kernel;
  const CallSpec* spec = nullptr;   // sizes, process group, duration, overlap
  std::vector<Launcher> launchers;  // outermost first
  bool orphan = false;              // no launch event in the window
  KinetoCallTruth truth;
};

// Kineto's C++ type name of a dtype arg value.
const char* TorchType(const char* dtype) {
  return std::string_view(dtype) == "Float" ? "float" : "c10::BFloat16";
}

std::string Dims1(int64_t n) { return "[" + std::to_string(n) + "]"; }

constexpr const char* kOldKernel = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)";

// old-nccl: each call under its nccl:* operator (input only), the base
// collectives also under c10d's operator (output, input).
std::vector<CallDef> OldNcclCalls() {
  std::vector<CallDef> out;
  for (const CallSpec& c : kCalls) {
    CallDef d;
    d.kernel = kOldKernel;
    d.spec = &c;
    const std::string kind = c.kind;
    const std::string t = std::string("\"") + TorchType(c.dtype) + "\"";
    const std::string name = c.collective_name;
    const char* nccl = "nccl:all_reduce";
    if (kind == "all_gather") nccl = "nccl:_all_gather_base";
    if (kind == "reduce_scatter") nccl = "nccl:_reduce_scatter_base";
    if (kind == "all_to_all") nccl = "nccl:all_to_all";
    if (name == "send") nccl = "nccl:send";
    if (name == "recv") nccl = "nccl:recv";
    if (kind == "broadcast") nccl = "nccl:broadcast";
    if (kind == "reduce") nccl = "nccl:reduce";
    if (name == "gather") nccl = "nccl:gather";
    if (kind == "all_gather") {
      d.launchers.push_back({"c10d::_allgather_base_",
                             "[" + Dims1(c.out_nelems) + ", " + Dims1(c.in_nelems) + ", [], []]",
                             "[" + t + ", " + t +
                                 ", \"__torch__.torch.classes.c10d.ProcessGroup\", "
                                 "\"bool\"]"});
    }
    if (kind == "reduce_scatter") {
      d.launchers.push_back(
          {"c10d::_reduce_scatter_base_",
           "[" + Dims1(c.out_nelems) + ", " + Dims1(c.in_nelems) + ", [], [], []]",
           "[" + t + ", " + t +
               ", \"__torch__.torch.classes.c10d.ProcessGroup\", "
               "\"__torch__.torch.classes.c10d.ReduceOp\", "
               "\"bool\"]"});
    }
    d.launchers.push_back({nccl, "[" + Dims1(c.in_nelems) + "]", "[" + t + "]"});
    KinetoCallTruth& tr = d.truth;
    tr.kernel = d.kernel;
    tr.kind = kind;
    if (kind != "other") {
      tr.dtype = c.dtype;
      tr.in_nelems = c.in_nelems;
      tr.out_nelems = c.out_nelems;
    }
    // Only the base operators' output/input ratio says the group size.
    if (kind == "all_gather" || kind == "reduce_scatter") tr.group_size = c.group_size;
    for (const Launcher& l : d.launchers) tr.launchers.push_back(l.name);
    out.push_back(std::move(d));
  }
  // A kernel whose launch fell outside the window: its name says SendRecv.
  CallDef orphan;
  orphan.kernel = kOldKernel;
  static constexpr CallSpec kOrphan = {kOldKernel, "", "send_recv", "", -1,    -1,
                                       -1,         "", "",          "", 70000, 0};
  orphan.spec = &kOrphan;
  orphan.orphan = true;
  orphan.truth.kernel = kOldKernel;
  orphan.truth.kind = "send_recv";
  out.push_back(std::move(orphan));
  return out;
}

// symm-mem: symmetric memory's all-reduces and vLLM's custom one.
std::vector<CallDef> SymmMemCalls() {
  struct Symm {
    const char* kernel;
    const char* op;
    const char* dims;
    const char* types;
    int64_t elements;
    int64_t base_ns;
    int overlap_pct;
  };
  static constexpr Symm kSymm[] = {
      {"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, "
       "unsigned long, unsigned long, unsigned long, unsigned long, unsigned long)",
       "symm_mem::multimem_all_reduce_", "[[4194304], [], []]",
       "[\"c10::BFloat16\", \"std::string\", \"std::string\"]", 4194304, 90000, 20},
      {"void c10d::symmetric_memory::one_shot_all_reduce_kernel<c10::BFloat16, "
       "16>(c10::BFloat16**, "
       "c10::BFloat16*, c10::BFloat16*, unsigned long, unsigned long, unsigned long, unsigned "
       "int**, "
       "unsigned long, unsigned long)",
       "symm_mem::one_shot_all_reduce", "[[1048576], [], []]",
       "[\"c10::BFloat16\", \"std::string\", \"std::string\"]", 1048576, 40000, 50},
      {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, "
       "vllm::RankSignals, "
       "vllm::Signal*, __nv_bfloat16*, int, int)",
       "_C_custom_ar::all_reduce", "[[], [524288, 1], [524288, 1], [], []]",
       "[\"long int\", \"c10::BFloat16\", \"c10::BFloat16\", \"long int\", \"long int\"]", 524288,
       30000, 0},
  };
  static std::vector<CallSpec> specs;
  specs.clear();
  for (const Symm& s : kSymm) {
    specs.push_back(CallSpec{s.kernel, "", "all_reduce", "BFloat16", s.elements, s.elements, -1, "",
                             "", "", s.base_ns, s.overlap_pct});
  }
  std::vector<CallDef> out;
  for (size_t i = 0; i < std::size(kSymm); ++i) {
    CallDef d;
    d.kernel = kSymm[i].kernel;
    d.spec = &specs[i];
    d.launchers.push_back({kSymm[i].op, kSymm[i].dims, kSymm[i].types});
    d.truth.kernel = d.kernel;
    d.truth.kind = "all_reduce";
    d.truth.dtype = "BFloat16";
    d.truth.in_nelems = d.truth.out_nelems = kSymm[i].elements;
    d.truth.launchers.push_back(kSymm[i].op);
    out.push_back(std::move(d));
  }
  return out;
}

// deepep: DeepEP's kernels, named as its builds name them.
std::vector<CallDef> DeepEpCalls() {
  static constexpr CallSpec kEp[] = {
      {"void deep_ep::internode::dispatch<true, 8, 3, 1024, 8>(int4*, float*, int*, long*, "
       "float*, int*, int*, SourceMeta*, int4 const*, float const*, long const*, float const*, "
       "int*, int*, int*, int*, int, int, int, int, int, int, void*, int, int, int)",
       "", "all_to_all", "", -1, -1, -1, "", "", "", 250000, 20},
      {"void deep_ep::internode::combine<__nv_bfloat16, 8, 3, 1024>(int4*, float*, bool const*, "
       "int4 const*, float const*, int const*, int const*, SourceMeta const*, int, int, int, int, "
       "int, void*, int, int, int)",
       "", "all_to_all", "", -1, -1, -1, "", "", "", 300000, 40},
      {"void dpsk::ep::internode::dispatch<false, 8, 3, 512, 8>(int4*, float*, int*, long*, "
       "float*, int*, int*, SourceMeta*, int4 const*, float const*, long const*, float const*, "
       "int*, int*, int*, int*, int, int, int, int, int, int, void*, int, int, int)",
       "", "all_to_all", "", -1, -1, -1, "", "", "", 200000, 0},
      {"void deep_ep::internode::cached_notify<8>(int, int, int, int, int, int*, int, int*, "
       "int*, int*, int*, int*, void*, int, int, int, bool)",
       "", "other", "", -1, -1, -1, "", "", "", 30000, 0},
  };
  std::vector<CallDef> out;
  for (const CallSpec& c : kEp) {
    CallDef d;
    d.kernel = c.kernel;
    d.spec = &c;
    d.truth.kernel = c.kernel;
    d.truth.kind = c.kind;
    out.push_back(std::move(d));
  }
  return out;
}

// nccl, rccl, rccl-bare, cpu-op: every call of kCalls.
std::vector<CallDef> ArgCalls(const KinetoCollectiveParams& p) {
  const bool bare = p.form == KinetoCommForm::kRcclBare;
  std::vector<CallDef> out;
  for (const CallSpec& c : kCalls) {
    CallDef d;
    d.kernel = p.form == KinetoCommForm::kRccl || bare ? kRcclGeneric : c.kernel;
    d.spec = &c;
    KinetoCallTruth& t = d.truth;
    t.kernel = d.kernel;
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
    out.push_back(std::move(d));
  }
  return out;
}

// aten::mm of the old-nccl form's compute kernels: [M, K] x [K, N].
constexpr int64_t kMmM = 2048, kMmK = 1024, kMmN = 4096;

}  // namespace

bool WriteKinetoCollectiveTrace(const KinetoCollectiveParams& p, const std::string& path,
                                KinetoCollectiveTruth* truth, std::string* error) {
  *truth = KinetoCollectiveTruth{};
  const bool old = p.form == KinetoCommForm::kOldNccl;
  const bool symm = p.form == KinetoCommForm::kSymmMem;
  const bool kernel_args = p.form == KinetoCommForm::kNccl || p.form == KinetoCommForm::kRccl;
  const bool op_args = p.form == KinetoCommForm::kNccl || p.form == KinetoCommForm::kRccl ||
                       p.form == KinetoCommForm::kCpuOp;  // record_param_comms carries them
  std::vector<CallDef> defs = old                                 ? OldNcclCalls()
                              : symm                              ? SymmMemCalls()
                              : p.form == KinetoCommForm::kDeepEp ? DeepEpCalls()
                                                                  : ArgCalls(p);
  for (const CallDef& d : defs) truth->calls.push_back(d.truth);

  std::string cpu, gpu;
  uint64_t rng = p.seed * 0x2545f4914f6cdd1dULL + 0x40;
  const int64_t base_ns = 4458676416431000LL + static_cast<int64_t>(SplitMix(rng) % 1000000) * kUs;
  // old-nccl: operators count their own External ids from where the
  // correlation ids start, so an External-id join would meet the wrong ones.
  int64_t external_id = old ? 5000 : 100, correlation = 5000;
  // Each device's work is launched by its own host thread (one thread
  // cannot run two devices' operators at once); steps on the main thread.
  int64_t tid = kCpuPid;
  auto cpu_event = [&](const char* cat, const std::string& name, int64_t ts, int64_t dur,
                       const std::string& args) {
    cpu += "{\"ph\":\"X\",\"cat\":\"" + std::string(cat) + "\",\"name\":\"" + name +
           "\",\"pid\":" + std::to_string(kCpuPid) + ",\"tid\":" + std::to_string(tid) +
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
  auto launch = [&](int64_t ts, int64_t ext, int64_t corr) {
    cpu_event("cuda_runtime", "cudaLaunchKernel", ts, 4 * kUs,
              "\"External id\":" + std::to_string(ext) +
                  ",\"cbid\":211,\"correlation\":" + std::to_string(corr));
  };
  for (int k = 0; k < p.steps; ++k) {
    const int64_t step_ns = base_ns + k * kStepNs;
    cpu_event("user_annotation", "ProfilerStep#" + std::to_string(k + 10), step_ns, kStepNs - kUs,
              "\"External id\":" + std::to_string(external_id++));
  }
  for (int dev = 0; dev < p.gpus; ++dev) {
    // Devices after the first launch from their own thread (the first keeps
    // the main thread, as the forms before old-nccl wrote it).
    tid = kCpuPid + dev;
    for (int k = 0; k < p.steps; ++k) {
      int64_t t = base_ns + k * kStepNs + 100 * kUs + dev * 1300;
      for (size_t v = 0; v < defs.size(); ++v) {
        const CallDef& d = defs[v];
        const CallSpec& c = *d.spec;
        KinetoCallTruth& tr = truth->calls[v];
        const int64_t dur = c.base_ns + static_cast<int64_t>(SplitMix(rng) % 2000);
        const int64_t overlap = dur * c.overlap_pct / 100;
        const int64_t corr = correlation++;
        // The External id a kernel carries: its operator's, or (old-nccl)
        // its own correlation id.
        int64_t ext = old ? corr : external_id;
        if (!old) ++external_id;
        if (op_args) {
          cpu_event("cpu_op", "record_param_comms", t - 40 * kUs, 5 * kUs,
                    "\"External id\":" + std::to_string(ext) + ",\"Record function id\":0" +
                        CommArgs(c, p.pg));
        }
        // Launchers nest around the launch at t - 35 us, outermost first.
        for (size_t l = 0; l < d.launchers.size(); ++l) {
          const Launcher& op = d.launchers[l];
          const int64_t lead = (50 - 4 * static_cast<int64_t>(l)) * kUs;
          std::string args = "\"External id\":" + std::to_string(old ? external_id++ : ext);
          if (!op.dims.empty())
            args += ",\"Input Dims\":" + op.dims + ",\"Input type\":" + op.types;
          cpu_event("cpu_op", op.name, t - lead,
                    lead - 25 * kUs - 2 * kUs * static_cast<int64_t>(l), args);
        }
        if (!d.orphan) launch(t - 35 * kUs, ext, corr);
        // The compute kernel covering [t, t + overlap): it starts kLeadNs
        // before the call, after the previous call's end (kGapNs > kLeadNs).
        const int64_t ccorr = correlation++;
        int64_t cext = old ? ccorr : external_id++;
        if (old) {
          // Launched by an aten::mm with shapes (its own External id).
          const int64_t at = t - 80 * kUs;  // before this call's launchers
          cpu_event("cpu_op", "aten::mm", at, 12 * kUs,
                    "\"External id\":" + std::to_string(external_id++) + ",\"Input Dims\":[[" +
                        std::to_string(kMmM) + ", " + std::to_string(kMmK) + "], [" +
                        std::to_string(kMmK) + ", " + std::to_string(kMmN) +
                        "]],\"Input type\":[\"c10::BFloat16\", \"c10::BFloat16\"]");
          launch(at + 2 * kUs, cext, ccorr);
          truth->matmul_flops += 2.0 * kMmM * kMmK * kMmN;
        }
        kernel(dev, kComputeStream, kGemm, t - kLeadNs, kLeadNs + overlap, cext, ccorr, "");
        kernel(dev, kCommStream, d.kernel, t, dur, ext, corr,
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
    meta += KinetoGpuProcessMeta(dev);
    for (int64_t s : {kComputeStream, kCommStream}) {
      meta += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
              ",\"tid\":" + std::to_string(s) + ",\"args\":{\"name\":\"stream " +
              std::to_string(s) + " \"}},\n";
    }
  }
  const std::string head =
      "{\"schemaVersion\":1,\"deviceProperties\":[],\"distributedInfo\":{\"backend\":\"nccl\","
      "\"rank\":0,\"world_size\":8},\"traceEvents\":[\n";
  const std::string tail = KinetoTail(base_ns + p.steps * kStepNs);
  return WriteGzipParts(path, {&head, &meta, &cpu, &gpu, &tail}, error);
}

}  // namespace profwatch::tracegen
