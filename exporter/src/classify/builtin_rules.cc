// Built-in rule sets and the vendor guess behind `--rules auto`.
//
// "drill" reproduces profile_drill.py's family table (drill-compat.md,
// "Family aggregates"): same names, same order, same first-match-wins tests,
// so `--format drill` can print byte-identical rows.
//
// "nvidia" families (the names are Prometheus label values, so they are short,
// lower-case and stable; first match wins, in this order):
//   nccl              comm     contains ncclDevKernel / ncclKernel, or starts with nccl
//   comm_other        comm     custom collectives: all_reduce, allreduce,
//                              all_gather, allgather, reduce_scatter,
//                              reducescatter, all_to_all, alltoall,
//                              cross_device_reduce, nvshmem, expert-parallel
//                              exchange (deep_ep::, dpsk::ep::, pplx::)
//   memory            memory   the runtimes' copy and fill names as whole
//                              names (RuntimeMemopPatterns: "Memcpy HtoD
//                              (Pageable -> Device)", "Memset (Device)",
//                              MemcpyD2H, CopyDeviceToDevice, FillBuffer,
//                              hipMemcpyDtoDAsync, ...); never a substring of
//                              a kernel's name
//   attention         compute  flash_fwd, flash_bwd, flash_attn, flash::,
//                              fmha, sdpa, attention, Attention, xformers,
//                              AOTriton (attn_fwd, attn_bwd, bwd_kernel_dk_dv,
//                              bwd_kernel_dq), SageAttention (sage_fwd,
//                              sage_bwd), FlashInfer (flashinfer, ...KVCache)
//   conv              compute  cuDNN/cutlass convolutions: convolve,
//                              Convolution, conv2d, winograd, fft2d_, fprop,
//                              dgrad, wgrad (before gemm: implicit-GEMM convs
//                              contain "gemm")
//   gemm              compute  gemm, Gemm, GEMM, cutlass::Kernel,
//                              cutlass::device_kernel, cutlass_, cublas,
//                              cuBLAS, nvjet, xmma, bmm_, matmul
//   xla_fusion_loop   compute  prefix loop_ and contains "fusion"
//   xla_fusion_input  compute  prefix input_ and contains "fusion"
//   xla_fusion_other  compute  other XLA fusions/thunks: contains _fusion, or
//                              prefix fusion / wrapped_
//   triton            compute  prefix triton_ (Inductor and XLA Triton kernels
//                              not caught above)
//   norm              compute  layer/rms/batch/group norm kernels
//   elementwise       compute  contains elementwise / Elementwise
//   reduce            compute  reduce / Reduce / reduction
//   other                      everything else
// "amd" has the same families and order; its comm_other adds XLA's
// RaggedAllToAll, DeepEP and rocSHMEM, gemm takes hipBLASLt/Tensile (Cijk_), CK (ck_tile::, ck::),
// Primus-Turbo, rocBLAS. Attention (fmha, flash, mha, sdpa) comes before
// gemm in both, so CK and CUTLASS attention kernels are attention.
// "cutlass" alone is not a GEMM marker: many non-GEMM kernels carry
// cutlass::bfloat16_t template arguments.
#include <algorithm>

// GCC 12 reports a false -Wmaybe-uninitialized inside <regex>'s std::function
// when optimising with sanitizers; silenced for this file only (as in
// classifier.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>

#include "classify/classifier.h"

