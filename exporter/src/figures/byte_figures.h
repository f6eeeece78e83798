// What a window's counted bytes say (aggregate/bytes.h holds the model):
// per family, bytes and the modeled kernel time per GPU per step, the
// achieved bandwidth, the arithmetic intensity against the FLOPs counted
// for the same family, and the family's place on the device's roofline
// (ridge = peak FLOP/s / peak HBM bandwidth); per window, the share of
// compute kernel time with a bytes model. Absent is absent: a figure that
// could not be computed is unset, and a note says why. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aggregate/window_stats.h"
#include "figures/flop_figures.h"

namespace profwatch::figures {

// Bytes of one kernel family (each operator's or launch's bytes in the
// family of the kernel that ran it). Set only for a family with bytes.
struct FamilyByteFigures {
  std::string family;
  double bytes_per_gpu_step = 0;
  // Its own kernels' time that has a bytes model: never above the family's
  // kernel time (ByteStats).
  double modeled_seconds_per_gpu_step = 0;
  // Summed over the window's GPUs and steps (the metrics' raw sums).
  double raw_bytes = 0;
  double raw_modeled_seconds = 0;
  // bytes / modeled seconds; unset when the modeled kernels took no time.
  std::optional<double> achieved_bytes_per_second;
  // The family's counted FLOPs per GPU per step over its bytes; unset when
  // the family has no counted FLOPs (FlopFigures::families).
  std::optional<double> arithmetic_intensity;
  // With counted FLOPs: "memory" below the ridge, else "compute"; unset
  // without a known peak FLOP rate and HBM bandwidth. Without counted FLOPs:
  // "memory" when every modeled kernel of the family is of a kind known to
  // be memory-bound (ByteStats::Family::memory_bound_ps equals its
  // kernel_ps; the kinds: aggregate/bytes.h, OpBytes::memory_bound) and the
  // HBM peak is known, else unset.
  std::optional<std::string_view> roofline_bound;
  // Achieved over the roof at its intensity: memory-bound, the achieved
  // bandwidth over the peak bandwidth; compute-bound, the family's achieved
  // FLOP rate over the peak FLOP rate. Unset with the bound.
  std::optional<double> roofline_fraction;
};

struct ByteFigures {
  // The families with bytes, in the aggregate's family order.
  std::vector<FamilyByteFigures> families;
  // Bytes over every family per GPU per step; unset when none were modeled
  // (`note` says why).
  std::optional<double> bytes_per_gpu_step;
  // The share of compute kernel time (every family but communication and
  // memory) that has a bytes model; unset without compute kernels or
  // without bytes.
  std::optional<double> coverage;
  int64_t unknown_ops = 0;  // operators or launches with a bytes model and unusable shapes
  // Memory operations (memcpy/memset) with a byte count from the trace, per
  // GPU per step: bytes and their time. Unset when none had a count.
  std::optional<double> memop_bytes_per_gpu_step;
  std::optional<double> memop_seconds_per_gpu_step;
  // The peak HBM bandwidth (bytes/s) and its source; unset when unknown.
  std::optional<double> peak_hbm_bytes_per_second;
  std::string peak_hbm_source;
  // peak FLOP/s / peak HBM bandwidth (FLOP/B); unset without both peaks.
  std::optional<double> ridge;
  std::string note;  // why bytes_per_gpu_step is unset ("" when set)
  // Why the roofline figures are unset ("" when some family has them).
  std::string roofline_note;
};

// `flops` the window's FLOP figures (for intensity and the compute roof).
ByteFigures ComputeByteFigures(const aggregate::WindowStats& s, const FlopFigures& flops);

}  // namespace profwatch::figures
