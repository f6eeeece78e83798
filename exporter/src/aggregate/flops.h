// The FLOP formulas, the one place they are defined: of PyTorch operators
// from the shapes Kineto records (`record_shapes=True`: args "Input Dims"
// and "Concrete Inputs", decoded by parse/op_shapes.h) and of XLA launches
// from their HLO shapes (parse/hlo_schedule.h); and the dense bf16 peaks of
// common accelerators. See docs/json-format.md "FLOP/s and MFU" for what is
// counted. Pure functions; thread-safe.
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

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aggregate/window_stats.h"
#include "parse/hlo_schedule.h"
#include "parse/op_shapes.h"

namespace profwatch::aggregate {

enum class FlopKind : uint8_t { kMatmul, kAttention, kConv };
inline constexpr int kFlopKinds = 3;
std::string_view FlopKindName(FlopKind k);  // "matmul", "attention", "conv"

struct OpFlops {
  FlopKind kind = FlopKind::kMatmul;
  bool known = false;  // false: a counted operator whose shapes are unusable
  int64_t flops = 0;
};

// A matrix product [B, M, K] x [B, K, N]: 2*B*M*N*K. Every matmul count
// (PyTorch's, HLO dots, cuBLAS GEMMs) ends here; nullopt on overflow or a
// negative size.
struct MatmulShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};
std::optional<int64_t> MatmulFlops(const MatmulShape& s);
// An HLO dot as a MatmulShape: batch, contracting and free dimensions of
// each operand multiplied; nullopt when the dimension numbers do not fit the
// shapes (an index out of range or given twice, unequal contracting counts).
std::optional<int64_t> DotFlops(const parse::DotShape& d);
// 2*B*H*Sq*Sk*(D+Dv), 2.5x for the backward, halved when causal.
std::optional<int64_t> AttentionFlops(const parse::AttentionShape& a);
// One execution of an HLO launch: its dots (each times its count) and its
// attention; 0 for a launch of no counted kind; nullopt when its shapes are
// unusable.
std::optional<int64_t> HloLaunchFlops(const parse::HloLaunch& l);

// The kind of a counted PyTorch operator; nullopt: not an operator counted
// here (its shapes need not be decoded).
std::optional<FlopKind> TorchOpKind(std::string_view name);
// nullopt: not an operator counted here.
std::optional<OpFlops> TorchOpFlops(std::string_view name, const parse::OpShapes& shapes);

// Dense bf16 peak FLOP/s of a device named as the trace names it (Kineto
// deviceProperties name, xplane gpu_device_name); nullopt when unknown.
std::optional<double> DensePeakFlops(std::string_view device_name);

// The largest FLOP rate a count may imply before it is called impossible:
// the device's peak (FlopStats::peak_per_second: the datasheet's dense bf16
// peak or --peak-flops), else kNoPeakFlopsBound. FP8 or sparse kernels run
// above the bf16 peak: such runs give their own peak with --peak-flops.
// kNoPeakFlopsBound is above every dense rate of the devices in the peak
// table at any precision (B200: 9 PFLOP/s dense FP4), so no real count
// trips it; a count above it comes from shapes no kernel could have run.
inline constexpr double kNoPeakFlopsBound = 1e16;
double PlausibleFlopsBound(const FlopStats& f);

}  // namespace profwatch::aggregate
