// WindowFigures: every derived figure of one analysed window, computed once
// (FiguresOf) from its aggregate (WindowStats), its step time (step_basis.h)
// and the device it ran on (the peak in the aggregate's FlopStats). Every
// output renders this value and computes nothing: /metrics, the JSON and
// table reports, compare and the --history line. A new figure is added here
// and rendered by each output that shows it.
//
// Per GPU per step = summed over the window's GPUs and profiled steps, then
// divided by GPUs x steps (WindowStats::divisor(); 0 without GPUs). Absent is
// absent: a figure that could not be computed is unset (std::optional).
//
// A plain value: every part is a copy (names, launches and devices are
// copied out of the aggregate), so a part outlives the WindowFigures and the
// WindowStats it came from; `stats` is kept for the outputs that show the
// aggregate itself. Immutable once built; safe to share between threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregate/window_stats.h"
#include "figures/byte_figures.h"
#include "figures/collective_figures.h"
#include "figures/diagnosis.h"
#include "figures/flop_figures.h"
#include "figures/step_basis.h"

namespace profwatch::figures {

// A top kernel of a family (reports keep its whole name).
struct KernelFigures {
  aggregate::KernelSummary kernel;  // name and launches
  double seconds_per_gpu_step = 0;
  double launches_per_gpu_step = 0;
  double exclusive_seconds_per_gpu_step = 0;
  double idle_before_seconds_per_gpu_step = 0;
};

// A family's top kernels as metric series: kernels whose short names
// (kernel_label.h) are equal are one series, their time summed; largest
// first (equal times in top-kernel order).
struct KernelSeries {
  std::string label;
  double seconds_per_gpu_step = 0;
};

struct FamilyFigures {
  std::string family;  // its name
  classify::FamilyKind kind = classify::FamilyKind::kCompute;
  int64_t launches = 0;          // over the window
  int64_t distinct_kernels = 0;  // over the window
  double seconds_per_gpu_step = 0;
  double launches_per_gpu_step = 0;
  double exclusive_seconds_per_gpu_step = 0;
  double idle_before_seconds_per_gpu_step = 0;
  double share_of_kernel_time = 0;  // of the window's total kernel time; 0 without any
  // Summed over the window's GPUs and steps.
  double raw_seconds = 0;
  double raw_launches = 0;
  // The family launched a kernel in the window. A family of the rule set
  // that did not has only zeros, which /metrics leaves out by default.
  bool ran = false;
  std::vector<KernelFigures> kernels;  // the family's top kernels, in their order
  std::vector<KernelSeries> series;
  // Its bytes: an index into WindowFigures::bytes.families; unset when it
  // has none.
  std::optional<size_t> bytes;
};

// A kernel of a window-level ranking (most exclusive, most idle before).
struct RankedFigures {
  aggregate::RankedKernel kernel;
  double seconds_per_gpu_step = 0;
};

// The measured decomposition, per GPU per step.
struct TimeFigures {
  double total_kernel_seconds = 0;
  double launches = 0;
  double busy_seconds = 0;          // union of kernel intervals
  double idle_seconds = 0;          // span - busy
  double overlap_seconds = 0;       // total kernel - busy
  double exposed_comm_seconds = 0;  // communication not under compute
  // Memory operations (memcpy/memset: not kernels, not in the totals above;
  // a kMemory family's kernels are counted here too, so that family never
  // runs a kernel): every one, sized or not.
  double memops = 0;
  double memop_seconds = 0;
};

// The window's additive sums, undivided, for recording rules that add
// windows across sidecars before dividing.
struct RawSums {
  double kernel_seconds = 0;
  double busy_seconds = 0;
  double span_seconds = 0;
  double exposed_comm_seconds = 0;
  double gpu_steps = 0;  // the divisor
};

struct RegionFigures {
  std::string region;  // its name
  double kernel_seconds_per_gpu_step = 0;
};

// JAX kernels without a scope (CUDA graphs), per GPU per step.
struct UnscopedFigures {
  double kernel_seconds_per_gpu_step = 0;
  double placed_seconds_per_gpu_step = 0;  // placed by the HLO schedule
  std::string unplaced_reason;             // empty: all placed
};

struct RegionsFigures {
  // Some kernel of the window carried a scope (false: the input has none).
  bool has_regions = false;
  std::vector<RegionFigures> listed;                 // largest first, at most --top-regions
  std::optional<double> other_seconds_per_gpu_step;  // the rest; unset when none
  double coverage = 0;                               // share of kernel time with a region
  // Kernel time with no region, per GPU per step.
  double unattributed_seconds_per_gpu_step = 0;
  std::optional<UnscopedFigures> unscoped;  // unset without such kernels
  // Which inputs the window holds, for why some kernels have no region.
  bool jax_input = false;
  bool torch_input = false;
};

// The GPU with the most compute busy time against the median GPU, and the
// spread of compute busy time over the window's GPUs.
struct StragglerFigures {
  aggregate::DeviceSummary device;
  std::string host;                 // from its file name
  double compute_busy_seconds = 0;  // its own, over the window
  double median_compute_busy_seconds = 0;
  double ratio = 0;  // compute busy / the median's; 0 when the median is 0
  // Per step (per GPU already): its compute busy time and the median's, the
  // least busy, median and busiest GPU, and the sum over the GPUs.
  double compute_busy_seconds_per_step = 0;
  double median_compute_busy_seconds_per_step = 0;
  double min_seconds_per_step = 0;
  double median_seconds_per_step = 0;
  double max_seconds_per_step = 0;
  double sum_seconds_per_step = 0;
};

// The step time against kernel time.
struct StepGap {
  double step_seconds = 0;
  double total_kernel_seconds = 0;  // per GPU per step
  double minus_kernel_seconds = 0;  // step - total kernel
  double ratio = 0;                 // (step - total kernel) / step
};

// The collective with the most exposed time.
struct ExposedCollective {
  size_t index = 0;  // in WindowFigures::collectives
  // Its exposed time over the diagnosis step; unset when that step is 0.
  std::optional<double> share_of_step;
};

// One device (GPU) of the window, over the window (not per step).
struct DeviceFigures {
  aggregate::DeviceSummary device;
  double kernel_seconds = 0;
  double busy_seconds = 0;
  double span_seconds = 0;
  double idle_seconds = 0;     // span - busy
  double overlap_seconds = 0;  // kernel - busy
  double comm_seconds = 0;
  double exposed_comm_seconds = 0;
  double compute_busy_seconds = 0;
  double exclusive_seconds = 0;   // exactly one kernel running
  double overlapped_seconds = 0;  // busy - exclusive
  double memop_seconds = 0;
};

struct WindowFigures {
  std::shared_ptr<const aggregate::WindowStats> stats;  // never null
  StepTime step;  // the step time the figures were computed for

  // Trace events dropped, by reason, summed over the window's files.
  std::map<std::string, uint64_t> dropped_events;
  std::vector<FamilyFigures> families;  // the aggregate's order
  // The family with the most kernel time (the first of equals); unset when
  // no family ran a kernel.
  std::optional<size_t> top_family;
  TimeFigures time;
  RawSums raw;
  std::vector<RankedFigures> top_exclusive;
  std::vector<RankedFigures> top_idle_before;
  RegionsFigures regions;
  std::optional<StragglerFigures> straggler;  // unset without GPUs
  std::optional<double> trace_step_seconds;   // median in-trace step; unset without markers
  FlopFigures flops;
  ByteFigures bytes;
  std::vector<CollectiveFigures> collectives;  // kinds that ran; empty without GPUs
  std::optional<ExposedCollective> exposed_collective;
  std::optional<StepGap> step_gap;  // a step time above 0 and GPUs
  Diagnosis diagnosis;
  std::vector<DeviceFigures> devices;
};

// Every figure of `stats` for the step time `step`. REQUIRES: stats.
WindowFigures FiguresOf(std::shared_ptr<const aggregate::WindowStats> stats, const StepTime& step);

}  // namespace profwatch::figures
