// The metrics contract: every metric name, type, help text and label list in
// one table. Rules (rules/), dashboards (dashboards/) and users depend on these
// names; change them only with a migration note in the README.
// Conventions: prefix profwatch_, base units (seconds, bytes), _total only on
// counters, _info for info gauges, workload labels training_job/run (never
// job/instance, which Prometheus owns).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace profwatch::expose {

enum class MetricType { kGauge, kCounter, kHistogram, kSummary };

// Who writes a metric's samples: RenderSnapshot (snapshot_collectable.h),
// from the published snapshot and each run's figures, or a counter, gauge
// or histogram the daemon or the front door keeps in its prometheus-cpp
// registry.
enum class Source { kSnapshot, kRegistry };

// Every metric, one enumerator per kMetrics row in the table's order: code
// names a metric by its enumerator (Spec(Metric::kWindowGpus).name), never
// by a string, so a wrong name does not compile.
enum class Metric : uint16_t {
  kWindowGpus,
  kWindowIdleGpuAgents,
  kWindowExpectedGpus,
  kWindowTraceFiles,
  kWindowTimestampDirs,
  kWindowProfileSteps,
  kWindowEvents,
  kWindowDroppedEvents,
  kWindowTruncated,
  kWindowIncomplete,
  kWindowFailed,
  kWindowInfo,
  kWindowAnalyzedTimestampSeconds,
  kWindowStartTimestampSeconds,
  kFamilyKernelSeconds,
  kFamilyKernelLaunches,
  kKernelSeconds,
  kTotalKernelSeconds,
  kGpuBusySeconds,
  kGpuIdleSeconds,
  kKernelOverlapSeconds,
  kExposedCommSeconds,
  kFamilyExclusiveSeconds,
  kFamilyIdleBeforeSeconds,
  kGpuComputeBusySeconds,
  kStragglerRatio,
  kRegionKernelSeconds,
  kRegionCoverageRatio,
  kWindowFlopsPerGpuStep,
  kAchievedFlopsPerSecond,
  kModelFlopsPerSecond,
  kMfuRatio,
  kFlopsCoverageRatio,
  kFamilyBytesPerGpuStep,
  kFamilyBytesModeledSecondsPerGpuStep,
  kBytesCoverageRatio,
  kPeakHbmBytesPerSecond,
  kCollectiveSeconds,
  kCollectiveExposedSeconds,
  kCollectiveCalls,
  kCollectiveBytes,
  kCollectiveAlgorithmBandwidthBytesPerSecond,
  kCollectiveBusBandwidthBytesPerSecond,
  kStragglerInfo,
  kFamilyInfo,
  kBlockerSeconds,
  kHostStallSeconds,
  kWindowRawFamilyKernelSeconds,
  kWindowRawFamilyKernelLaunches,
  kWindowRawKernelSeconds,
  kWindowRawGpuBusySeconds,
  kWindowRawGpuSpanSeconds,
  kWindowRawExposedCommSeconds,
  kWindowRawCollectiveSeconds,
  kWindowRawCollectiveExposedSeconds,
  kWindowRawCollectiveSizedBytes,
  kWindowRawCollectiveSizedSeconds,
  kWindowRawCollectiveBusBytes,
  kWindowRawCollectiveBusSeconds,
  kWindowRawGpuSteps,
  kStepSeconds,
  kStepMinusKernelSeconds,
  kStepMinusKernelRatio,
  kStepSourceMissing,
  kTrainingStep,
  kTrainingStepSeconds,
  kTrainingSteadyStepSeconds,
  kTrainingTokensPerSecondPerDevice,
  kTrainingTflopsPerDevice,
  kTrainingMfuRatio,
  kTrainingLoss,
  kTrainingLastStepTimestampSeconds,
  kRunActivityTimestampSeconds,
  kBuildInfo,
  kShardInfo,
  kWindowsAnalyzedTotal,
  kWindowsReanalyzedTotal,
  kReanalysesDeferredTotal,
  kOwnerWorkerSecondsTotal,
  kOwnerWindowsAnalyzedTotal,
  kWindowErrorsTotal,
  kWindowRetriesTotal,
  kTraceBytesReadTotal,
  kSpillBytesTotal,
  kSpillErrorsTotal,
  kAnalysisDurationSeconds,
  kPendingWindows,
  kWorkersBusy,
  kWorkersStuck,
  kOldestWaitingWindowSeconds,
  kOwnerCapped,
  kHistoryRotationsTotal,
  kScansTotal,
  kLabelValuesRewritten,
  kLastScanTimestampSeconds,
  kWatchRootReadable,
  kRunLabelClashesTotal,
  kJobNameClashes,
  kWindowsSupersededTotal,
  kScanRefusedTotal,
  kFutureDirsSkippedTotal,
  kStateSaveErrorsTotal,
  kStateLastSaveSuccessful,
  kStateEntriesDroppedTotal,
  kHistoryLinesCutTotal,
  kLogParseErrorsTotal,
  kTrainingLogsRefusedTotal,
  kWebConfigReloadErrorsTotal,
  kWebConfigLastReloadSuccessful,
};

