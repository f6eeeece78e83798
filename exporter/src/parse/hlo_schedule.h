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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "parse/limits.h"
#include "parse/op_shapes.h"

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
  // What one execution computes of the kinds whose FLOPs are counted, as
  // shapes (aggregate/flops.h HloLaunchFlops has the formulas): the dots of a
  // fusion (in its computations, each with how often one execution runs it)
  // or of a `dot` or cuBLAS GEMM, or one cuDNN fused attention.
  enum class Flops : uint8_t { kNone, kMatmul, kAttention };
  Flops flop_kind = Flops::kNone;
  struct Dot {
    DotShape shape;
    int64_t count = 1;
  };
  std::vector<Dot> dots{};                    // kMatmul
  std::optional<AttentionShape> attention{};  // kAttention
  // A counted kind whose shapes could not be read (a missing operand shape,
  // an unreadable backend config, more than kMaxFusionDots distinct dots):
  // its FLOPs are unknown, never guessed.
  bool shapes_unusable = false;
  // Bytes one execution reads and writes (aggregate/bytes.h HloLaunchBytes):
  // operands and result of the instruction, each once, without the
  // workspace of a cuBLAS/cuDNN custom-call (the u8 last element of its
  // result tuple); inside a fusion, a parameter read only through slices,
  // dynamic-slices or gathers counts what they read, and an in-place
  // scatter or dynamic-update-slice what it touches (XLA's cost analysis
  // rules). nullopt: unknown (a shape without a known element size, an
  // overflow, a kOpaque launch).
  std::optional<int64_t> bytes{};
};

// What one collective instruction moves (all-gather, all-reduce,
// reduce-scatter, all-to-all, collective-permute, collective-broadcast,
// their -start forms, and an async-start wrapping one): bytes of its operands (summed: a combined
// collective has several) and of its result (the outputs alone for an
// all-gather-start, whose tuple holds the operands too), and its replica
// groups. -1 where
// unknown: a shape without a known element size (sub-byte types), an
// overflow, no replica groups (all devices: a count the module does not
// give), groups of unequal sizes.
struct HloCollective {
  int64_t in_bytes = -1;
  int64_t out_bytes = -1;
  int64_t group_size = -1;  // devices in one replica group
  int64_t groups = -1;      // replica groups
};

// Bounds on the work of reading one module, so that no module (a crafted
// one: a computation that calls itself, calls nested and repeated until the
// inlined schedule is astronomically long) can hold the reader. A module
// over any of them is skipped as too complex (HloModuleSchedule::too_complex);
// docs/security.md ("Crafted trace files: the HLO modules of an
// .xplane.pb") says what each bounds and how the defaults were chosen.
struct HloLimits {
  // Instructions decoded, over all computations of the module.
  size_t max_instructions = size_t{1} << 18;
  // Computations nested in one another: calls inlined into the schedule, and
  // computations inside a fusion (each fusion's scope and FLOPs walk them).
  int max_depth = 64;
  // Schedule entries visited while inlining scheduled calls (a computation
  // called from n places is visited n times; every launch is one entry).
  size_t max_expanded = size_t{1} << 18;
  // Arrays of the instructions' shapes decoded (a tuple's leaves, nested
  // ones flattened; an empty tuple element is one), over the module: what
  // the decoded shapes hold, however the tuples nest.
  size_t max_shape_leaves = size_t{1} << 19;
  // Values of repeated fields decoded, over the module: shape dimensions,
  // operand and called-computation ids, replica group members, dot
  // dimension numbers and the schedule's instruction ids (a packed field of
  // millions of values is a few bytes per value).
  size_t max_repeated = size_t{1} << 22;
};

// What reading one module took (the quantities HloLimits bounds).
struct HloCost {
  size_t instructions = 0;
  size_t computations = 0;
  size_t expanded = 0;            // schedule entries visited while inlining calls
  size_t fused_computations = 0;  // computations summarised for fusions (each once)
  // Launches derived from their instruction: each once, however often inlined.
  size_t derived = 0;
  int depth = 0;            // deepest nesting reached (0: the entry alone)
  size_t shape_leaves = 0;  // arrays of decoded shapes
  size_t repeated = 0;      // values of repeated fields decoded
};

struct HloModuleSchedule {
  std::string name;                 // HloModuleProto.name, the kernels' hlo_module
  std::vector<std::string> scopes;  // distinct scopes (op_name paths)
  std::vector<HloLaunch> launches;  // in schedule order
  // The module's collective instructions by name (a JAX kernel's hlo_op).
  std::map<std::string, HloCollective, std::less<>> collectives;
  // Non-empty: the module exceeded an HloLimits bound or a computation calls
  // itself (directly or through others); why, prefixed "too_complex: ".
  // scopes and launches are then empty: nothing of the module is used.
  std::string too_complex;
  HloCost cost;
};

// The modules of one XSpace by name. A name compiled more than once (two
// modules with one name) cannot tell its kernels apart: it is left out and
// listed in `ambiguous`.
struct HloIndex {
  std::map<std::string, HloModuleSchedule, std::less<>> modules;
  std::vector<std::string> ambiguous;
  std::vector<std::string> errors;  // modules that could not be decoded
  // Modules skipped as too complex (HloModuleSchedule::too_complex): name ->
  // why. Their kernels are counted but not placed, nor their FLOPs counted.
  std::map<std::string, std::string, std::less<>> too_complex;
  const HloModuleSchedule* Find(std::string_view module) const;
};

// The shapes of a launch (one execution), read like PyTorch's operators
// (aggregate/flops.h): a `dot` (in a fusion, or alone) from its operands'
// shapes and dot_dimension_numbers; a cuBLAS custom-call (`__cublas$gemm`,
// `__cublas$lt$matmul...`) the same from its gemm_backend_config; a cuDNN
// fused attention (`__cudnn$fmha...`) from its intermediate tensor
// [B,H,Sq,Sk], the last dimension of its query and value operands, its
// mask_type (CAUSAL) and target (Backward).

// Decodes one serialised xla.HloProto (or a bare HloModuleProto when
// `bare_module`). Errors: kCorrupt (bad wire format, a computation id given
// twice), kUnsupported (no entry computation or no schedule: an unoptimised
// module). A module over `limits`, or whose computations call themselves,
// is a result with `too_complex` set. Every walk over the computations is
// memoised or counted: the work is bounded by the module's bytes and
// `limits`, whatever they hold.
Result<HloModuleSchedule> DecodeHloProto(std::string_view bytes, bool bare_module = false,
                                         const HloLimits& limits = {});

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
