// WindowStats: the plain-data result of analysing one profile window (a set
// of trace files). Produced by aggregate/, read by every report and by the
// snapshot. Times are exact integer picoseconds; per-GPU-per-step figures are
// derived with PerGpuStepSeconds(). Value type, no invariants beyond the
// comments; safe to copy between threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aggregate/collectives.h"
#include "classify/classifier.h"
#include "parse/trace_event.h"

namespace profwatch::aggregate {

enum class LauncherMode : uint8_t { kUnknown, kOneNodePerProcess, kOneGpuPerProcess, kMixed };
// "1-node/proc", "1-GPU/proc", "mixed", "unknown": the label values used everywhere.
std::string_view LauncherModeName(LauncherMode m);
// >= 2 GPUs/process: 1-node/proc; exactly 1: 1-GPU/proc; otherwise mixed; no
// GPUs: unknown. A trace file is one process, except an nsys export (one
// per node): there each pid with kernels is one.
LauncherMode LauncherModeFor(int gpus, int processes);

struct KernelSummary {
  std::string name;
  int64_t launches = 0;
  int64_t total_ps = 0;
  int64_t exclusive_ps = 0;    // time it ran alone on its device (device_sweep.h)
  int64_t idle_before_ps = 0;  // idle gaps that ended when it started
};

// A kernel of a window-level diagnosis list, with its family.
struct RankedKernel {
  std::string name;
  std::string family;
  int64_t ps = 0;  // the ranked figure, summed over the window's devices
};

struct FamilySummary {
  std::string family;
  classify::FamilyKind kind = classify::FamilyKind::kCompute;
  int64_t launches = 0;
  int64_t total_ps = 0;
  int64_t distinct_kernels = 0;
  int64_t exclusive_ps = 0;                // summed exclusive time of its kernels
  int64_t idle_before_ps = 0;              // summed idle-before time of its kernels
  std::vector<KernelSummary> top_kernels;  // by total_ps desc, then name; bounded by top_n
};

// One GPU = one (file, device) pair with at least one kernel.
struct DeviceSummary {
  std::string file;             // path of the trace file
  std::string device;           // "/device:GPU:3" or Kineto "GPU 0"
  int64_t kernels = 0;          // kernel launches (memcpy/memset excluded)
  int64_t kernel_ps = 0;        // summed kernel durations
  int64_t busy_ps = 0;          // length of the union of kernel intervals over all streams
  int64_t span_ps = 0;          // first kernel start to last kernel end
  int streams = 0;              // streams with at least one kernel
  int64_t comm_ps = 0;          // summed comm-family kernel time
  int64_t exposed_comm_ps = 0;  // comm union not covered by the compute union
  int64_t compute_busy_ps = 0;  // union of the non-communication kernels
  int64_t exclusive_ps = 0;     // time exactly one kernel runs (busy - exclusive: overlapped)
  int64_t memops = 0;           // memcpy/memset operations (not kernels)
  int64_t memop_ps = 0;
  // The longest idle gaps between its kernels, longest first, at most
  // device_sweep.h's kLargestGaps (the host-stall figures of diagnosis.h).
  std::vector<int64_t> largest_gaps_ps;
  // nsys exports: the device is (process, CUDA device); the rank is the
  // process's NVTX "rank=N" when it has one. Unset for other inputs.
  std::optional<int64_t> pid;
  std::optional<int64_t> device_id;
  std::optional<int64_t> rank;
};

// A kernel that ran alone on its GPU for at least half of its time, in calls
// of kSerialCallPs or more on average, outside the math and memory
// families: a candidate main-stream blocker (diagnosis.h weighs it against
// the step). Figures summed over the window's devices.
inline constexpr int64_t kSerialCallPs = 1'000'000'000;  // 1 ms
struct SerialKernel {
  std::string name;
  std::string family;
  int64_t launches = 0;
  int64_t total_ps = 0;
  int64_t exclusive_ps = 0;
};

// The device with the largest compute busy time and how far it is above the
// others' median (issue #22's definition).
struct Straggler {
  size_t device = 0;  // index into WindowStats::devices
  std::string host;   // from the file name (watch::HostOfTraceFile)
  int64_t compute_busy_ps = 0;
  double median_compute_busy_ps = 0;  // over every device, the mean of the middle two if even
  double ratio = 0;                   // compute_busy / median; 0 when the median is 0
};

// min, median and max compute busy time over the window's devices.
struct BusyQuantiles {
  double min_ps = 0, median_ps = 0, max_ps = 0;
};

// Kernel time of one model region (region.h), summed over the window's GPUs.
struct RegionSummary {
  std::string region;
  int64_t kernel_ps = 0;
};

// JAX kernels with a module but no scope, placed by the module's schedule
// (graph_regions.h): those of CUDA graphs (XLA command buffers), and the few
// fusions XLA names no scope for outside them.
struct GraphRegionStats {
  int64_t kernel_ps = 0;  // their kernel time, summed over GPUs
  int64_t placed_ps = 0;  // of it, the kernels the schedule gave a scope
  // Why some were not placed by schedule: no xplane with the HLO modules
  // beside the file, or a module missing from it (first reason seen).
  std::string unplaced;
};

// Uncounted math time listed per window (FlopStats::uncounted).
inline constexpr size_t kTopUncounted = 5;

// FLOPs of the window's PyTorch operators counted from their shapes
// (flops.h), through the kernels each launched (Kineto "External id"), and
// of XLA launches from their HLO shapes.
struct FlopStats {
  std::array<double, 3> flops{};       // by FlopKind, summed over GPUs and steps
  std::array<int64_t, 3> kernel_ps{};  // kernel time of the counted operators
  // Kernel time of executions that did FLOPs of several kinds at once (XLA
  // library calls between the same two fusions): in the total only.
  int64_t mixed_kernel_ps = 0;
  int64_t unknown_ops = 0;  // operators or launches of counted kinds with unusable shapes
  // Math-family kernel time (gemm, attention, conv: classify::FamilyKind::
  // kMath) and, of it, the time of kernels whose FLOPs were counted; the
  // rest is uncounted (unknown_kernel_ps = math_ps - math_counted_ps),
  // whatever the reason: no shapes, an operator no formula knows, no
  // operator at all.
  int64_t math_ps = 0;
  int64_t math_counted_ps = 0;
  int64_t unknown_kernel_ps = 0;
  // The uncounted math time by who launched it: an operator's name when the
  // trace says which (op = true), else the kernel's name. The window keeps
  // the kTopUncounted largest (then by name).
  struct Uncounted {
    std::string name;
    bool op = false;
    int64_t ps = 0;
  };
  std::vector<Uncounted> uncounted;
  struct Family {
    std::string family;
    double flops = 0;
    int64_t kernel_ps = 0;
  };
  // By kernel family: each count in the family of the kernel that ran it
  // (not its FLOP kind: an attention-kind count may run in a gemm kernel).
  std::vector<Family> families;
  std::string device_name;     // as the trace names the device ("NVIDIA H200")
  double peak_per_second = 0;  // 0: unknown
  std::string peak_source;     // "--peak-flops" or "datasheet"
  double Total() const { return flops[0] + flops[1] + flops[2]; }
  int64_t TotalKernelPs() const {
    return kernel_ps[0] + kernel_ps[1] + kernel_ps[2] + mixed_kernel_ps;
  }
  bool Counted() const { return Total() > 0 || unknown_ops > 0; }
  // math_counted_ps / math_ps; nullopt without math kernels.
  std::optional<double> Coverage() const {
    if (math_ps <= 0) return std::nullopt;
    return static_cast<double>(math_counted_ps) / static_cast<double>(math_ps);
  }
};

// Bytes moved, counted like FLOPs (aggregate/bytes.h has the model): an
// operator's or HLO launch's bytes once, through the kernels it launched
// itself, in the family of the kernel that ran them, with the time of its
// kernels of that family only (an operator's kernels of other families are
// no time of this family: a family's modeled time is never above its
// kernel time); memory operations (memcpy/memset, no compute family) from
// the byte count the trace gives.
struct ByteStats {
  struct Family {
    std::string family;
    double bytes = 0;
    int64_t kernel_ps = 0;  // the family's kernel time that has a bytes model
    // Of kernel_ps, the time of kernels of a kind known to be memory-bound
    // (OpBytes::memory_bound, not a math-family kernel); the roofline's
    // "memory" place without FLOPs needs all of kernel_ps to be such.
    int64_t memory_bound_ps = 0;
  };
  std::vector<Family> families;  // by kernel family, like FlopStats::families
  int64_t unknown_ops = 0;       // operators with a bytes model whose shapes are unusable
  // Memory operations whose byte count the trace gives: bytes and time.
  double memop_bytes = 0;
  int64_t memop_ps = 0;
  int64_t memops = 0;
  // Why no kernel's bytes could be modeled when none was ("" otherwise):
  // the first reason a file gave (an Nsight export, a trace without shapes).
  std::string absent;
  // The device's peak HBM bandwidth, bytes/s (0: unknown), and where it came
  // from ("--peak-hbm-bandwidth" or the device table's source).
  double peak_hbm_bytes_per_second = 0;
  std::string peak_hbm_source;
  double Bytes() const {
    double b = 0;
    for (const Family& f : families) b += f.bytes;
    return b;
  }
  int64_t ModeledPs() const {
    int64_t ps = 0;
    for (const Family& f : families) ps += f.kernel_ps;
    return ps;
  }
};

// In-trace step markers (Kineto ProfilerStep#N, xplane "Steps" line). The
// file is an index, not a path: a window may hold 65,536 markers per file,
// and its files' paths are kept once, in WindowStats::files.
struct StepSpan {
  uint32_t file = 0;  // index into WindowStats::files (0 in a file's own FileStats)
  int64_t step = -1;  // N of ProfilerStep#N, or -1 when unnumbered
  int64_t dur_ps = 0;
};

// Where a window's profile steps came from (aggregate/profile_steps.h).
enum class ProfileStepsSource : uint8_t { kDefault, kFlag, kTrace, kLog, kNvtx };

struct FileSummary {
  std::string path;
  parse::TraceSchema schema = parse::TraceSchema::kUnknown;
  uint64_t events = 0;
  bool suspected_truncated = false;  // hit the 1,000,000-event writer cap
  bool partial = false;              // parse ended in an error; events so far kept
  std::map<std::string, uint64_t> drops;
  int gpus = 0;
};

// Idle GPU agents a window names (WindowStats::idle_gpu_agent_names).
inline constexpr size_t kIdleGpuAgentNamesListed = 64;

struct WindowStats {
  std::vector<FileSummary> files;           // in window order
  std::vector<std::string> timestamp_dirs;  // distinct parent <ts> dirs, sorted
  std::string rule_set;                     // classifier rule set used
  int profile_steps = 3;
  // Which input gave profile_steps (aggregate/profile_steps.h), and when the
  // window's Kineto files disagree on their step markers, how ("" when not).
  ProfileStepsSource profile_steps_source = ProfileStepsSource::kDefault;
  std::string profile_steps_disagreement;
  LauncherMode launcher_mode = LauncherMode::kUnknown;
  double gpus_per_file = 0.0;
  uint64_t events = 0;
  bool truncated = false;               // any file suspected truncated or partial
  std::vector<FamilySummary> families;  // classifier order, every family, Other last
  // Totals over families that are not kMemory (kernels of a memory family are
  // memory ops: their family row shows them, the totals and devices do not).
  int64_t total_kernel_ps = 0;
  int64_t total_launches = 0;
  // Sorted by file (window order) then device name with digit runs compared
  // as numbers ("/device:GPU:2" before "/device:GPU:10").
  std::vector<DeviceSummary> devices;
  std::vector<StepSpan> trace_steps;  // empty when the trace has no markers
  // The kernels (over all families) with the most exclusive and idle-before
  // time, largest first, then by name; bounded like the top kernels.
  std::vector<RankedKernel> top_exclusive;
  std::vector<RankedKernel> top_idle_before;
  // SerialKernel candidates, most exclusive time first (then by name),
  // bounded like the top kernels.
  std::vector<SerialKernel> serial_kernels;
  // Regions by kernel time, largest first (then by name), at most
  // --top-regions; the kernel time of the others is regions_other_ps.
  // Kernels without a scope belong to no region. has_regions: some kernel
  // of the window carried a scope (false: the input has none).
  std::vector<RegionSummary> regions;
  int64_t regions_other_ps = 0;
  bool has_regions = false;
  // Share of total_kernel_ps that has a region (the regions listed and
  // regions_other_ps together); meaningful when has_regions or graph kernels.
  double region_coverage = 0.0;
  GraphRegionStats graph;
  FlopStats flops;
  ByteStats bytes;
  // Communication kernels by collective kind (collectives.h), summed over
  // the window's GPUs: calls, kernel and exposed time, sized bytes.
  CollectiveStats collectives;
  // GPU agents seen without a kernel (rocprofv3: agents its outputs declare
  // that dispatched none; not among `devices`), summed over the files that
  // list agents; unset when none does (other formats). Named in file order,
  // at most kIdleGpuAgentNamesListed.
  std::optional<int64_t> idle_gpu_agents;
  std::vector<std::string> idle_gpu_agent_names;