struct MetricSpec {
  Metric id;
  std::string_view name;
  MetricType type;
  // The base unit the name carries ("seconds", "bytes", "bytes_per_second",
  // "flops_per_second", "ratio", "info"); "" for counts.
  std::string_view unit;
  std::string_view help;
  // Label names in order, besides training_job/run when `per_run` is true.
  std::array<std::string_view, 3> labels;
  bool per_run;
  Source source;
};

// Per-window gauges: the latest complete window per (training_job, run).
// "Per GPU per step" = summed over the window's GPUs and profiled steps, then
// divided by GPUs x steps. The window_raw_* gauges are the undivided sums, for
// recording rules that combine many hosts' sidecars (see rules/).
// One row per metric reads better than wrapped rows.
// clang-format off
inline constexpr MetricSpec kMetrics[] = {
    // --- window shape ---
    {Metric::kWindowGpus, "profwatch_window_gpus", MetricType::kGauge, "", "GPUs detected in the latest window (devices with at least one kernel).", {}, true, Source::kSnapshot},
    {Metric::kWindowIdleGpuAgents, "profwatch_window_idle_gpu_agents", MetricType::kGauge, "", "GPU agents the latest window's rocprofv3 outputs declare that dispatched no kernel (seen, not counted in profwatch_window_gpus); absent for formats that do not list agents.", {}, true, Source::kSnapshot},
    {Metric::kWindowExpectedGpus, "profwatch_window_expected_gpus", MetricType::kGauge, "", "GPUs expected in the window (configured, or learned from the previous window); for a run's first window with nothing configured, its own GPUs (what the next window is held to).", {}, true, Source::kSnapshot},
    {Metric::kWindowTraceFiles, "profwatch_window_trace_files", MetricType::kGauge, "", "Trace files in the latest window.", {}, true, Source::kSnapshot},
    {Metric::kWindowTimestampDirs, "profwatch_window_timestamp_dirs", MetricType::kGauge, "", "Profile <ts> directories merged into the latest window.", {}, true, Source::kSnapshot},
    {Metric::kWindowProfileSteps, "profwatch_window_profile_steps", MetricType::kGauge, "", "Profiled steps the window covers (the per-step divisor).", {}, true, Source::kSnapshot},
    {Metric::kWindowEvents, "profwatch_window_events", MetricType::kGauge, "", "Trace events parsed in the latest window.", {}, true, Source::kSnapshot},
    {Metric::kWindowDroppedEvents, "profwatch_window_dropped_events", MetricType::kGauge, "", "Trace events of the latest window that were dropped, or kept cut past a keep cap, by reason (empty_name, no_timestamp, bad_duration, no_device, no_metadata, ...; name_cut, name_limit, ... for names cut or summed under other names); only reasons that occurred.", {"reason"}, true, Source::kSnapshot},
    {Metric::kWindowTruncated, "profwatch_window_truncated", MetricType::kGauge, "", "1 when a trace of the window hit the 1,000,000-event writer cap or ended early.", {}, true, Source::kSnapshot},
    {Metric::kWindowIncomplete, "profwatch_window_incomplete", MetricType::kGauge, "", "1 when the window was analysed short of its expected GPUs/files (timeout) or with failed files.", {}, true, Source::kSnapshot},
    {Metric::kWindowFailed, "profwatch_window_failed", MetricType::kGauge, "", "1 while the run's latest window analysis failed for real; reason: the failed file's error (truncated, io, not_found for a file given up after --max-retries; corrupt, permission, ...), or no_data when no file failed but the window had no kernel data (then not exported, the previous one stays); crashed when the daemon died twice analysing it (not analysed again until its files change); too_large when its run state is over the per-run cap; owner_state_cap when it would take its owner's kept run states past --max-state-bytes-per-owner; state_cap when it would take all owners' past --max-state-bytes and its owner keeps an equal share of that or more. Absent once a window of the run is analysed with every file read; a file still being written is not a failure.", {"reason"}, true, Source::kSnapshot},
    {Metric::kWindowInfo, "profwatch_window_info", MetricType::kGauge, "info", "Always 1; labels describe the latest window (which window it is: profwatch_window_start_timestamp_seconds).", {"launcher_mode", "format"}, true, Source::kSnapshot},
    {Metric::kWindowAnalyzedTimestampSeconds, "profwatch_window_analyzed_timestamp_seconds", MetricType::kGauge, "seconds", "Unix time the latest window was analysed.", {}, true, Source::kSnapshot},
    {Metric::kWindowStartTimestampSeconds, "profwatch_window_start_timestamp_seconds", MetricType::kGauge, "seconds", "Unix time the latest window started: its first <ts> dir's name (read as UTC), or a PyTorch profiling cycle's capture time; which window is exported, as a value of one series per run (the window id is no label).", {}, true, Source::kSnapshot},
    // --- families (per GPU per step) ---
    {Metric::kFamilyKernelSeconds, "profwatch_family_kernel_seconds", MetricType::kGauge, "seconds", "Kernel time of a family, seconds per GPU per step.", {"family"}, true, Source::kSnapshot},
    {Metric::kFamilyKernelLaunches, "profwatch_family_kernel_launches", MetricType::kGauge, "", "Kernel launches of a family per GPU per step.", {"family"}, true, Source::kSnapshot},
    {Metric::kKernelSeconds, "profwatch_kernel_seconds", MetricType::kGauge, "seconds", "Kernel time of one of the top kernels of a family, seconds per GPU per step; kernel is the short name (no template arguments or parameters, at most 128 bytes), equal short names summed.", {"family", "kernel"}, true, Source::kSnapshot},
    {Metric::kTotalKernelSeconds, "profwatch_total_kernel_seconds", MetricType::kGauge, "seconds", "Total kernel time, seconds per GPU per step (sum over families).", {}, true, Source::kSnapshot},
    // --- measured decomposition (per GPU per step) ---
    {Metric::kGpuBusySeconds, "profwatch_gpu_busy_seconds", MetricType::kGauge, "seconds", "Union of kernel intervals over all streams, seconds per GPU per step.", {}, true, Source::kSnapshot},
    {Metric::kGpuIdleSeconds, "profwatch_gpu_idle_seconds", MetricType::kGauge, "seconds", "Kernel span minus busy time (no kernel running), seconds per GPU per step.", {}, true, Source::kSnapshot},
    {Metric::kKernelOverlapSeconds, "profwatch_kernel_overlap_seconds", MetricType::kGauge, "seconds", "Summed kernel time minus busy time (streams overlapping), seconds per GPU per step.", {}, true, Source::kSnapshot},
    {Metric::kExposedCommSeconds, "profwatch_exposed_comm_seconds", MetricType::kGauge, "seconds", "Communication kernel time not covered by compute kernels, seconds per GPU per step.", {}, true, Source::kSnapshot},
    // --- diagnosis (per GPU per step; issue #22 defines the terms) ---
    {Metric::kFamilyExclusiveSeconds, "profwatch_family_exclusive_seconds", MetricType::kGauge, "seconds", "Time a family's kernels ran alone on their GPU (every other stream waiting on them), seconds per GPU per step.", {"family"}, true, Source::kSnapshot},
    {Metric::kFamilyIdleBeforeSeconds, "profwatch_family_idle_before_seconds", MetricType::kGauge, "seconds", "GPU idle time that ended when a family's kernel started (the GPU waited for it: host, input or a collective), seconds per GPU per step.", {"family"}, true, Source::kSnapshot},
    {Metric::kGpuComputeBusySeconds, "profwatch_gpu_compute_busy_seconds", MetricType::kSummary, "seconds", "Compute busy time of the window's GPUs (union of their non-communication kernels), seconds per step, summarised over the GPUs: quantile 0 = least busy GPU, 0.5 = median, 1 = busiest; _sum over the GPUs, _count = GPUs.", {}, true, Source::kSnapshot},
    {Metric::kStragglerRatio, "profwatch_straggler_ratio", MetricType::kGauge, "ratio", "Compute busy time of the busiest GPU over the median GPU's (1 = balanced).", {}, true, Source::kSnapshot},
    {Metric::kRegionKernelSeconds, "profwatch_region_kernel_seconds", MetricType::kGauge, "seconds", "Kernel time of a model region (JAX scope path without jit frames and transformation wrappers, cut to --region-depth components), seconds per GPU per step; the top --top-regions regions, the rest as region=\"other\".", {"region"}, true, Source::kSnapshot},
    {Metric::kRegionCoverageRatio, "profwatch_region_coverage_ratio", MetricType::kGauge, "ratio", "Share of the window's kernel time that has a model region (the profwatch_region_kernel_seconds series together, other included); kernels of CUDA graphs get theirs from the HLO schedule. Absent when the input carries no scopes.", {}, true, Source::kSnapshot},
    {Metric::kWindowFlopsPerGpuStep, "profwatch_window_flops_per_gpu_step", MetricType::kGauge, "", "FLOPs of the window's operators counted from their recorded shapes (PyTorch record_shapes), per GPU per step, by kind: matmul, attention, conv.", {"kind"}, true, Source::kSnapshot},
    {Metric::kAchievedFlopsPerSecond, "profwatch_achieved_flops_per_second", MetricType::kGauge, "flops_per_second", "Counted FLOPs of a family's operators over the time of the kernels that did them, FLOP/s per GPU.", {"family"}, true, Source::kSnapshot},
    {Metric::kModelFlopsPerSecond, "profwatch_model_flops_per_second", MetricType::kGauge, "flops_per_second", "Counted FLOPs per GPU per step over the step time (what MaxText logs as TFLOP/s/device), FLOP/s; absent when profwatch_flops_coverage_ratio is below 0.95 (a lower bound).", {}, true, Source::kSnapshot},
    {Metric::kMfuRatio, "profwatch_mfu_ratio", MetricType::kGauge, "ratio", "Model FLOP utilisation: profwatch_model_flops_per_second over the device's dense bf16 peak (datasheet, or --peak-flops); absent without counted FLOPs, a step time or a known peak, or when profwatch_flops_coverage_ratio is below 0.95 (a lower bound).", {}, true, Source::kSnapshot},
    {Metric::kFlopsCoverageRatio, "profwatch_flops_coverage_ratio", MetricType::kGauge, "ratio", "Share of the math kernels' time (gemm, attention, conv families) whose FLOPs were counted; absent without math kernels.", {}, true, Source::kSnapshot},
    {Metric::kFamilyBytesPerGpuStep, "profwatch_family_bytes_per_gpu_step", MetricType::kGauge, "bytes", "Bytes a family's kernels moved, from the shapes of the operators or HLO launches that ran them (each tensor read or written once), per GPU per step; absent for a family without a bytes model.", {"family"}, true, Source::kSnapshot},
    {Metric::kFamilyBytesModeledSecondsPerGpuStep, "profwatch_family_bytes_modeled_seconds_per_gpu_step", MetricType::kGauge, "seconds", "Kernel time of a family that has a bytes model (the time profwatch_family_bytes_per_gpu_step was moved in), seconds per GPU per step; absent with it.", {"family"}, true, Source::kSnapshot},
    {Metric::kBytesCoverageRatio, "profwatch_bytes_coverage_ratio", MetricType::kGauge, "ratio", "Share of the compute kernels' time (every family but communication and memory) that has a bytes model; absent when no bytes were counted.", {}, true, Source::kSnapshot},
    {Metric::kPeakHbmBytesPerSecond, "profwatch_peak_hbm_bytes_per_second", MetricType::kGauge, "bytes_per_second", "Peak HBM bandwidth of the run's device (datasheet, or --peak-hbm-bandwidth): the roof of the bandwidth-bound families; absent when the device is unknown or no bytes were counted.", {}, true, Source::kSnapshot},
    {Metric::kCollectiveSeconds, "profwatch_collective_seconds", MetricType::kGauge, "seconds", "Kernel time of a collective kind (all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast, reduce, other; from the trace's metadata, else the kernel name), seconds per GPU per step; only kinds that ran.", {"collective"}, true, Source::kSnapshot},
    {Metric::kCollectiveExposedSeconds, "profwatch_collective_exposed_seconds", MetricType::kGauge, "seconds", "Time a collective kind's kernels ran while no compute kernel ran on the same GPU, seconds per GPU per step.", {"collective"}, true, Source::kSnapshot},
    {Metric::kCollectiveCalls, "profwatch_collective_calls", MetricType::kGauge, "", "Kernel calls of a collective kind per GPU per step.", {"collective"}, true, Source::kSnapshot},
    {Metric::kCollectiveBytes, "profwatch_collective_bytes", MetricType::kGauge, "bytes", "Bytes of a collective kind's calls that carried their size (all-gather: the output, others: the input), per GPU per step; absent when no call carried one.", {"collective"}, true, Source::kSnapshot},
    {Metric::kCollectiveAlgorithmBandwidthBytesPerSecond, "profwatch_collective_algorithm_bandwidth_bytes_per_second", MetricType::kGauge, "bytes_per_second", "Bytes over kernel time of a collective kind's sized calls over the window (nccl-tests algbw); absent without sizes.", {"collective"}, true, Source::kSnapshot},
    {Metric::kCollectiveBusBandwidthBytesPerSecond, "profwatch_collective_bus_bandwidth_bytes_per_second", MetricType::kGauge, "bytes_per_second", "algbw times the nccl-tests bus factor of the kind and group size (2(n-1)/n all-reduce, (n-1)/n all-gather, reduce-scatter, all-to-all, 1 otherwise) over the window; absent without sizes or group sizes.", {"collective"}, true, Source::kSnapshot},
    {Metric::kStragglerInfo, "profwatch_straggler_info", MetricType::kGauge, "info", "Always 1; host and device of the window's busiest GPU by compute busy time (the straggler).", {"host", "device"}, true, Source::kSnapshot},
    {Metric::kFamilyInfo, "profwatch_family_info", MetricType::kGauge, "info", "Always 1; the kind of each family of the latest window's rule set: compute, math (GEMM, attention, convolution: the model's work, never a blocker), comm or memory.", {"family", "kind"}, true, Source::kSnapshot},
    {Metric::kBlockerSeconds, "profwatch_blocker_seconds", MetricType::kGauge, "seconds", "Time a main-stream blocker ran alone on its GPU, seconds per GPU per step: a kernel outside the math and memory families that ran alone for at least half its time, in calls of 1 ms or more, for at least 10% of the step; only such kernels (none: no series). kernel is the short name.", {"family", "kernel"}, true, Source::kSnapshot},
    {Metric::kHostStallSeconds, "profwatch_host_stall_seconds", MetricType::kGauge, "seconds", "Idle time before each step's first kernel, seconds per step (per GPU the profiled steps - 1 longest idle gaps over the profiled steps, averaged over the GPUs; part of profwatch_gpu_idle_seconds, never above it): the GPU waiting on the host or input between steps. Only for windows of two or more profiled steps.", {}, true, Source::kSnapshot},
    // --- additive raw sums for cross-host aggregation ---
    {Metric::kWindowRawFamilyKernelSeconds, "profwatch_window_raw_family_kernel_seconds", MetricType::kGauge, "seconds", "Kernel seconds of a family summed over the window's GPUs and steps.", {"family"}, true, Source::kSnapshot},
    {Metric::kWindowRawFamilyKernelLaunches, "profwatch_window_raw_family_kernel_launches", MetricType::kGauge, "", "Kernel launches of a family summed over the window's GPUs and steps.", {"family"}, true, Source::kSnapshot},
    {Metric::kWindowRawKernelSeconds, "profwatch_window_raw_kernel_seconds", MetricType::kGauge, "seconds", "Kernel seconds summed over the window's GPUs and steps.", {}, true, Source::kSnapshot},
    {Metric::kWindowRawGpuBusySeconds, "profwatch_window_raw_gpu_busy_seconds", MetricType::kGauge, "seconds", "Busy (union) seconds summed over the window's GPUs.", {}, true, Source::kSnapshot},
    {Metric::kWindowRawGpuSpanSeconds, "profwatch_window_raw_gpu_span_seconds", MetricType::kGauge, "seconds", "Kernel span seconds summed over the window's GPUs.", {}, true, Source::kSnapshot},
    {Metric::kWindowRawExposedCommSeconds, "profwatch_window_raw_exposed_comm_seconds", MetricType::kGauge, "seconds", "Exposed communication seconds summed over the window's GPUs.", {}, true, Source::kSnapshot},
    {Metric::kWindowRawCollectiveSeconds, "profwatch_window_raw_collective_seconds", MetricType::kGauge, "seconds", "Kernel seconds of a collective kind summed over the window's GPUs and steps.", {"collective"}, true, Source::kSnapshot},
    {Metric::kWindowRawCollectiveExposedSeconds, "profwatch_window_raw_collective_exposed_seconds", MetricType::kGauge, "seconds", "Exposed seconds of a collective kind summed over the window's GPUs and steps.", {"collective"}, true, Source::kSnapshot},
    {Metric::kWindowRawCollectiveSizedBytes, "profwatch_window_raw_collective_sized_bytes", MetricType::kGauge, "bytes", "Bytes of a collective kind's sized calls summed over the window (absent without sizes).", {"collective"}, true, Source::kSnapshot},
    {Metric::kWindowRawCollectiveSizedSeconds, "profwatch_window_raw_collective_sized_seconds", MetricType::kGauge, "seconds", "Kernel seconds of those sized calls (the algbw denominator).", {"collective"}, true, Source::kSnapshot},
    {Metric::kWindowRawCollectiveBusBytes, "profwatch_window_raw_collective_bus_bytes", MetricType::kGauge, "bytes", "Bytes times the bus factor of a collective kind's sized calls with a group size, summed over the window (absent without them).", {"collective"}, true, Source::kSnapshot},
    {Metric::kWindowRawCollectiveBusSeconds, "profwatch_window_raw_collective_bus_seconds", MetricType::kGauge, "seconds", "Kernel seconds of those calls (the busbw denominator).", {"collective"}, true, Source::kSnapshot},
    {Metric::kWindowRawGpuSteps, "profwatch_window_raw_gpu_steps", MetricType::kGauge, "", "GPUs x profiled steps of the window: the divisor of every per-GPU-per-step figure.", {}, true, Source::kSnapshot},
    // --- step time and the gap ---
    {Metric::kStepSeconds, "profwatch_step_seconds", MetricType::kGauge, "seconds", "Step time used for the gap, by source (log, trace, config).", {"source"}, true, Source::kSnapshot},
    {Metric::kStepMinusKernelSeconds, "profwatch_step_minus_kernel_seconds", MetricType::kGauge, "seconds", "Step time minus total kernel time per GPU per step; > 0 means the GPU idles for part of each step (a host or input stall when profwatch_host_stall_seconds says so).", {}, true, Source::kSnapshot},
    {Metric::kStepMinusKernelRatio, "profwatch_step_minus_kernel_ratio", MetricType::kGauge, "ratio", "(step - total kernel) / step.", {}, true, Source::kSnapshot},
    {Metric::kStepSourceMissing, "profwatch_step_source_missing", MetricType::kGauge, "", "1 when no step-time source (log, trace, config) is available for the run.", {}, true, Source::kSnapshot},
    // --- training log ---
    {Metric::kTrainingStep, "profwatch_training_step", MetricType::kGauge, "", "Last completed training step in the log.", {}, true, Source::kSnapshot},
    {Metric::kTrainingStepSeconds, "profwatch_training_step_seconds", MetricType::kGauge, "seconds", "Seconds of the last completed step (slowest node).", {}, true, Source::kSnapshot},
    {Metric::kTrainingSteadyStepSeconds, "profwatch_training_steady_step_seconds", MetricType::kGauge, "seconds", "Median step seconds over recent steady steps (warm-up, profiled and write-back steps excluded).", {}, true, Source::kSnapshot},
    {Metric::kTrainingTokensPerSecondPerDevice, "profwatch_training_tokens_per_second_per_device", MetricType::kGauge, "", "Tokens/s/device of the last step.", {}, true, Source::kSnapshot},
    {Metric::kTrainingTflopsPerDevice, "profwatch_training_tflops_per_device", MetricType::kGauge, "", "TFLOP/s/device of the last step.", {}, true, Source::kSnapshot},
    {Metric::kTrainingMfuRatio, "profwatch_training_mfu_ratio", MetricType::kGauge, "ratio", "Model FLOPs utilisation of the last step, 0-1.", {}, true, Source::kSnapshot},
    {Metric::kTrainingLoss, "profwatch_training_loss", MetricType::kGauge, "", "Loss of the last step.", {}, true, Source::kSnapshot},
    {Metric::kTrainingLastStepTimestampSeconds, "profwatch_training_last_step_timestamp_seconds", MetricType::kGauge, "seconds", "Unix time the last step line was written, at the latest: the log's modification time when the line was read (capped by the read time).", {}, true, Source::kSnapshot},
    // --- run activity ---
    {Metric::kRunActivityTimestampSeconds, "profwatch_run_activity_timestamp_seconds", MetricType::kGauge, "seconds", "Unix time of the newest write to the run's data: its window's trace files (modification time) or its training log (modification time when new lines were read); never when profwatch read or analysed them.", {}, true, Source::kSnapshot},
    // --- self-metrics ---
    {Metric::kBuildInfo, "profwatch_build_info", MetricType::kGauge, "info", "Always 1; build version and revision.", {"version", "revision"}, false, Source::kSnapshot},
    {Metric::kShardInfo, "profwatch_shard_info", MetricType::kGauge, "info", "Always 1 on a daemon started with --shard I/N: it exports the jobs whose name hashes to shard under Prometheus' hashmod with modulus shards. Absent without --shard.", {"shard", "shards"}, false, Source::kSnapshot},
    {Metric::kWindowsAnalyzedTotal, "profwatch_windows_analyzed_total", MetricType::kCounter, "", "Window analyses (including re-analyses) by result: ok, incomplete (published or held short of files or GPUs), error (failed, or a file is retried).", {"result"}, false, Source::kRegistry},
    {Metric::kWindowsReanalyzedTotal, "profwatch_windows_reanalyzed_total", MetricType::kCounter, "", "Windows analysed again because a late file joined.", {}, false, Source::kRegistry},
    {Metric::kReanalysesDeferredTotal, "profwatch_reanalyses_deferred_total", MetricType::kCounter, "", "Times an analysed window changed and waited for --reanalysis-interval before it was analysed again.", {}, false, Source::kRegistry},
    {Metric::kOwnerWorkerSecondsTotal, "profwatch_owner_worker_seconds_total", MetricType::kCounter, "", "Worker time spent analysing an owner's windows, seconds, by owner (the uid of the run directory).", {"owner"}, false, Source::kRegistry},
    {Metric::kOwnerWindowsAnalyzedTotal, "profwatch_owner_windows_analyzed_total", MetricType::kCounter, "", "Windows of an owner analysed, re-analyses included, by owner (the uid of the run directory).", {"owner"}, false, Source::kRegistry},
    {Metric::kWindowErrorsTotal, "profwatch_window_errors_total", MetricType::kCounter, "", "Real errors while reading or analysing windows, by reason (give_up: a file given up after --max-retries; no_data: a window with no usable kernel data, not exported). A file still being written and retried is not counted here.", {"reason"}, false, Source::kRegistry},
    {Metric::kWindowRetriesTotal, "profwatch_window_retries_total", MetricType::kCounter, "", "Window analyses held back because a file was not ready yet (still being written: truncated, io, not_found), by reason; retried with backoff, not errors.", {"reason"}, false, Source::kRegistry},
    {Metric::kTraceBytesReadTotal, "profwatch_trace_bytes_read_total", MetricType::kCounter, "bytes", "Trace bytes read from disk (compressed).", {}, false, Source::kRegistry},
    {Metric::kSpillBytesTotal, "profwatch_spill_bytes_total", MetricType::kCounter, "bytes", "Bytes of kernel intervals written to spill files in --spill-dir (large traces; memory stays bounded).", {}, false, Source::kRegistry},
    {Metric::kSpillErrorsTotal, "profwatch_spill_errors_total", MetricType::kCounter, "", "Trace files whose spill file in --spill-dir could not be created or written (read-only or full directory): their intervals stayed in memory; the log names the directory and the error.", {}, false, Source::kRegistry},
    {Metric::kAnalysisDurationSeconds, "profwatch_analysis_duration_seconds", MetricType::kHistogram, "seconds", "Wall time of one window analysis.", {}, false, Source::kRegistry},
    {Metric::kPendingWindows, "profwatch_pending_windows", MetricType::kGauge, "", "Windows of the run waiting for completeness (files or GPUs, until --window-timeout), a retry or a worker.", {}, true, Source::kSnapshot},
    {Metric::kWorkersBusy, "profwatch_workers_busy", MetricType::kGauge, "", "Analysis workers working on a window now.", {}, false, Source::kSnapshot},
    {Metric::kWorkersStuck, "profwatch_workers_stuck", MetricType::kGauge, "", "Analysis workers busy on one window longer than its time budget (--window-max-seconds; without one, --file-max-seconds): work no budget check reached; /-/ready answers 503 while every worker is.", {}, false, Source::kSnapshot},
    {Metric::kOldestWaitingWindowSeconds, "profwatch_oldest_waiting_window_seconds", MetricType::kGauge, "seconds", "How long the window that has waited longest for an analysis worker has waited, seconds (a window waits once it is complete and settled; windows are served round-robin by owner, job and run); 0 when none waits.", {}, false, Source::kSnapshot},
    {Metric::kOwnerCapped, "profwatch_owner_capped", MetricType::kGauge, "", "What a per-owner cap leaves out now, by owner (uid of the run directory; for directories and watches, of the job directory) and reason: owner_run_cap (runs not tracked, --max-runs-per-owner), owner_window_cap (windows not tracked, --max-windows-per-owner), owner_dir_cap (directories not walked, --max-dirs-per-owner), owner_watch_cap (directories without an inotify watch, found by polling, --max-watches-per-owner). Only owners over a cap.", {"owner", "reason"}, false, Source::kSnapshot},
    {Metric::kHistoryRotationsTotal, "profwatch_history_rotations_total", MetricType::kCounter, "", "Rotations of an owner's --history file (FILE.uidN to FILE.uidN.1, its older lines dropped; --history-max-bytes per owner), by owner (uid of the run directory).", {"owner"}, false, Source::kRegistry},
    {Metric::kScansTotal, "profwatch_scans_total", MetricType::kCounter, "", "Full scans of the watched roots: at start, every poll interval, on change hints and when a window's settle time ends.", {}, false, Source::kRegistry},
    {Metric::kLabelValuesRewritten, "profwatch_label_values_rewritten", MetricType::kGauge, "", "Label values rewritten in this exposition, per series, by reason: invalid_utf8 (bytes that are not UTF-8 written reversibly, a backslash, x and two hex digits each, as in the --state file), too_long (cut to 256 bytes). 0 normally.", {"reason"}, false, Source::kSnapshot},
    {Metric::kLastScanTimestampSeconds, "profwatch_last_scan_timestamp_seconds", MetricType::kGauge, "seconds", "Unix time of the last completed full scan of the watched roots.", {}, false, Source::kSnapshot},
    {Metric::kWatchRootReadable, "profwatch_watch_root_readable", MetricType::kGauge, "", "1 when the watched root exists and is a readable directory, 0 while it cannot be walked (missing, unreadable, not a directory).", {"root"}, false, Source::kSnapshot},
    {Metric::kRunLabelClashesTotal, "profwatch_run_label_clashes_total", MetricType::kCounter, "", "Run dirs not analysed because another run dir (under another root) has the same training_job and run (each counted once; the log names both).", {}, false, Source::kRegistry},
    {Metric::kJobNameClashes, "profwatch_job_name_clashes", MetricType::kGauge, "", "Job names found under two or more watch roots in the last scan: each copy is exported with training_job=\"<root>:<job>\" (the root's last path component, or its whole path when two roots share it). 0 normally.", {}, false, Source::kRegistry},
    {Metric::kWindowsSupersededTotal, "profwatch_windows_superseded_total", MetricType::kCounter, "", "Older windows of a run found already written when the daemon started (its backlog) and not analysed because the run has a newer one, and windows of a run dir first seen beyond its newest 8 (each counted once and logged; windows appearing later are all analysed).", {}, false, Source::kRegistry},
    {Metric::kScanRefusedTotal, "profwatch_scan_refused_total", MetricType::kCounter, "", "Trace files, directories and windows the scan refuses, never read, by reason, each counted once while it stays: dir_file_cap (a directory holding more trace files than --max-files-per-dir, or for a <ts> dir --max-files-per-window), window_file_cap (a window over --max-files-per-window), outside_root (a trace file symlink whose target lies outside the watch root), owner_run_cap, owner_window_cap, owner_dir_cap (runs, windows and directories of an owner over --max-runs-per-owner, --max-windows-per-owner, --max-dirs-per-owner; profwatch_owner_capped names the owner); ts_outside_profile, not_timestamp, unknown_trace_name (a directory of trace-like files no layout reads: a <ts> dir outside plugins/profile, a plugins/profile dir not named like a <ts>, files not named as the layouts read them); host_filter (--host-filter matched none of the trace files found); retention (a run none of whose windows is analysed, quiet longer than --retention). By owner (the uid of the run it belongs to, else of its job directory; none when unknown): a series appears with its owner's first refusal.", {"owner", "reason"}, false, Source::kRegistry},
    {Metric::kFutureDirsSkippedTotal, "profwatch_future_dirs_skipped_total", MetricType::kCounter, "", "Profile <ts> dirs skipped because they are dated more than --future-tolerance ahead of the wall clock (each counted once).", {}, false, Source::kRegistry},
    {Metric::kStateSaveErrorsTotal, "profwatch_state_save_errors_total", MetricType::kCounter, "", "Failed saves of the --state file (the daemon keeps serving; the next save retries).", {}, false, Source::kRegistry},
    {Metric::kStateLastSaveSuccessful, "profwatch_state_last_save_successful", MetricType::kGauge, "", "1 when the last save of the --state file succeeded (or none was tried yet), 0 after a failed one until a save succeeds (/-/ready answers 503 meanwhile).", {}, false, Source::kRegistry},
    {Metric::kStateEntriesDroppedTotal, "profwatch_state_entries_dropped_total", MetricType::kCounter, "", "Entries of the --state file left out at start, each alone (the rest loads; each logged once), by reason: invalid (a run or window record that cannot be read), duplicate (a second run of one training_job and run). Their windows are analysed again.", {"reason"}, false, Source::kRegistry},
    {Metric::kHistoryLinesCutTotal, "profwatch_history_lines_cut_total", MetricType::kCounter, "", "--history lines over their byte cap, written without their state and report (compare skips them).", {}, false, Source::kRegistry},
    {Metric::kLogParseErrorsTotal, "profwatch_log_parse_errors_total", MetricType::kCounter, "", "Training log lines that looked like step lines but did not parse.", {}, false, Source::kRegistry},
    {Metric::kTrainingLogsRefusedTotal, "profwatch_training_logs_refused_total", MetricType::kCounter, "", "Training logs not followed, by the run's owner and reason: max_followed_logs (--max-followed-logs runs' logs are followed already; each run counted once, warned once), not_the_runs (a file a --log-glob pattern matched that is neither in the run's or job's directory nor owned by the run's owner; each file counted once per run and logged).", {"owner", "reason"}, false, Source::kRegistry},
    // --- the front door (web/: --web.config.file reloads) ---
    {Metric::kWebConfigReloadErrorsTotal, "profwatch_web_config_reload_errors_total", MetricType::kCounter, "", "Re-reads of --web.config.file that failed (the previous version stays)", {}, false, Source::kRegistry},
    {Metric::kWebConfigLastReloadSuccessful, "profwatch_web_config_last_reload_successful", MetricType::kGauge, "", "1 if the last read of --web.config.file succeeded, else 0", {}, false, Source::kRegistry},
};

