// The diagnosis of one window: what an operator should act on. Pure function
// of WindowStats and the step time, computed once per window with its other
// figures (window_figures.h); every report, the snapshot's metrics and
// (through them) the alert rules render it, so they say the same thing.
//
// Definitions (docs/alerts-and-dashboards.md "Terms" says why):
//  - a main-stream blocker is a kernel outside the math and memory families
//    that ran alone on its GPU for at least half of its time, in calls of
//    kSerialCallPs or more on average (window_stats.h SerialKernel), and
//    alone for at least kBlockerShareOfStep of the step. XLA's serial ragged
//    all-to-all, an atomic scatter fusion or a fusion whose calls last tens
//    of ms; a GEMM, attention or convolution kernel running alone is the
//    step's work, never a blocker;
//  - the host/input stall is the idle time before each step's first kernel:
//    per GPU, the (profiled steps - 1) longest idle gaps between its kernels
//    (the boundaries between the window's steps when the host holds the GPU
//    back), summed and divided by the profiled steps like every per-step
//    figure (idle per step is (span - busy) / steps), averaged over the GPUs.
//    The gaps are part of the idle, so the stall per step is never larger
//    than the idle per step. It is called a stall when it is at least
//    kHostStallShareOfStep of the step.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "aggregate/window_stats.h"
#include "figures/step_basis.h"

namespace profwatch::figures {

inline constexpr double kBlockerShareOfStep = 0.10;
// aggregate::kSerialCallPs in milliseconds, for the words of a report.
inline constexpr double kSerialCallMs = aggregate::PsToSeconds(aggregate::kSerialCallPs) * 1e3;
inline constexpr double kHostStallShareOfStep = 0.10;

struct Blocker {
  std::string kernel;
  std::string label;  // its short name (kernel_label.h): the metric's `kernel`
  std::string family;
  double exclusive_seconds_per_gpu_step = 0;  // time it ran alone
  double share_of_step = 0;                   // exclusive / the step
  double seconds_per_call = 0;                // mean exclusive time per launch
};

struct HostStall {
  int gaps_per_gpu = 0;              // profiled steps - 1
  double seconds_per_step = 0;       // the gaps over the profiled steps, GPUs' mean
  double share_of_step = 0;          // seconds_per_step / the step
  std::vector<double> gaps_seconds;  // the worst GPU's gaps, longest first
  std::string gpu;                   // the worst GPU ("<file> <device>")
  bool stalled = false;              // share_of_step >= kHostStallShareOfStep
};

struct Diagnosis {
  // The step the shares refer to and where it came from (DiagnosisStepOf:
  // the window's step time, else its step markers, else its kernels' span).
  double step_seconds = 0;
  std::string step_basis;
  std::vector<Blocker> blockers;             // most exclusive time first; empty when none
  double blockers_seconds_per_gpu_step = 0;  // their time alone, summed
  // Unset when the window has one profiled step or no GPU (no boundary).
  std::optional<HostStall> host_stall;
  // Time math kernels ran alone, per GPU per step, and its share of the
  // step: the step's own work on a one-stream GPU (reported, never blamed).
  double math_alone_seconds_per_gpu_step = 0;
  double math_alone_share_of_step = 0;
};

// `step`: the window's step time (step_basis.h), unset when none is known.
Diagnosis Diagnose(const aggregate::WindowStats& stats, const StepTime& step);

}  // namespace profwatch::figures
