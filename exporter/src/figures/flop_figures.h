// What a window's counted FLOPs say: per GPU per step, the achieved rate of
// the kernels that did them, the model's rate over the step and MFU against
// the device's peak (aggregate/flops.h holds the formulas and peaks; this
// divides and checks). Absent is absent: a figure that could not be computed
// is unset, and a note says why. Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "aggregate/window_stats.h"
#include "figures/step_basis.h"

namespace profwatch::figures {

// Below this share of the math kernels' time (FlopStats::Coverage) counted,
// MFU and the model FLOP rate are lower bounds: the uncounted math kernels
// did FLOPs no one counted. The real runs with shapes or HLO modules are
// counted whole (coverage 1); a twentieth of the math time uncounted is
// where the figure stops being the run's.
inline constexpr double kMinFlopCoverage = 0.95;

// FLOPs of one kernel family (each count in the family of the kernel that ran it).
struct FamilyFlopFigures {
  std::string family;
  double per_gpu_step = 0;
  std::optional<double> achieved_per_second;  // unset when its kernels took no time
};

// What a window's counted FLOPs say (per GPU per step, FLOP/s per GPU).
// Absent is absent: a figure that could not be computed is unset, never 0,
// and the note says why and how to get it.
struct FlopFigures {
  // Unset when nothing was counted (no usable shapes, no HLO modules) or
  // the count is impossible (above PlausibleFlopsBound): `note` says why.
  // By FlopKind. A kind is also unset when its math family (gemm,
  // attention, conv) ran kernels and none of its FLOPs were counted
  // (kind_notes says so): 0 only where no such kernel ran.
  std::array<std::optional<double>, 3> per_gpu_step{};
  // Why a kind is unset while the total is set ("" otherwise), by FlopKind.
  std::array<std::string, 3> kind_notes;
  std::optional<double> total_per_gpu_step;
  // Counted FLOPs over the time of the kernels that did them.
  std::optional<double> achieved_per_second;
  // The total over the step time: what MaxText logs as TFLOP/s/device.
  std::optional<double> model_per_second;
  std::optional<double> mfu;  // model_per_second / the peak
  // The share of the math kernels' time whose FLOPs were counted; unset
  // without math kernels. Below kMinFlopCoverage model_per_second and mfu
  // are lower bounds (lower_bound, and mfu_note says so).
  std::optional<double> coverage;
  bool lower_bound = false;
  // Sum to the total (each counted execution in one family); empty when
  // the total is unset.
  std::vector<FamilyFlopFigures> families;
  std::string note;      // why the total is unset ("" when set)
  std::string mfu_note;  // why mfu is unset ("" when set)
  // The window held operators or launches of a counted kind, usable or not
  // (FlopStats::Counted): a report has something to say about FLOPs.
  bool attempted = false;
  // Kernel time of the counted executions, per GPU per step; set with the
  // total.
  std::optional<double> counted_kernel_seconds_per_gpu_step;
  // Operators or launches of counted kinds whose shapes were unusable.
  int64_t unknown_ops = 0;
  // Math-family kernel time (gemm, attention, conv) per GPU per step, and
  // the part of it whose FLOPs were not counted, for any reason.
  double math_kernel_seconds_per_gpu_step = 0;
  double unknown_kernel_seconds_per_gpu_step = 0;
  // The largest uncounted math time by who launched it (FlopStats::uncounted).
  struct Uncounted {
    std::string name;
    bool op = false;  // an operator's name, else a kernel's
    double seconds_per_gpu_step = 0;
  };
  std::vector<Uncounted> uncounted;
  // The peak MFU divides by (FlopStats: datasheet or --peak-flops); unset
  // when unknown.
  std::optional<double> peak_per_second;
};
// `step`: the window's step time (step_basis.h); without one, MFU uses the
// step the trace's markers show (DiagnosisStepOf) or is unset. A window
// without GPUs gets every figure unset.
FlopFigures ComputeFlopFigures(const aggregate::WindowStats& s, const StepTime& step);

}  // namespace profwatch::figures