// Standard process metrics (same names, types and help as the Prometheus
// client libraries, so existing dashboards work). Exported by
// ProcessCollectable from /proc/self; not per run.
enum class ProcessMetric : uint8_t {
  kCpuSecondsTotal,
  kResidentMemoryBytes,
  kVirtualMemoryBytes,
  kOpenFds,
  kMaxFds,
  kStartTimeSeconds,
};
struct ProcessMetricSpec {
  ProcessMetric id;
  std::string_view name;
  MetricType type;
  std::string_view help;
};
inline constexpr ProcessMetricSpec kProcessMetrics[] = {
    {ProcessMetric::kCpuSecondsTotal, "process_cpu_seconds_total", MetricType::kCounter, "Total user and system CPU time spent in seconds."},
    {ProcessMetric::kResidentMemoryBytes, "process_resident_memory_bytes", MetricType::kGauge, "Resident memory size in bytes."},
    {ProcessMetric::kVirtualMemoryBytes, "process_virtual_memory_bytes", MetricType::kGauge, "Virtual memory size in bytes."},
    {ProcessMetric::kOpenFds, "process_open_fds", MetricType::kGauge, "Number of open file descriptors."},
    {ProcessMetric::kMaxFds, "process_max_fds", MetricType::kGauge, "Maximum number of open file descriptors."},
    {ProcessMetric::kStartTimeSeconds, "process_start_time_seconds", MetricType::kGauge, "Start time of the process since unix epoch in seconds."},
};
// clang-format on

