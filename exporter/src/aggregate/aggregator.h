// Aggregation of parsed events into WindowStats, in two steps so files can be
// analysed in parallel: one FileAggregator per file (an EventSink, one thread)
// yields a mergeable FileStats; MergeWindow combines a window's FileStats.
//
// Device-aware kernel detection (vendor-neutral), one handler per trace
// format (kineto_events.h, jax_events.h, nsys_events.h) over the file's
// per-device kernel table (kernel_table.h):
//  - JAX/XLA: an X event on a process whose process_name is /device:GPU:N (or
//    TPU) and on a thread whose thread_name starts with "Stream #". Metadata
//    normally comes first; events of a pid/tid whose metadata has not been
//    seen yet are held per thread and judged when the file ends.
//  - Kineto: an X event with cat "kernel" (2021 schema: "Kernel"); the
//    device is pid (or args.device), the stream tid (or args.stream,
//    "stream 7"). Events of cat gpu_memcpy/gpu_memset (2021 schema:
//    Memcpy/Memset) are memory ops: the category decides, never the name, so
//    a kernel named `_combined_routing_memset` stays a kernel.
//  - JAX memory ops on streams: the runtimes' copy names as whole names
//    (classify::IsRuntimeMemopName: MemcpyD2H, "Memset 3",
//    CopyDeviceToDevice, FillBuffer), never a substring of a kernel name.
//  - Kernels classified into a kMemory family (the native sets' `memory`
//    family matches the same whole names; a rules file may add its own) are
//    counted as memory ops, not kernels.
//  - nsys exports (parse/nsys_reader.h): an X event with cat
//    kNsysKernelCat; the device is (pid, args.device), named
//    "pid <pid> GPU <device>", the stream tid; cat kNsysMemopCat events there
//    are memory operations. NVTX step ranges (cat
//    kNsysStepCat, name = the step number) become StepSpans.
//  - rocprofv3 JSON (parse/rocprof_reader.h) emits the same three cats:
//    the device is (pid, the agent's GPU index).
//  - TPU planes have no streams: their "XLA Ops" line is the op line (only
//    on /device:TPU:N, never on GPU planes).
// Step markers: Kineto ProfilerStep#N X events (any cat but
// gpu_user_annotation) and events of a thread named "Steps" (name = step
// number when numeric, else -1) become StepSpans.
// Events with a negative or overflowing duration are dropped and counted.
// Drop reasons added to FileSummary::drops: "bad_duration", "no_timestamp",
// "no_device" (Kineto kernel without an integer pid or args.device),
// "no_metadata" (JAX events whose pid/thread was never declared),
// "no_metadata_held_limit" (undeclared-thread events beyond kMaxHeldEvents),
// "interval_spill_error" (a spill file read failed: busy/exposed figures of the
// file's devices are then incomplete), "annotation_limit" (annotations beyond
// kMaxAnnotations).
// Regions: JAX stream kernels with an args.name scope add their time to
// (scope, kernel name); MergeWindow turns scopes into regions (region.h).
// JAX kernels with no scope but an hlo_module ran inside a CUDA graph: up to
// kMaxGraphKernels of them are kept (24 B each; later ones counted in
// drops["graph_kernel_limit"]) and Finish places them by their module's
// schedule (SetHloModules, graph_regions.h).
// Kineto gpu_user_annotation ranges (ProfilerStep#N excepted) are kept per
// device; Finish gives each kernel the innermost one containing it.
// Memory: bounded by distinct names/scopes/streams/devices and the interval
// budget, not by the number of events; each of those is capped where it is
// read (name_table.h, kernel_table.h: names cut or summed under "other"
// entries, counted in drops "name_cut", "name_limit", "scope_cut",
// "scope_limit", "hlo_name_limit", "device_limit", "stream_limit",
// "step_limit"), so a file's memory is a function of the caps
// (docs/security.md, "What a window keeps").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregate/limits.h"
#include "aggregate/name_table.h"
#include "aggregate/window_stats.h"
#include "classify/classifier.h"
#include "core/budget.h"
#include "parse/hlo_schedule.h"
#include "parse/trace_parser.h"

