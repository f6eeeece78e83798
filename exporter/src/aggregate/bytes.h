// The bytes-moved formulas, the one place they are defined (docs/bytes-model.md
// states each and where it differs from TraceLens): of PyTorch operators from
// the shapes and element types Kineto records (`record_shapes=True`: args
// "Input Dims", "Input type" and "Concrete Inputs", decoded by
// parse/op_shapes.h), of XLA launches from their HLO shapes (decoded into
// parse::HloLaunch::bytes by parse/hlo_schedule.cc), and the HBM bandwidth
// peaks of common accelerators. Pure functions; thread-safe.
//
// The convention (TraceLens's): every tensor an operator names is read or
// written once; caches, re-reads and workspaces are not counted. An
// operator's bytes count once, through the kernels it launched itself, as
// its FLOPs do (flops.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "parse/hlo_schedule.h"
#include "parse/op_shapes.h"

namespace profwatch::aggregate {

// Bytes of one element of a PyTorch type as Kineto's "Input type" names it
// ("c10::BFloat16", "float", "long int", "c10::Float8_e4m3fn", ...), a
// c10::ScalarType name ("BFloat16", "Float") or an HLO element type ("bf16",
// "f32", "f8e4m3fn", "s32", "pred", ...); nullopt when unknown or smaller
// than a byte (s4, u4, f4e2m1fn: a count in bytes would be a guess), and for
// the names of non-tensor arguments ("Scalar", "ScalarList", "").
std::optional<int64_t> ElementBytes(std::string_view torch_or_hlo_type);

struct OpBytes {
  bool known = false;  // false: a modelled operator whose shapes or types are unusable
  int64_t bytes = 0;   // read + written, each tensor once
  // The operator's kernels are of a kind known to be memory-bound (the
  // roofline's "memory" place without a FLOP count, figures/byte_figures.h):
  // elementwise, copies and fills, normalisations and their backward,
  // reductions, softmax; of torch.compile's Triton kernels the pointwise
  // (triton_poi_) and reduction (triton_red_, triton_per_) ones. Not GEMMs,
  // attention, Inductor's templates (triton_tem_, a GEMM or convolution) or
  // any other Triton kernel (whose kind the name does not say).
  bool memory_bound = false;
};

// Whether an operator's kernels are of a memory-bound kind (OpBytes::
// memory_bound) by its name alone; false for an operator of no bytes model.
bool MemoryBoundOp(std::string_view op_name);

// Bytes one call of a PyTorch operator reads and writes. nullopt: an
// operator with no bytes model (its kernels have no bytes); known=false: a
// modelled operator whose shapes or element types are missing, unknown or
// overflow int64 (never guessed).
std::optional<OpBytes> TorchOpBytes(std::string_view op_name, const parse::OpShapes& shapes);

// Bytes one execution of an HLO launch reads and writes (operands and
// result, without cuBLAS/cuDNN workspace; inside fusions what slices,
// gathers and in-place updates touch): parse::HloLaunch::bytes. nullopt:
// unknown (a shape without a known element size, an overflow, a launch of
// no bytes model).
std::optional<int64_t> HloLaunchBytes(const parse::HloLaunch& l);

// The HBM bandwidth of a device named as the trace names it (Kineto
// deviceProperties name, xplane gpu_device_name), matched as DensePeakFlops
// matches (a substring, more specific names first), and the datasheet it
// comes from. nullopt when unknown.
struct HbmPeak {
  double bytes_per_second = 0;
  std::string_view source;  // the vendor datasheet the figure is from
};
std::optional<HbmPeak> PeakHbmBandwidth(std::string_view device_name);

}  // namespace profwatch::aggregate