inline constexpr size_t kMetricCount = std::size(kMetrics);

// Detail metrics: exported only by `serve --metrics-detail` (issue #49).
// Per kernel, per model region and each family's exclusive and idle-before
// time are what a person reads while tuning one run; at fleet scale they
// are most of a run's series, and no alert or recording rule reads them
// (README, "Series per run"). A family's launches per GPU step are the
// recording rule training_job_run:profwatch_family_kernel_launches:per_gpu_step
// over the raw sums, which is what the dashboards read, so the per-run copy
// is detail too. Every other metric is exported by default.
inline constexpr Metric kDetailMetrics[] = {
    Metric::kKernelSeconds,          Metric::kFamilyKernelLaunches,
    Metric::kFamilyExclusiveSeconds, Metric::kFamilyIdleBeforeSeconds,
    Metric::kRegionKernelSeconds,
};

constexpr bool IsDetail(Metric m) {
  for (Metric d : kDetailMetrics) {
    if (d == m) return true;
  }
  return false;
}

// Row i of kMetrics is Metric i: checked at compile time.
constexpr bool MetricsInEnumOrder() {
  for (size_t i = 0; i < kMetricCount; ++i) {
    if (static_cast<size_t>(kMetrics[i].id) != i) return false;
  }
  return true;
}
static_assert(MetricsInEnumOrder(), "kMetrics rows must follow enum Metric");

constexpr const MetricSpec& Spec(Metric m) { return kMetrics[static_cast<size_t>(m)]; }

constexpr bool ProcessMetricsInEnumOrder() {
  for (size_t i = 0; i < std::size(kProcessMetrics); ++i) {
    if (static_cast<size_t>(kProcessMetrics[i].id) != i) return false;
  }
  return true;
}
static_assert(ProcessMetricsInEnumOrder(), "kProcessMetrics rows must follow enum ProcessMetric");

constexpr const ProcessMetricSpec& Spec(ProcessMetric m) {
  return kProcessMetrics[static_cast<size_t>(m)];
}

// The spec named `name`; nullptr when unknown (tests check output against
// the table with these).
constexpr const MetricSpec* FindMetric(std::string_view name) {
  for (const MetricSpec& m : kMetrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}
constexpr const ProcessMetricSpec* FindProcessMetric(std::string_view name) {
  for (const ProcessMetricSpec& m : kProcessMetrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

inline constexpr std::string_view kJobLabel = "training_job";
inline constexpr std::string_view kRunLabel = "run";

}  // namespace profwatch::expose
