// A fixed, hand-built Snapshot shared by the exposition golden, the
// arithmetic checks and the state JSON round trip. Values are chosen so the
// per-GPU-per-step figures are easy to compute by hand (divisor 2 GPUs x 3
// steps = 6 for job-a/run-1).
#pragma once

#include <cmath>
#include <limits>

#include "snapshot/snapshot.h"

namespace profwatch::testing {

// `s` as the daemon publishes it: each run with its window's figures
// computed for its stats and step time (a run edited after it was built
// needs this before it is rendered).
inline snapshot::Snapshot Published(snapshot::Snapshot s) {
  for (auto& [key, run] : s.runs) snapshot::RefreshFigures(run);
  return s;
}

// 2 GPUs, 3 steps. GEMM 1.2 s (600 launches), NCCL 0.6 s (60), Other 0.
// Busy 0.75+0.75 s, span 0.9+1.05 s, exposed comm 0.06+0.12 s. Step 0.4 s.
// Diagnosis: GEMM (math) alone 0.3 s, idle before it 0.09 s; NCCL alone
// 0.12 s, idle before it 0.06 s, in 6 serial calls of 20 ms (a blocker
// candidate: 0.02 s per GPU per step, 5% of the 0.4 s step, so no blocker);
// compute busy 0.69 (GPU:0, the straggler) and 0.63 s. Longest idle gaps
// 0.05+0.04 s (GPU:0) and 0.06+0.03 s (GPU:1): a 0.045 s host stall per
// step, 11% of the step (not called a stall).
inline snapshot::RunState RunWithEverything() {
  snapshot::RunState r;
  r.key = {"1234-llama", "run-1"};
  r.window_id = "2026_11_22_01_00_00";
  r.window_start = 1795309200;  // 2026-11-22 01:00:00 UTC
  r.has_window = true;
  r.format = "json";
  r.expected_gpus = 2;
  r.incomplete = false;
  r.analyzed_unix = 1795000000.5;
  r.last_activity_unix = 1795000001.25;
  r.step_seconds = 0.4;
  r.step_source = "log";
  r.training.last_step = 1200;
  r.training.last_step_seconds = 0.41;
  r.training.steady_step_seconds = 0.4;
  r.training.tokens_per_second_per_device = 5123.5;
  r.training.tflops_per_device = 312.25;
  r.training.mfu_ratio = 0.48;
  r.training.loss = 2.125;
  r.training.last_step_unix = 1795000002;

  aggregate::WindowStats& st = r.MutableStats();
  st.rule_set = "drill";
  st.profile_steps = 3;
  st.launcher_mode = aggregate::LauncherMode::kOneNodePerProcess;
  st.gpus_per_file = 2.0;
  // As a rocprofv3 window lists them: GPU agents that dispatched nothing.
  st.idle_gpu_agents = 6;
  st.idle_gpu_agent_names = {"pid 4000 GPU 2 (AMD Instinct MI300X)",
                             "pid 4000 GPU 3 (AMD Instinct MI300X)"};
  st.events = 123456;
  st.truncated = false;
  st.timestamp_dirs = {"2026_11_22_01_00_00", "2026_11_22_01_00_03"};
  aggregate::FileSummary f;
  f.path =
      "/jobs/1234-llama/run-1/tensorboard/plugins/profile/2026_11_22_01_00_00/host0.trace.json.gz";
  f.schema = parse::TraceSchema::kJaxTraceEvents;
  f.events = 123456;
  f.gpus = 2;
  f.drops = {{"no_dur", 3}, {"bad_ts", 1}};
  st.files = {f};

  aggregate::FamilySummary gemm;
  gemm.family = "GEMM";
  gemm.kind = classify::FamilyKind::kMath;
  gemm.launches = 600;
  gemm.total_ps = 1'200'000'000'000;
  gemm.distinct_kernels = 7;
  gemm.exclusive_ps = 300'000'000'000;
  gemm.idle_before_ps = 90'000'000'000;
  gemm.top_kernels = {{"Cijk_Alik_Bljk_gemm", 450, 900'000'000'000},
                      {"weird \"quoted\" back\\slash\nnewline", 150, 300'000'000'000}};
  aggregate::FamilySummary nccl;
  nccl.family = "NCCL";
  nccl.kind = classify::FamilyKind::kComm;
  nccl.launches = 60;
  nccl.total_ps = 600'000'000'000;
  nccl.distinct_kernels = 1;
  nccl.exclusive_ps = 120'000'000'000;
  nccl.idle_before_ps = 60'000'000'000;
  nccl.top_kernels = {{"ncclDevKernel_AllReduce_Sum_bf16", 60, 600'000'000'000}};
  aggregate::FamilySummary other;
  other.family = "Other kernels";
  st.families = {gemm, nccl, other};
  st.total_kernel_ps = 1'800'000'000'000;
  st.total_launches = 660;

  aggregate::DeviceSummary d0;
  d0.file = f.path;
  d0.device = "/device:GPU:0";
  d0.kernels = 330;
  d0.kernel_ps = 900'000'000'000;
  d0.busy_ps = 750'000'000'000;
  d0.span_ps = 900'000'000'000;
  d0.streams = 2;
  d0.comm_ps = 300'000'000'000;
  d0.exposed_comm_ps = 60'000'000'000;
  d0.memops = 4;
  d0.memop_ps = 1'000'000;
  d0.compute_busy_ps = 690'000'000'000;
  d0.exclusive_ps = 400'000'000'000;
  d0.largest_gaps_ps = {50'000'000'000, 40'000'000'000, 1'000'000};
  aggregate::DeviceSummary d1 = d0;
  d1.device = "/device:GPU:1";
  d1.span_ps = 1'050'000'000'000;
  d1.exposed_comm_ps = 120'000'000'000;
  d1.compute_busy_ps = 630'000'000'000;
  d1.exclusive_ps = 380'000'000'000;
  d1.largest_gaps_ps = {60'000'000'000, 30'000'000'000};
  st.devices = {d0, d1};
  st.serial_kernels = {
      {"ncclDevKernel_AllReduce_Sum_bf16", "NCCL", 6, 120'000'000'000, 120'000'000'000}};
  st.trace_steps = {{0, 7, 400'000'000'000}, {0, -1, 410'000'000'000}};  // in files[0]
  st.top_exclusive = {{"Cijk_Alik_Bljk_gemm", "GEMM", 250'000'000'000},
                      {"ncclDevKernel_AllReduce_Sum_bf16", "NCCL", 120'000'000'000}};
  st.top_idle_before = {{"Cijk_Alik_Bljk_gemm", "GEMM", 90'000'000'000}};
  st.has_regions = true;
  st.regions = {{"decoder/layers/mlp", 900'000'000'000},
                {"decoder/layers/attention", 300'000'000'000}};
  st.regions_other_ps = 60'000'000'000;
  st.region_coverage = 1'260.0 / 1'800.0;  // the regions above over total_kernel_ps
  // 2 GPUs x 3 steps; GEMM kernels of the counted operators ran 1.2 s.
  st.flops.flops = {6.0e14, 1.2e14, 0};
  st.flops.kernel_ps = {1'000'000'000'000, 200'000'000'000, 0};
  st.flops.unknown_ops = 2;
  st.flops.unknown_kernel_ps = 50'000'000'000;
  // 1.25 s of GEMM kernels, of them 1.2 s counted: coverage 0.96.
  st.flops.math_ps = 1'250'000'000'000;
  st.flops.math_counted_ps = 1'200'000'000'000;
  st.flops.uncounted = {{"aten::addmm", true, 50'000'000'000}};
  st.flops.families = {{"GEMM", 7.2e14, 1'200'000'000'000}};
  st.flops.device_name = "NVIDIA H100 80GB HBM3";
  st.flops.peak_per_second = 989.4e12;
  st.flops.peak_source = "datasheet";
  // Bytes: the counted GEMM kernels (1.2 s) moved 1.2 TB, 0.2 TB per GPU
  // step; H100 SXM HBM3 peak 3.35 TB/s.
  st.bytes.families = {{"GEMM", 1.2e12, 1'200'000'000'000}};
  st.bytes.peak_hbm_bytes_per_second = 3.35e12;
  st.bytes.peak_hbm_source = "datasheet";
  // The NCCL family's 60 calls, all all-reduces of 4 ranks with sizes: 6 GB
  // in 0.6 s (algbw 10 GB/s, busbw x 2(4-1)/4 = 15 GB/s); 0.15 s exposed.
  aggregate::CollectiveSums& ar = st.collectives[aggregate::CollectiveKind::kAllReduce];
  ar.calls = 60;
  ar.kernel_ps = 600'000'000'000;
  ar.exposed_ps = 150'000'000'000;
  ar.sized_calls = 60;
  ar.sized_ps = 600'000'000'000;
  ar.bytes = 6e9;
  ar.bus_ps = 600'000'000'000;
  ar.bus_bytes = 9e9;
  ar.group_sizes = {4};
  return r;
}

// A truncated, incomplete xplane window with no step time and no log: gemm
// 0.5 s, then a serial all-to-all alone for 0.2 s in 2 calls; span 0.8 s
// (the step the diagnosis falls back to), so the all-to-all is a blocker
// (25% of it).
inline snapshot::RunState RunWithoutStepTime() {
  snapshot::RunState r;
  r.key = {"1234-llama", "run-2"};
  r.window_id = "2026_11_22_02_00_00";
  r.window_start = 1795312800;
  r.has_window = true;
  r.format = "xplane";
  r.expected_gpus = 0;
  r.incomplete = true;
  r.window_failure = "truncated";
  r.analyzed_unix = 1795003600;
  r.last_activity_unix = 1795003600;
  aggregate::WindowStats& st = r.MutableStats();
  st.rule_set = "nvidia";
  st.profile_steps = 1;
  st.launcher_mode = aggregate::LauncherMode::kOneGpuPerProcess;
  st.gpus_per_file = 1.0;
  st.events = 1000000;
  st.truncated = true;
  st.timestamp_dirs = {"2026_11_22_02_00_00"};
  aggregate::FileSummary f;
  f.path = "host1.xplane.pb";
  f.schema = parse::TraceSchema::kXPlane;
  f.events = 1000000;
  f.suspected_truncated = true;
  f.partial = true;
  f.gpus = 1;
  st.files = {f};
  aggregate::FamilySummary gemm;
  gemm.family = "gemm";
  gemm.launches = 10;
  gemm.total_ps = 500'000'000'000;
  gemm.distinct_kernels = 1;
  gemm.kind = classify::FamilyKind::kMath;
  gemm.top_kernels = {{"sm90_xmma_gemm", 10, 500'000'000'000}};
  aggregate::FamilySummary a2a;
  a2a.family = "comm_other";
  a2a.kind = classify::FamilyKind::kComm;
  a2a.launches = 2;
  a2a.total_ps = a2a.exclusive_ps = 200'000'000'000;
  a2a.distinct_kernels = 1;
  a2a.top_kernels = {{"ragged_all_to_all_kernel", 2, 200'000'000'000, 200'000'000'000}};
  st.families = {gemm, a2a};
  st.total_kernel_ps = 700'000'000'000;
  st.total_launches = 12;
  st.serial_kernels = {
      {"ragged_all_to_all_kernel", "comm_other", 2, 200'000'000'000, 200'000'000'000}};
  aggregate::DeviceSummary d;
  d.file = f.path;
  d.device = "GPU 0";
  d.kernels = 12;
  d.kernel_ps = 700'000'000'000;
  d.busy_ps = 700'000'000'000;
  d.span_ps = 800'000'000'000;
  d.comm_ps = 200'000'000'000;
  d.exclusive_ps = 700'000'000'000;
  d.streams = 1;
  st.devices = {d};
  return r;
}

// Training log only (no window yet), some figures absent.
inline snapshot::RunState RunWithLogOnly() {
  snapshot::RunState r;
  r.key = {"5678-mixtral", "run-1"};
  r.has_window = false;
  r.step_seconds = 1.5;
  r.step_source = "config";
  r.training.last_step = 10;
  r.training.last_step_seconds = 1.75;
  r.training.loss = 7.5;
  r.last_activity_unix = 1795000100;
  return r;
}

inline snapshot::Snapshot SampleSnapshot() {
  snapshot::Snapshot s;
  for (const snapshot::RunState& r :
       {RunWithEverything(), RunWithoutStepTime(), RunWithLogOnly()}) {
    s.runs.emplace(r.key, r);
  }
  s.last_scan_unix = 1795003700;
  s.watch_roots = {{"/data/jobs", true}, {"/data/missing", false}};
  s.shard = 1;
  s.shards = 3;
  s.pending_windows = 2;
  s.pending_by_run[RunWithoutStepTime().key] = 2;
  s.metrics_detail = true;  // every series (serve --metrics-detail): the golden shows them all
  s.oldest_waiting_seconds = 42.5;
  s.owner_capped[{"4001", "owner_run_cap"}] = 3;
  return Published(std::move(s));
}

}  // namespace profwatch::testing
