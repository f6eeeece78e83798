// FiguresOf (figures/window_figures.h) on a hand-made window of 2 GPUs and 3
// profiled steps (divisor 6): every figure the outputs render, worked out
// by hand in the comments, and what is absent when it cannot be computed.
#include "figures/window_figures.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace profwatch::figures {
// Named for this file: the unity build compiles it with its neighbours.
namespace window_figures_test {

using aggregate::WindowStats;

constexpr int64_t kMs = 1'000'000'000;  // picoseconds

// GEMM 600 ms (its two top kernels share a short name: one series of
// 500 ms), NCCL 120 ms, Other none. GPU 0: busy 300 ms of a 360 ms span,
// compute busy 280 ms; GPU 1: busy 330 of 390 ms, compute busy 320 ms (the
// straggler). 48 ms of all-reduce, 24 ms of it exposed. Regions: "layer"
// 540 ms, 60 ms other, coverage 0.8 of the 720 ms.
std::shared_ptr<const WindowStats> Window() {
  auto w = std::make_shared<WindowStats>();
  w->profile_steps = 3;
  aggregate::FamilySummary gemm;
  gemm.family = "gemm";
  gemm.kind = classify::FamilyKind::kMath;
  gemm.total_ps = 600 * kMs;
  gemm.launches = 60;
  gemm.exclusive_ps = 300 * kMs;
  gemm.top_kernels = {{"void gemm<1>(int)", 30, 300 * kMs, 150 * kMs, 0},
                      {"void gemm<2>(float)", 20, 200 * kMs, 100 * kMs, 0},
                      {"other_gemm", 10, 100 * kMs, 50 * kMs, 0}};
  aggregate::FamilySummary nccl;
  nccl.family = "nccl";
  nccl.kind = classify::FamilyKind::kComm;
  nccl.total_ps = 120 * kMs;
  nccl.launches = 12;
  aggregate::FamilySummary other;
  other.family = "Other";
  w->families = {gemm, nccl, other};
  w->total_kernel_ps = 720 * kMs;
  w->total_launches = 72;
  for (int i = 0; i < 2; ++i) {
    aggregate::DeviceSummary d;
    d.file = "/jobs/j/r/node" + std::to_string(i) + ".trace.json.gz";
    d.device = "GPU 0";
    d.kernel_ps = 360 * kMs;
    d.busy_ps = (300 + 30 * i) * kMs;
    d.span_ps = (360 + 30 * i) * kMs;
    d.compute_busy_ps = (280 + 40 * i) * kMs;
    d.exposed_comm_ps = 12 * kMs;
    d.exclusive_ps = 200 * kMs;
    w->devices.push_back(d);
  }
  aggregate::FileSummary f0, f1;
  f0.schema = f1.schema = parse::TraceSchema::kKineto;
  f0.drops = {{"empty_name", 2}, {"no_device", 1}};
  f1.drops = {{"empty_name", 3}};
  w->files = {f0, f1};
  w->regions = {{"layer", 540 * kMs}};
  w->regions_other_ps = 60 * kMs;
  w->has_regions = true;
  w->region_coverage = 600.0 / 720.0;
  aggregate::CollectiveSums& ar = w->collectives[aggregate::CollectiveKind::kAllReduce];
  ar.calls = 12;
  ar.kernel_ps = 48 * kMs;
  ar.exposed_ps = 24 * kMs;
  return w;
}

TEST(WindowFiguresTest, PerGpuStepFiguresOfTheWindow) {
  const WindowFigures f = FiguresOf(Window(), {0.2, "log"});
  ASSERT_EQ(f.families.size(), 3u);
  const FamilyFigures& gemm = f.families[0];
  EXPECT_DOUBLE_EQ(gemm.seconds_per_gpu_step, 0.1);  // 600 ms / 6
  EXPECT_DOUBLE_EQ(gemm.launches_per_gpu_step, 10.0);
  EXPECT_DOUBLE_EQ(gemm.exclusive_seconds_per_gpu_step, 0.05);
  EXPECT_DOUBLE_EQ(gemm.share_of_kernel_time, 600.0 / 720.0);
  EXPECT_DOUBLE_EQ(gemm.raw_seconds, 0.6);
  EXPECT_DOUBLE_EQ(gemm.raw_launches, 60.0);
  ASSERT_EQ(gemm.kernels.size(), 3u);
  EXPECT_EQ(gemm.kernels[1].kernel.name, "void gemm<2>(float)");
  EXPECT_DOUBLE_EQ(gemm.kernels[1].seconds_per_gpu_step, 0.2 / 6);
  // Both gemm<...> kernels are the series "gemm": 500 ms, before other_gemm.
  ASSERT_EQ(gemm.series.size(), 2u);
  EXPECT_EQ(gemm.series[0].label, "gemm");
  EXPECT_DOUBLE_EQ(gemm.series[0].seconds_per_gpu_step, 0.5 / 6);
  EXPECT_EQ(gemm.series[1].label, "other_gemm");
  EXPECT_EQ(f.top_family, std::optional<size_t>(0));

  EXPECT_DOUBLE_EQ(f.time.total_kernel_seconds, 0.12);  // 720 ms / 6
  EXPECT_DOUBLE_EQ(f.time.launches, 12.0);
  EXPECT_DOUBLE_EQ(f.time.busy_seconds, 0.63 / 6);
  EXPECT_DOUBLE_EQ(f.time.idle_seconds, 0.12 / 6);     // (750 - 630) ms / 6
  EXPECT_DOUBLE_EQ(f.time.overlap_seconds, 0.09 / 6);  // (720 - 630) ms / 6
  EXPECT_DOUBLE_EQ(f.time.exposed_comm_seconds, 0.024 / 6);
  EXPECT_DOUBLE_EQ(f.raw.span_seconds, 0.75);
  EXPECT_DOUBLE_EQ(f.raw.gpu_steps, 6.0);

  EXPECT_EQ(f.dropped_events,
            (std::map<std::string, uint64_t>{{"empty_name", 5}, {"no_device", 1}}));
  ASSERT_EQ(f.regions.listed.size(), 1u);
  EXPECT_DOUBLE_EQ(f.regions.listed[0].kernel_seconds_per_gpu_step, 0.09);
  EXPECT_DOUBLE_EQ(*f.regions.other_seconds_per_gpu_step, 0.01);
  EXPECT_DOUBLE_EQ(f.regions.unattributed_seconds_per_gpu_step, 0.12 / 6);  // 120 of 720 ms
  EXPECT_TRUE(f.regions.torch_input);
  EXPECT_FALSE(f.regions.jax_input);

  ASSERT_TRUE(f.straggler);
  EXPECT_EQ(f.straggler->device.file, f.stats->devices[1].file);
  EXPECT_EQ(f.straggler->device.device, f.stats->devices[1].device);
  EXPECT_EQ(f.straggler->host, "node1");
  EXPECT_DOUBLE_EQ(f.straggler->ratio, 320.0 / 300.0);  // median of 280 and 320 ms
  EXPECT_DOUBLE_EQ(f.straggler->compute_busy_seconds_per_step, 0.32 / 3);
  EXPECT_DOUBLE_EQ(f.straggler->min_seconds_per_step, 0.28 / 3);
  EXPECT_DOUBLE_EQ(f.straggler->sum_seconds_per_step, 0.6 / 3);

  ASSERT_EQ(f.devices.size(), 2u);
  EXPECT_DOUBLE_EQ(f.devices[1].idle_seconds, 0.06);
  EXPECT_DOUBLE_EQ(f.devices[1].overlap_seconds, 0.03);
  EXPECT_DOUBLE_EQ(f.devices[1].overlapped_seconds, 0.13);
}

// The figures are a plain value: a part copied out keeps every name after
// the WindowFigures and the WindowStats it was computed from are gone (a
// pointer into them would dangle here: the ASan build reads freed memory).
TEST(WindowFiguresTest, PartsOutliveTheFiguresAndTheirStats) {
  FamilyFigures gemm;
  RegionFigures region;
  StragglerFigures straggler;
  DeviceFigures device;
  {
    const WindowFigures f = FiguresOf(Window(), {0.2, "log"});
    ASSERT_EQ(f.stats.use_count(), 1);  // the figures hold the only reference
    ASSERT_FALSE(f.families.empty());
    ASSERT_FALSE(f.regions.listed.empty());
    ASSERT_TRUE(f.straggler);
    ASSERT_EQ(f.devices.size(), 2u);
    gemm = f.families[0];
    region = f.regions.listed[0];
    straggler = *f.straggler;
    device = f.devices[1];
  }
  EXPECT_EQ(gemm.family, "gemm");
  EXPECT_EQ(gemm.kind, classify::FamilyKind::kMath);
  ASSERT_EQ(gemm.kernels.size(), 3u);
  EXPECT_EQ(gemm.kernels[1].kernel.name, "void gemm<2>(float)");
  EXPECT_EQ(gemm.kernels[1].kernel.launches, 20);
  EXPECT_EQ(region.region, "layer");
  EXPECT_EQ(straggler.device.file, "/jobs/j/r/node1.trace.json.gz");
  EXPECT_EQ(device.device.file, "/jobs/j/r/node1.trace.json.gz");
  EXPECT_EQ(device.device.device, "GPU 0");
}

TEST(WindowFiguresTest, TheStepTimeGivesTheGapAndTheShares) {
  const WindowFigures f = FiguresOf(Window(), {0.2, "log"});
  EXPECT_EQ(f.step, (StepTime{0.2, "log"}));
  ASSERT_TRUE(f.step_gap);
  EXPECT_DOUBLE_EQ(f.step_gap->total_kernel_seconds, 0.12);
  EXPECT_DOUBLE_EQ(f.step_gap->minus_kernel_seconds, 0.08);
  EXPECT_DOUBLE_EQ(f.step_gap->ratio, 0.4);
  EXPECT_EQ(f.diagnosis.step_basis, "log");
  EXPECT_DOUBLE_EQ(f.diagnosis.math_alone_seconds_per_gpu_step, 0.05);
  ASSERT_EQ(f.collectives.size(), 1u);
  ASSERT_TRUE(f.exposed_collective);
  EXPECT_EQ(f.exposed_collective->index, 0u);
  EXPECT_DOUBLE_EQ(*f.exposed_collective->share_of_step, 0.004 / 0.2);  // 24 ms / 6 over 0.2 s

  // Without a step time: no gap; the diagnosis weighs against the span.
  const WindowFigures none = FiguresOf(Window(), {});
  EXPECT_FALSE(none.step_gap);
  EXPECT_EQ(none.diagnosis.step_basis, "kernel span");
  EXPECT_DOUBLE_EQ(none.diagnosis.step_seconds, 0.125);  // 750 ms / 6
  EXPECT_DOUBLE_EQ(*none.exposed_collective->share_of_step, 0.004 / 0.125);
}

TEST(WindowFiguresTest, AWindowWithoutGpusHasNoPerGpuFigures) {
  auto w = std::make_shared<WindowStats>(*Window());
  w->devices.clear();
  const WindowFigures f = FiguresOf(w, {0.2, "log"});
  EXPECT_FALSE(f.step_gap);  // undefined without GPUs, not step - 0
  EXPECT_FALSE(f.straggler);
  EXPECT_TRUE(f.collectives.empty());
  EXPECT_FALSE(f.exposed_collective);
  EXPECT_FALSE(f.flops.total_per_gpu_step);
  EXPECT_DOUBLE_EQ(f.families[0].seconds_per_gpu_step, 0.0);
  EXPECT_DOUBLE_EQ(f.raw.gpu_steps, 0.0);
}

TEST(WindowFiguresTest, NoKernelTimeHasNoTopFamily) {
  auto w = std::make_shared<WindowStats>(*Window());
  for (auto& family : w->families) family.total_ps = 0;
  EXPECT_FALSE(FiguresOf(w, {}).top_family);
}

}  // namespace window_figures_test
}  // namespace profwatch::figures