namespace profwatch::aggregate {

struct AggregateOptions {
  // The inputs of the window's profile-step choice besides the window
  // itself (aggregate/profile_steps.h): --profile-steps when given
  // explicitly, the training log's profiler_steps (values >= 1).
  std::optional<int64_t> profile_steps_flag;
  std::optional<int64_t> profile_steps_log;
  size_t top_kernels = 5;   // per family; 0 = all
  int region_depth = 3;     // components of a region (region.h)
  size_t top_regions = 10;  // regions listed; the rest are summed as other
  // Peak FLOP/s per GPU for MFU (--peak-flops); 0: from the device name.
  double peak_flops = 0;
  // Peak HBM bandwidth per GPU in bytes/s (--peak-hbm-bandwidth); 0: from
  // the device name (bytes.h PeakHbmBandwidth).
  double peak_hbm_bandwidth = 0;
};

// Opaque per-file partial result (kernel names with stats, per-device
// intervals already reduced to busy/span/exposed figures).
struct FileStats;

class FileAggregator final : public parse::EventSink {
 public:
  // Intervals (16 B each) kept in memory before they are sorted, coalesced
  // and, if still too many, spilled as sorted runs to an unlinked temp file
  // that Finish merges back (results are the same either way).
  static constexpr size_t kDefaultIntervalBudget = size_t{1} << 20;

  // `spill_dir`: where the spill file goes (an unlinked temp file).
  // `names`: the window's name pool and caps, shared by its files (null: a
  // pool of this file's own with the default caps and no candidate
  // classifiers: a cut or uncounted name is then classified by what is
  // kept of it).
  explicit FileAggregator(std::string path, size_t interval_budget = kDefaultIntervalBudget,
                          std::string spill_dir = "/tmp",
                          std::shared_ptr<WindowNames> names = nullptr);
  ~FileAggregator() override;
  void OnEvent(const parse::TraceEvent& e) override;

  // Done reading, Finish comes later (after every file of the window): moves
  // the intervals beyond kParkedIntervals to the spill file so that waiting
  // aggregators do not hold a budget each. Optional; results are unchanged.
  static constexpr size_t kParkedIntervals = size_t{1} << 16;
  void Park();

  // Charges spill writes to `budget` (bytes of intervals, core/budget.h);
  // past it nothing more is spilled (the budget's error stops the reader).
  // Null: no limit. `budget` must outlive the calls until it is unset.
  void SetBudget(FileBudget* budget);

  // Intervals written to the spill file so far (0 when everything fit).
  uint64_t SpilledIntervals() const;
  // Why the spill file could not be created or written ("" when it could,
  // or none was needed): the intervals stayed in memory instead.
  const std::string& SpillError() const;

  // Whether CUDA-graph kernels, or JAX collective calls (sized from their
  // HLO instruction at Finish), were seen: they need the HLO modules.
  bool HasGraphKernels() const;
  // Call before the first event: false when no HLO modules can come (no
  // xplane of the process), so CUDA-graph kernels are only summed, not kept.
  void KeepGraphKernels(bool keep);
  // The compiled modules of the file's process (parse::ReadXPlaneHloModules)
  // for Finish to place CUDA-graph kernels; `index` null: `missing` says why
  // there are none (reported with the unplaced kernel time).
  void SetHloModules(std::shared_ptr<const parse::HloIndex> index, std::string missing = "");

  // Distinct kernel names seen so far (for --rules auto), at most `limit`.
  std::vector<std::string> KernelNames(size_t limit) const;

  // Ends the file: classifies each distinct kernel name once, reduces the
  // per-device intervals to busy/span/exposed-comm figures and frees them.
  // `partial` = the parse ended in an error (events so far are kept).
  // Classification is deferred to here so `--rules auto` can look at every
  // file's names first. Devices are finished on up to `threads` threads
  // (one when intervals were spilled); the result does not depend on it.
  // `budget` (may be null): checked before each device, so the window's
  // time budget and the stop flag cover finishing too; once it is passed
  // Finish returns null (the file is over budget) and frees what it held.
  std::shared_ptr<FileStats> Finish(const parse::ParseSummary& summary, bool partial,
                                    const classify::Classifier& classifier, int threads = 1,
                                    FileBudget* budget = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Combines files (in window order) into the window's stats.
WindowStats MergeWindow(const std::vector<std::shared_ptr<FileStats>>& files,
                        const classify::Classifier& classifier, const AggregateOptions& options);

}  // namespace profwatch::aggregate
