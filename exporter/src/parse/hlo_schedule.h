// The launch order of a compiled XLA module, from its HloProto (the
// `/host:metadata` plane of an XSpace holds one per compiled module; see
// docs/xplane.md "Regions inside CUDA graphs").
//
// When XLA runs a step as one CUDA graph (command buffer), its kernels carry
// the module (`hlo_module`) but neither their instruction nor their scope.
// The module's schedule says in which order its instructions launch, and each
// instruction's OpMetadata.op_name is its scope (`jit(step)/jvp(decoder/
// layer_0)/attention/...`). This reduces a module to what the aggregator
// needs to place kernels: the scheduled sequence of kernel-launching
// instructions of the entry computation (scheduled `call`s inlined), each
// with its scope and, for fusions, the kernel name XLA derives from it.
//
// Field numbers follow xla/service/hlo.proto. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace profwatch::parse {

struct HloLaunch {
  enum class Kind : uint8_t {
    // A fusion: XLA emits its kernel named after the instruction
    // (`loop_add_fusion.3` -> `loop_add_fusion_3`), or after an identical
    // fusion whose kernel it reuses (same base, another number).
    kFusion,
    // A library call (custom-call: cuBLAS, cuDNN; collectives; other ops
    // that launch kernels not named after an instruction).
    kLibrary,
    // Control flow whose kernels are not in this order (while, conditional,
    // async computations, calls without a schedule): the kernels around it
    // cannot be placed by order.
    kOpaque,
  };
  Kind kind = Kind::kLibrary;
  std::string kernel_base;  // kFusion: KernelBaseOfInstruction(name)
  uint32_t scope = 0;       // index into HloModuleSchedule::scopes
  // FLOPs of one execution, from the shapes (see LaunchFlops below).
  enum class Flops : uint8_t { kNone, kMatmul, kAttention };
  Flops flop_kind = Flops::kNone;
  int64_t flops = 0;  // -1: a kind counted here whose shapes are unusable
};

struct HloModuleSchedule {
  std::string name;                 // HloModuleProto.name, the kernels' hlo_module
  std::vector<std::string> scopes;  // distinct scopes (op_name paths)
  std::vector<HloLaunch> launches;  // in schedule order
};

// The modules of one XSpace by name. A name compiled more than once (two
// modules with one name) cannot tell its kernels apart: it is left out and
// listed in `ambiguous`.
struct HloIndex {
  std::map<std::string, HloModuleSchedule, std::less<>> modules;
  std::vector<std::string> ambiguous;
  std::vector<std::string> errors;  // modules that could not be decoded
  const HloModuleSchedule* Find(std::string_view module) const;
};

// FLOPs of a launch (one execution), counted like PyTorch's operators
// (aggregate/flops.h): a `dot` (in a fusion, or alone) 2*batch*M*N*K from
// its operands' shapes and dot_dimension_numbers; a cuBLAS custom-call
// (`__cublas$gemm`, `__cublas$lt$matmul...`) the same from its
// gemm_backend_config; a cuDNN fused attention (`__cudnn$fmha...`)
// 2*B*H*Sq*Sk*(D+Dv) from its intermediate tensor [B,H,Sq,Sk] and the last
// dimension of its query and value operands, halved for a CAUSAL mask, 2.5x
// for the backward.

// Decodes one serialised xla.HloProto (or a bare HloModuleProto when
// `bare_module`). Errors: kCorrupt (bad wire format), kUnsupported (no
// entry computation or no schedule: an unoptimised module).
Result<HloModuleSchedule> DecodeHloProto(std::string_view bytes, bool bare_module = false);

// The part of a kernel name that does not depend on which of several
// identical fusions named it: `loop_add_fusion_12` -> `loop_add_fusion`.
std::string_view KernelBaseOfKernel(std::string_view kernel);
// The same for an instruction: `loop_add_fusion.12` -> `loop_add_fusion`,
// with the characters XLA replaces in kernel names ('.', '-') as '_'.
std::string KernelBaseOfInstruction(std::string_view instruction);

// The components of an op_name path: split at '/' outside parentheses
// (`jit(f)/jvp(decoder/layer_0)/mlp` -> jit(f), jvp(decoder/layer_0), mlp).
std::vector<std::string_view> ScopeComponents(std::string_view path);

// The scope shared by a set of op_name paths: their longest common prefix of
// whole '/'-separated components ('/' inside parentheses does not separate:
// `jvp(decoder/layer_0)` is one component). Empty when they share nothing.
std::string CommonScope(const std::vector<std::string_view>& paths);

}  // namespace profwatch::parse
