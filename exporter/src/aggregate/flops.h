// FLOP counts of PyTorch operators from the shapes Kineto records
// (`record_shapes=True`: args "Input Dims" and "Concrete Inputs"), and the
// dense bf16 peaks of common accelerators. See docs/json-format.md "FLOP/s
// and MFU" for what is counted. Pure functions; thread-safe.
//
// An operator's FLOPs count once, through the kernels it launched itself
// (Kineto links a kernel to the innermost operator by "External id"), so
// aten::linear over aten::mm is never counted twice.
//  - matmul: aten::mm, addmm ([M,K]x[K,N]: 2MKN), bmm, baddbmm (2BMKN),
//    linear (input [...,K], weight [N,K]: 2*prod(...)*K*N), matmul
//    (batch dims broadcast: 2*batch*M*K*N).
//  - attention (query [B,H,Sq,D], key [B,H,Sk,D], value [B,H,Sk,Dv]):
//    forward 2*B*H*Sq*Sk*(D+Dv) (QK^T and PV), backward 2.5x that (the two
//    products recomputed and three gradients: five of the four-operand
//    size); causal (is_causal true) halves either. The scaled-dot-product
//    flash, efficient and cuDNN operators and cuDNN's forward/backward.
//  - conv: aten::convolution, _convolution, cudnn_convolution (input
//    [N,C,H,W...], weight [O,C/g,kH,kW...], stride/padding/dilation from the
//    concrete inputs): 2*N*O*(C/g)*prod(k)*prod(output spatial).
// Shapes that are missing, negative, inconsistent or overflow int64 make the
// operator unknown: counted as such, never guessed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aggregate/window_stats.h"

namespace profwatch::aggregate {

enum class FlopKind : uint8_t { kMatmul, kAttention, kConv };
inline constexpr int kFlopKinds = 3;
std::string_view FlopKindName(FlopKind k);  // "matmul", "attention", "conv"

struct OpFlops {
  FlopKind kind = FlopKind::kMatmul;
  bool known = false;  // false: a counted operator whose shapes are unusable
  int64_t flops = 0;
};

// nullopt: not an operator counted here.
std::optional<OpFlops> TorchOpFlops(std::string_view name, std::string_view input_dims,
                                    std::string_view concrete_inputs);

// Dense bf16 peak FLOP/s of a device named as the trace names it (Kineto
// deviceProperties name, xplane gpu_device_name); nullopt when unknown.
std::optional<double> DensePeakFlops(std::string_view device_name);

// What a window's counted FLOPs say (per GPU per step, FLOP/s per GPU).
struct FlopFigures {
  std::array<double, 3> per_gpu_step{};  // by FlopKind
  double total_per_gpu_step = 0;
  // Counted FLOPs over the time of the kernels that did them.
  std::optional<double> achieved_per_second;
  // The total over the step time: what MaxText logs as TFLOP/s/device.
  std::optional<double> model_per_second;
  std::optional<double> mfu;  // model_per_second / the peak
  std::string mfu_note;       // why mfu is null
};
// nullopt when the window counted no operator. `step_seconds`: the run's
// step (log or config), else the trace's step markers are used.
std::optional<FlopFigures> ComputeFlopFigures(const WindowStats& s,
                                              std::optional<double> step_seconds);

}  // namespace profwatch::aggregate