namespace profwatch::classify {
namespace {

Condition Cond(MatchOp op, std::vector<std::string> patterns) {
  return Condition{op, std::move(patterns)};
}

Rule MakeRule(std::string family, FamilyKind kind, std::vector<Condition> all_of,
              std::string_view set) {
  Rule r;
  r.family = std::move(family);
  r.kind = kind;
  r.all_of = std::move(all_of);
  r.origin = "builtin:" + std::string(set);
  return r;
}

RuleSet DrillSet() {
  RuleSet s;
  s.name = "drill";
  s.other_family = "Other kernels";
  s.match_whole_names = true;  // profile_drill.py's tests see the whole name
  const auto C = FamilyKind::kCompute;
  auto contains = [](std::string p) { return Cond(MatchOp::kContains, {std::move(p)}); };
  s.rules.push_back(MakeRule("RaggedAllToAllKernelImpl", FamilyKind::kComm,
                             {contains("RaggedAllToAllKernelImpl")}, "drill"));
  s.rules.push_back(MakeRule("primus_turbo::deep_ep", FamilyKind::kComm,
                             {contains("primus_turbo::deep_ep")}, "drill"));
  for (const char* tag : {"input_scatter_fusion", "loop_select_fusion", "loop_gather_fusion",
                          "loop_reduce_fusion", "loop_convert_fusion", "loop_transpose_fusion",
                          "input_reduce_select", "input_broadcast_reduce_select"}) {
    s.rules.push_back(MakeRule(tag, C, {contains(tag)}, "drill"));
  }
  s.rules.push_back(MakeRule("RCCL ncclDevKernel", FamilyKind::kComm,
                             {Cond(MatchOp::kPrefix, {"ncclDevKernel"})}, "drill"));
  s.rules.push_back(MakeRule("CK+primus GEMM (non-DeepEP)", FamilyKind::kMath,
                             {Cond(MatchOp::kNotContains, {"primus_turbo::deep_ep"}),
                              Cond(MatchOp::kContains, {"ck_tile::", "primus_turbo::", "Cijk_"})},
                             "drill"));
  s.rules.push_back(MakeRule("flash_attn (fmha)", FamilyKind::kMath,
                             {contains("aiter"), contains("fmha")}, "drill"));
  return s;
}

// Attention kernels, whatever library wrote them: FlashAttention (CUDA and
// ROCm ports), cuDNN/PyTorch SDPA, xFormers, CUTLASS and CK fmha, aiter,
// AOTriton (PyTorch's SDPA on ROCm: attn_fwd, bwd_kernel_dk_dv, ...),
// SageAttention, FlashInfer. Before gemm: CK and CUTLASS attention kernels
// also carry GEMM markers.
const std::vector<std::string> kAttentionMarkers = {
    "flash_fwd",     "flash_bwd",  "flash_attn",   "flash::",
    "fmha",          "Fmha",       "FMHA",         "mha_fwd",
    "mha_bwd",       "MhaFwd",     "MhaBwd",       "sdpa",
    "attention",     "Attention",  "xformers",     "attn_fwd",
    "attn_bwd",      "sage_fwd",   "sage_bwd",     "bwd_kernel_dk_dv",
    "bwd_kernel_dq", "flashinfer", "PagedKVCache", "SinglePrefillWithKVCache"};

// What differs between the native sets: the vendor's collectives and GEMM
// libraries. The family names are shared, so dashboards and rules work for
// either vendor.
struct VendorMarkers {
  std::string_view set;
  std::vector<std::string> comm_other;  // besides the portable collectives
  std::vector<std::string> gemm;        // besides gemm/Gemm/GEMM/matmul/bmm_
};

RuleSet NativeSet(const VendorMarkers& v) {
  RuleSet s;
  s.name = std::string(v.set);
  s.other_family = "other";
  const auto C = FamilyKind::kCompute;
  auto add = [&](std::string family, FamilyKind kind, std::vector<Condition> all_of) {
    s.rules.push_back(MakeRule(std::move(family), kind, std::move(all_of), v.set));
  };
  auto with = [](std::vector<std::string> base, const std::vector<std::string>& more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  // RCCL keeps NCCL's kernel names.
  add("nccl", FamilyKind::kComm, {Cond(MatchOp::kContains, {"ncclDevKernel", "ncclKernel"})});
  // Older NCCL names (ncclAllReduceRingLLKernel_sum_f32, ...): a name that
  // starts with nccl is NCCL's (nsys' definition of a comm kernel).
  add("nccl", FamilyKind::kComm, {Cond(MatchOp::kPrefix, {"nccl"})});
  add("comm_other", FamilyKind::kComm,
      {Cond(MatchOp::kContains, with({"all_reduce", "allreduce", "all_gather", "allgather",
                                      "reduce_scatter", "reducescatter", "all_to_all", "alltoall",
                                      "cross_device_reduce", "deep_ep::", "dpsk::ep::", "pplx::"},
                                     v.comm_other))});
  add("memory", FamilyKind::kMemory, {Cond(MatchOp::kRegex, RuntimeMemopPatterns())});
  const auto M = FamilyKind::kMath;
  add("attention", M, {Cond(MatchOp::kContains, kAttentionMarkers)});
  add("conv", M,
      {Cond(MatchOp::kContains,
            {"convolve", "Convolution", "conv2d", "winograd", "fft2d_", "fprop", "dgrad", "wgrad",
             "naive_conv", "igemm_fwd", "igemm_bwd", "igemm_wrw"})});
  add("gemm", M,
      {Cond(MatchOp::kContains, with({"gemm", "Gemm", "GEMM", "matmul", "bmm_"}, v.gemm))});
  add("xla_fusion_loop", C,
      {Cond(MatchOp::kPrefix, {"loop_"}), Cond(MatchOp::kContains, {"fusion"})});
  add("xla_fusion_input", C,
      {Cond(MatchOp::kPrefix, {"input_"}), Cond(MatchOp::kContains, {"fusion"})});
  add("xla_fusion_other", C, {Cond(MatchOp::kContains, {"_fusion"})});
  add("xla_fusion_other", C, {Cond(MatchOp::kPrefix, {"fusion", "wrapped_"})});
  add("triton", C, {Cond(MatchOp::kPrefix, {"triton_"})});
  add("norm", C,
      {Cond(MatchOp::kContains,
            {"layer_norm", "layernorm", "LayerNorm", "rms_norm", "rmsnorm", "RMSNorm", "batch_norm",
             "batchnorm", "bn_fw", "bn_bw", "group_norm"})});
  add("elementwise", C, {Cond(MatchOp::kContains, {"elementwise", "Elementwise"})});
  add("reduce", C, {Cond(MatchOp::kContains, {"reduce", "Reduce", "reduction"})});
  return s;
}

RuleSet NvidiaSet() {
  return NativeSet({.set = "nvidia",
                    .comm_other = {"nvshmem"},
                    .gemm = {"cutlass::Kernel", "cutlass::device_kernel", "cutlass_", "cublas",
                             "cuBLAS", "nvjet", "xmma"}});
}

// "primus_turbo::" is a GEMM marker only after deep_ep (comm) took its own.
// ROCclr's blit kernels (__amd_rocclr_copyBuffer, ...) are GPU kernels, as
// in the drill set: they stay kernels ("other"), not memory operations.
RuleSet AmdSet() {
  return NativeSet(
      {.set = "amd",
       .comm_other = {"RaggedAllToAllKernelImpl", "primus_turbo::deep_ep", "rocshmem"},
       .gemm = {"Cijk_", "ck_tile::", "ck::", "primus_turbo::", "hipblaslt", "rocblas"}});
}

bool ContainsAny(std::string_view name, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [name](std::string_view n) { return name.find(n) != std::string_view::npos; });
}

}  // namespace

// No `.*` anywhere: libstdc++'s regex recurses per matched character, and
// demangled kernel names run to thousands of characters. Every pattern
// starts with M, C, F, c or h (IsRuntimeMemopName's first-letter gate).
const std::vector<std::string>& RuntimeMemopPatterns() {
  static const std::vector<std::string> patterns = {
      // CUPTI, as Kineto writes it: Memcpy <kind> (<src> -> <dst>), Memset (<dst>).
      R"(^Memcpy [A-Za-z]+ \([A-Za-z]+ -> [A-Za-z]+\)$)",
      R"(^Memset \([A-Za-z]+\)$)",
      // XLA's GPU tracer (a stream suffix on memsets) and the nsys reader.
      R"(^Memcpy(H2D|D2H|D2D|P2P|H2H|Other)?( [0-9]+)?$)",
      R"(^Memset( [0-9]+)?$)",
      // ROCm's HIP operation names.
      R"(^Copy(Host|Device)To(Host|Device)(2D|3D)?$)",
      R"(^FillBuffer$)",
      // Runtime API names (host calls; some converters put them on streams).
      R"(^(cuda|hip)Mem(cpy|set)[A-Za-z0-9]*$)",
  };
  return patterns;
}

bool IsRuntimeMemopName(std::string_view name) {
  // Cheap gate first: every form starts with one of these letters (and is
  // short: kMaxRegexName bounds what the regexes see).
  if (name.empty() || name.size() > kMaxRegexName ||
      (name[0] != 'M' && name[0] != 'C' && name[0] != 'F' && name[0] != 'c' && name[0] != 'h')) {
    return false;
  }
  static const std::vector<std::regex> compiled = [] {
    std::vector<std::regex> out;
    for (const std::string& p : RuntimeMemopPatterns()) {
      out.emplace_back(p, std::regex::ECMAScript | std::regex::optimize);
    }
    return out;
  }();
  // Every pattern is anchored at the start: tried there only.
  return std::any_of(compiled.begin(), compiled.end(), [name](const std::regex& re) {
    return std::regex_search(name.begin(), name.end(), re, std::regex_constants::match_continuous);
  });
}

Result<RuleSet> BuiltinRuleSet(std::string_view name) {
  if (name == "drill") return DrillSet();
  if (name == "nvidia") return NvidiaSet();
  if (name == "amd") return AmdSet();
  return MakeError(ErrorCode::kConfig, "unknown rule set '" + std::string(name) +
                                           "' (built-in sets: drill, nvidia, amd)");
}

std::vector<std::string> BuiltinRuleSetNames() { return {"drill", "nvidia", "amd"}; }

// Counts names carrying a strong vendor marker. The set with more marked names
// wins ("amd" or "nvidia"); no marker at all keeps "drill", the reference
// report's set, unless only the weak NVIDIA hint is present: a "void "-prefixed
// demangled template. That hint is weak because ROCm PyTorch (HIP) kernels
// demangle to the same "void at::native::..." names, so it only decides when
// nothing stronger was seen.
std::string_view AutoRuleSetName(const std::vector<std::string_view>& sample_names) {
  size_t amd = 0, nvidia = 0, weak_nvidia = 0;
  for (std::string_view n : sample_names) {
    if (n.ends_with(".kd") || ContainsAny(n, {".kd]", "Cijk_", "ck_tile::", "rocprim::", "aiter",
                                              "primus_turbo::", "__amd_rocclr"})) {
      ++amd;
    } else if (ContainsAny(n, {"cutlass", "sm70_", "sm75_", "sm80_", "sm86_", "sm89_", "sm90_",
                               "sm100_", "nvjet", "cublas", "cuBLAS", "cudnn", "ampere_", "volta_",
                               "turing_", "hopper_", "xmma"})) {
      ++nvidia;
    } else if (n.starts_with("void ")) {
      ++weak_nvidia;
    }
  }
  if (nvidia > amd) return "nvidia";
  if (amd > 0 && amd >= nvidia) return "amd";
  if (weak_nvidia > 0) return "nvidia";
  return "drill";
}

}  // namespace profwatch::classify
