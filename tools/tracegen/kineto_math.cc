// profwatch-tracegen `kineto-math`: see kineto_math.h.
#include "kineto_math.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

#include "gen_util.h"

namespace profwatch::tracegen {
namespace {

constexpr int64_t kUs = 1000;  // ns
constexpr int64_t kCpuPid = 2718;
constexpr int64_t kStream = 7;

// aten::mm [M, K] x [K, N]; flash attention [B, H, S, D], causal.
constexpr int64_t kM = 4096, kK = 2048, kN = 8192;
constexpr int64_t kB = 8, kH = 16, kS = 2048, kD = 128;

constexpr const char* kMmKernel =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
    "segment_k_off_kernel__5x_cublas";
constexpr const char* kAddmmKernel = "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNN";
constexpr const char* kFlashKernel =
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, "
    "true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)";
constexpr const char* kSplitKvKernel =
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
    "cutlass::bfloat16_t>, false, false, false, false, true, true, false, false>(Flash_fwd_params)";
constexpr const char* kBareGemmKernel =
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>("
    "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)";
constexpr const char* kAddKernel =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "at::detail::Array<char*, 3>)";
constexpr const char* kFbgemmForward =
    "void split_embedding_codegen_forward_unweighted_kernel<float, float, long, 128, long>("
    "at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>, "
    "at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, long>, "
    "fbgemm_gpu::FixedDivisor, long, at::GenericPackedTensorAccessor<float, 2ul, "
    "at::RestrictPtrTraits, long>)";
constexpr const char* kFbgemmBackward =
    "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_warp_per_row_1<float, "
    "float, long, 2, 32>(at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, long>, "
    "fbgemm_gpu::FixedDivisor, float, float)";

constexpr const char* kAotritonKernel = "attn_fwd";
constexpr const char* kSageKernel =
    "void sage_fwd<128, 64, 64, 4, __nv_bfloat16, false>(SageAttentionParams const)";
constexpr const char* kCkFmhaKernel =
    "void ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<"
    "ck_tile::BlockFmhaPipelineProblem<ck_tile::bf16_t> > > >(ck_tile::FmhaFwdKernelArgs)";

std::string Dims(std::initializer_list<int64_t> d) {
  std::string o = "[";
  for (int64_t v : d) o += (o.size() > 1 ? ", " : "") + std::to_string(v);
  return o + "]";
}

}  // namespace

std::string AttentionKernelName(const std::string& attention_kernel) {
  if (attention_kernel == "flash") return kFlashKernel;
  if (attention_kernel == "aotriton") return kAotritonKernel;
  if (attention_kernel == "sage") return kSageKernel;
  if (attention_kernel == "ck") return kCkFmhaKernel;
  return "";
}

bool WriteKinetoMathTrace(const KinetoMathParams& p, const std::string& path,
                          KinetoMathTruth* truth, std::string* error) {
  *truth = KinetoMathTruth{};
  struct KernelDef {
    const char* name;
    const char* family;
    int64_t base_ns;
  };
  const std::string attention = AttentionKernelName(p.attention_kernel);
  if (attention.empty()) {
    *error = "unknown attention kernel " + p.attention_kernel;
    return false;
  }
  const KernelDef defs[] = {
      {kMmKernel, "gemm", 900 * kUs},
      {kAddmmKernel, "gemm", 600 * kUs},
      {attention.c_str(), "attention", 700 * kUs},
      {kSplitKvKernel, "attention", 400 * kUs},
      {kBareGemmKernel, "gemm", 150 * kUs},
      {kFbgemmForward, "other", 250 * kUs},
      {kFbgemmBackward, "other", 350 * kUs},
      {kAddKernel, "elementwise", 300 * kUs},
  };
  enum { kMm, kAddmm, kFlash, kSplitKv, kBare, kFbFwd, kFbBwd, kAdd };
  for (const KernelDef& d : defs) {
    if (p.bytes || std::string_view(d.name) != kAddKernel) {
      truth->kernels.push_back({d.name, d.family, 0, 0});
    }
  }
  std::map<std::pair<std::string, bool>, int64_t> uncounted;

  std::string cpu, gpu;
  uint64_t rng = p.seed * 0x9e3779b97f4a7c15ULL + 0x48;
  const int64_t base_ns = 1712000000000000LL + static_cast<int64_t>(SplitMix(rng) % 1000000) * kUs;
  const int64_t step_ns = 10000 * kUs;
  int64_t external_id = 1000, correlation = 1000;  // the same start: a wrong join meets ids
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
  auto op = [&](const std::string& name, int64_t ts, int64_t dur, const std::string& shapes) {
    const int64_t id = external_id++;
    cpu_event("cpu_op", name, ts, dur,
              "\"External id\":" + std::to_string(id) + (shapes.empty() ? "" : "," + shapes));
    return id;
  };
  int64_t device_t = 0;  // the next kernel's earliest start on the current device
  // A kernel of `def` launched at host time `ts` by the operator `ext`
  // (-1: none, no External id written).
  auto launch = [&](int dev, size_t def, int64_t ts, int64_t ext) {
    const int64_t corr = correlation++;
    const int64_t id = p.correlation_ids ? corr : ext;
    cpu_event("cuda_runtime", "cudaLaunchKernel", ts, 3 * kUs,
              (id >= 0 ? "\"External id\":" + std::to_string(id) + "," : std::string()) +
                  "\"cbid\":211,\"correlation\":" + std::to_string(corr));
    const int64_t dur = defs[def].base_ns + static_cast<int64_t>(SplitMix(rng) % 5000);
    const int64_t start = std::max(device_t, ts + 10 * kUs);
    device_t = start + dur + 2 * kUs;
    gpu += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + std::string(defs[def].name) +
           "\",\"pid\":" + std::to_string(dev) + ",\"tid\":" + std::to_string(kStream) +
           ",\"ts\":" + MicrosText(start) + ",\"dur\":" + MicrosText(dur) + ",\"args\":{" +
           (id >= 0 ? "\"External id\":" + std::to_string(id) + "," : std::string()) +
           "\"queued\":0,\"device\":" + std::to_string(dev) +
           ",\"context\":1,\"stream\":" + std::to_string(kStream) +
           ",\"correlation\":" + std::to_string(corr) +
           ",\"grid\":[132, 1, 1],\"block\":[384, 1, 1]}},\n";
    KinetoMathKernel& k = truth->kernels[def];
    ++k.launches;
    k.ps += dur * 1000;
    return dur * 1000;
  };
  const std::string bf16_2 = "\"Input type\":[\"c10::BFloat16\", \"c10::BFloat16\"]";
  const std::string qkv = Dims({kB, kH, kS, kD});
  for (int k = 0; k < p.steps; ++k) {
    cpu_event("user_annotation", "ProfilerStep#" + std::to_string(k + 3), base_ns + k * step_ns,
              step_ns - kUs, "\"External id\":" + std::to_string(external_id++));
  }
  for (int dev = 0; dev < p.gpus; ++dev) {
    tid = kCpuPid + 1 + dev;
    device_t = 0;
    for (int k = 0; k < p.steps; ++k) {
      int64_t t = base_ns + k * step_ns + 50 * kUs + dev * 1700;
      // aten::mm with shapes: counted.
      {
        const int64_t id =
            op("aten::mm", t, 20 * kUs,
               "\"Input Dims\":[" + Dims({kM, kK}) + ", " + Dims({kK, kN}) + "]," + bf16_2);
        const int64_t ps = launch(dev, kMm, t + 5 * kUs, id);
        truth->matmul_flops += 2.0 * kM * kK * kN;
        truth->bytes_by_family["gemm"] += 2.0 * (kM * kK + kK * kN + kM * kN);
        truth->counted_math_ps += ps;
        truth->math_ps += ps;
        t += 40 * kUs;
      }
      // aten::addmm without shapes: a counted kind, unusable.
      {
        const int64_t id = op("aten::addmm", t, 20 * kUs, "");
        const int64_t ps = launch(dev, kAddmm, t + 5 * kUs, id);
        ++truth->unknown_ops;
        uncounted[{"aten::addmm", true}] += ps;
        truth->math_ps += ps;
        t += 40 * kUs;
      }
      // SDPA > flash attention (shapes, causal) > _flash_attention_forward.
      {
        op("aten::scaled_dot_product_attention", t, 40 * kUs, "");
        op("aten::_scaled_dot_product_flash_attention", t + 2 * kUs, 35 * kUs,
           "\"Input Dims\":[" + qkv + ", " + qkv + ", " + qkv +
               ", [], [], [], []],\"Input type\":[\"c10::BFloat16\", \"c10::BFloat16\", "
               "\"c10::BFloat16\", \"Scalar\", \"Scalar\", \"Scalar\", \"\"],"
               "\"Concrete Inputs\":[\"\", \"\", \"\", \"0.\", \"True\", \"False\", \"\"]");
        const int64_t inner = op("aten::_flash_attention_forward", t + 4 * kUs, 30 * kUs, "");
        const int64_t ps = launch(dev, kFlash, t + 10 * kUs, inner);
        truth->attention_flops += 2.0 * kB * kH * kS * kS * (kD + kD) / 2;
        truth->bytes_by_family["attention"] += 2.0 * 4 * kB * kH * kS * kD;
        truth->counted_math_ps += ps;
        truth->math_ps += ps;
        t += 60 * kUs;
      }
      // vllm::unified_attention: shapes, but no formula for it.
      {
        const int64_t id = op("vllm::unified_attention", t, 20 * kUs,
                              "\"Input Dims\":[" + qkv + ", " + qkv + ", " + qkv + "]");
        const int64_t ps = launch(dev, kSplitKv, t + 5 * kUs, id);
        // Its External id names it; without one (older Kineto) only the kernel does.
        uncounted[{p.correlation_ids ? kSplitKvKernel : "vllm::unified_attention",
                   !p.correlation_ids}] += ps;
        truth->math_ps += ps;
        t += 40 * kUs;
      }
      // A GEMM kernel no operator launched.
      {
        const int64_t ps = launch(dev, kBare, t, -1);
        uncounted[{kBareGemmKernel, false}] += ps;
        truth->math_ps += ps;
        t += 20 * kUs;
      }
      if (p.bytes) {
        // aten::add of two bf16 tensors: an elementwise kernel.
        const int64_t id = op("aten::add", t, 20 * kUs,
                              "\"Input Dims\":[" + Dims({kM, kN}) + ", " + Dims({kM, kN}) +
                                  ", []],\"Input type\":[\"c10::BFloat16\", \"c10::BFloat16\", "
                                  "\"Scalar\"],\"Concrete Inputs\":[\"\", \"\", \"1\"]");
        launch(dev, kAdd, t + 5 * kUs, id);
        truth->bytes_by_family["elementwise"] += 2.0 * 3 * kM * kN;
        // A memcpy and a memset with CUPTI's byte counts.
        for (const auto& [cat, name, bytes] :
             {std::tuple{"gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", int64_t{1} << 20},
              std::tuple{"gpu_memset", "Memset (Device)", int64_t{4096}}}) {
          const int64_t start = device_t;
          device_t = start + 10 * kUs + 2 * kUs;
          gpu += "{\"ph\":\"X\",\"cat\":\"" + std::string(cat) + "\",\"name\":\"" + name +
                 "\",\"pid\":" + std::to_string(dev) + ",\"tid\":" + std::to_string(kStream) +
                 ",\"ts\":" + MicrosText(start) + ",\"dur\":" + MicrosText(10 * kUs) +
                 ",\"args\":{\"device\":" + std::to_string(dev) +
                 ",\"stream\":" + std::to_string(kStream) + ",\"bytes\":" + std::to_string(bytes) +
                 "}},\n";
          truth->memop_bytes += static_cast<double>(bytes);
          ++truth->memops;
        }
        t += 40 * kUs;
      }
      // FBGEMM's embedding lookup: two kernels, no GEMM.
      {
        const int64_t id =
            op("fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function", t, 30 * kUs, "");
        launch(dev, kFbFwd, t + 5 * kUs, id);
        launch(dev, kFbBwd, t + 15 * kUs, id);
        t += 40 * kUs;
      }
    }
  }
  for (const auto& [key, ps] : uncounted) truth->uncounted.push_back({key.first, key.second, ps});

  std::string meta;
  for (int dev = 0; dev < p.gpus; ++dev) meta += KinetoGpuProcessMeta(dev);
  const std::string head =
      "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H100 80GB HBM3\"}],"
      "\"traceEvents\":[\n";
  const std::string tail = KinetoTail(base_ns + p.steps * step_ns);
  return WriteGzipParts(path, {&head, &meta, &cpu, &gpu, &tail}, error);
}

}  // namespace profwatch::tracegen