  int gpus() const { return static_cast<int>(devices.size()); }
  // Divisor of every per-GPU-per-step figure: GPUs x profile steps (0 if none).
  int64_t divisor() const { return static_cast<int64_t>(gpus()) * profile_steps; }
  // `ps` summed over the window's GPUs and steps -> seconds per GPU per step;
  // 0 when the divisor is 0.
  double PerGpuStepSeconds(int64_t ps) const;
  double PerGpuStepCount(int64_t n) const;
  // One GPU's `ps` over the profiled steps -> seconds per step; 0 without steps.
  double PerStepSeconds(double ps) const;
  // Sums over devices (for busy/idle/overlap/exposed comm).
  int64_t SumBusyPs() const;
  int64_t SumSpanPs() const;
  int64_t SumKernelPs() const;  // == total_kernel_ps
  int64_t SumExposedCommPs() const;
  int64_t SumComputeBusyPs() const;
  // Unset without devices; the first of equal largest devices otherwise.
  std::optional<Straggler> FindStraggler() const;
  BusyQuantiles ComputeBusyQuantiles() const;
  // Median in-trace step seconds (slowest file per step, median over steps); 0 if none.
  double TraceStepSeconds() const;
};

inline constexpr double PsToSeconds(int64_t ps) { return static_cast<double>(ps) * 1e-12; }

}  // namespace profwatch::aggregate
