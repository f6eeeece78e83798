// profwatch-tracegen `kineto-math`: a PyTorch Kineto trace (one process,
// `gpus` devices, `steps` ProfilerStep#N ranges) whose math kernels are
// launched by operators with and without shapes, in the forms real traces
// take (tools/tracegen/README.md), with every figure a reader must find:
//
//   aten::mm with Input Dims            a cuBLAS GEMM kernel: counted
//   aten::addmm without Input Dims      an nvjet GEMM kernel: an operator of
//                                       a counted kind with unusable shapes
//   aten::scaled_dot_product_attention  > aten::_scaled_dot_product_flash_
//                                       attention (shapes, causal) > aten::
//                                       _flash_attention_forward, which
//                                       launches the flash kernel: counted
//                                       through the enclosing operator
//   vllm::unified_attention (shapes)    a split-KV flash kernel: no formula
//   no operator at all                  a CUTLASS GEMM kernel
//   fbgemm::split_embedding_*           FBGEMM kernels whose parameter list
//                                       names fbgemm_gpu::FixedDivisor (no
//                                       GEMM)
//   --bytes: aten::add (shapes, bf16)   an elementwise kernel: bytes of its
//                                       two inputs and output; and a memcpy
//                                       and a memset with CUPTI's `bytes`
//
// Bytes truth (issue #51, each tensor once): aten::mm (M*K + K*N + M*N)
// bf16 elements in gemm; the flash attention operator's query, key, value
// and output in attention; aten::add in elementwise.
//
// `correlation_ids`: every kernel's and launch's External id is its
// correlation id, as older Kineto writes it, and operators number their
// own External ids from the same start (an External-id join meets the
// wrong operators). Times are whole nanoseconds. Deterministic in `seed`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace profwatch::tracegen {

struct KinetoMathParams {
  int gpus = 1;
  int steps = 3;
  uint64_t seed = 1;
  bool correlation_ids = false;
  bool bytes = false;  // also an elementwise operator and memory operations
  // The kernel the SDPA operator launches: "flash" (FlashAttention 2),
  // "aotriton" (AOTriton's attn_fwd, PyTorch on ROCm), "sage"
  // (SageAttention's sage_fwd), "ck" (Composable Kernel's tile FMHA).
  std::string attention_kernel = "flash";
};

// The kernel name `attention_kernel` stands for; empty when unknown.
std::string AttentionKernelName(const std::string& attention_kernel);

struct KinetoMathKernel {
  std::string name;
  std::string family;  // the native (nvidia) rule set's family of the name
  uint64_t launches = 0;
  int64_t ps = 0;
};

// Uncounted math time as a correct reader names it: by its operator where
// the trace says which (`op`), else by the kernel.
struct KinetoMathUncounted {
  std::string name;
  bool op = false;
  int64_t ps = 0;
};

struct KinetoMathTruth {
  std::vector<KinetoMathKernel> kernels;
  double matmul_flops = 0, attention_flops = 0;  // summed over GPUs and steps
  int64_t math_ps = 0;                           // gemm + attention kernels
  int64_t counted_math_ps = 0;                   // of it, with counted FLOPs
  int64_t unknown_ops = 0;                       // counted kinds without shapes
  std::vector<KinetoMathUncounted> uncounted;
  std::map<std::string, double> bytes_by_family;  // summed over GPUs and steps
  double memop_bytes = 0;
  int64_t memops = 0;
};

bool WriteKinetoMathTrace(const KinetoMathParams& p, const std::string& path,
                          KinetoMathTruth* truth, std::string* error);

}  // namespace profwatch::tracegen
