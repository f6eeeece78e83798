// figures/diagnosis.h on hand-made windows: each rule speaks where it
// should and stays quiet on the near miss, on both sides of its threshold.
#include "figures/diagnosis.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace profwatch::figures {
// Named for this file: the unity build compiles it with its neighbours.
namespace diagnosis_test {

using aggregate::DeviceSummary;
using aggregate::FamilySummary;
using aggregate::SerialKernel;
using aggregate::WindowStats;

constexpr int64_t kMs = 1'000'000'000;  // picoseconds

// One GPU, three profiled steps: the divisor is 3.
WindowStats OneGpu(std::vector<int64_t> gaps = {}) {
  WindowStats w;
  w.profile_steps = 3;
  DeviceSummary d;
  d.file = "/jobs/j/r/tensorboard/plugins/profile/2026_11_26_00_29_00/vm.trace.json.gz";
  d.device = "/device:GPU:0";
  d.kernels = 100;
  d.kernel_ps = d.busy_ps = 150 * kMs;
  d.span_ps = 162 * kMs;
  d.largest_gaps_ps = std::move(gaps);
  w.devices.push_back(d);
  FamilySummary gemm;
  gemm.family = "gemm";
  gemm.kind = classify::FamilyKind::kMath;
  gemm.total_ps = gemm.exclusive_ps = 100 * kMs;
  FamilySummary fusion;
  fusion.family = "xla_fusion_loop";
  fusion.total_ps = fusion.exclusive_ps = 50 * kMs;
  w.families = {gemm, fusion};
  w.total_kernel_ps = 150 * kMs;
  return w;
}

// A serial kernel of `calls` launches that ran alone `alone` ps in all.
SerialKernel Serial(std::string name, int64_t calls, int64_t alone) {
  return SerialKernel{std::move(name), "comm_other", calls, alone, alone};
}

TEST(DiagnosisTest, StepComesFromTheCallerThenTheTraceThenTheSpan) {
  WindowStats w = OneGpu();
  Diagnosis d = Diagnose(w, {0.06, "log"});
  EXPECT_EQ(d.step_basis, "log");
  EXPECT_DOUBLE_EQ(d.step_seconds, 0.06);
  d = Diagnose(w, {});
  EXPECT_EQ(d.step_basis, "kernel span");
  EXPECT_DOUBLE_EQ(d.step_seconds, 0.054);  // 162 ms over 3 steps
  w.trace_steps = {{0, 1, 55 * kMs}, {0, 2, 57 * kMs}, {0, 3, 56 * kMs}};
  d = Diagnose(w, {0.0, "log"});
  EXPECT_EQ(d.step_basis, "trace");
  EXPECT_DOUBLE_EQ(d.step_seconds, 0.056);
}

// A GEMM running alone for two thirds of the step is the step's work.
TEST(DiagnosisTest, MathRunningAloneIsWorkNotABlocker) {
  const Diagnosis d = Diagnose(OneGpu(), {0.05, "log"});
  EXPECT_TRUE(d.blockers.empty());
  EXPECT_NEAR(d.math_alone_seconds_per_gpu_step, 100e-3 / 3, 1e-15);
  EXPECT_NEAR(d.math_alone_share_of_step, (100e-3 / 3) / 0.05, 1e-12);
}

// 10% of the step is the threshold: 0.101 s alone in a 1 s step is a
// blocker, 0.099 s is not.
TEST(DiagnosisTest, ASerialKernelIsABlockerFromATenthOfTheStep) {
  WindowStats w = OneGpu();
  w.serial_kernels = {Serial("RaggedAllToAllKernelImpl", 3, 303 * kMs),
                      Serial("input_scatter_fusion", 6, 297 * kMs)};
  const Diagnosis d = Diagnose(w, {1.0, "log"});
  ASSERT_EQ(d.blockers.size(), 1u);
  const Blocker& b = d.blockers[0];
  EXPECT_EQ(b.kernel, "RaggedAllToAllKernelImpl");
  EXPECT_EQ(b.family, "comm_other");
  EXPECT_DOUBLE_EQ(b.exclusive_seconds_per_gpu_step, 0.101);
  EXPECT_DOUBLE_EQ(b.share_of_step, 0.101);
  EXPECT_DOUBLE_EQ(b.seconds_per_call, 0.101);
  // A longer step makes the same kernel too small to block it.
  EXPECT_TRUE(Diagnose(w, {1.02, "log"}).blockers.empty());
}

// Two gaps between three steps, over the three steps like every per-step
// figure (0.040 s / 3); 10% of the step is called a host stall (of 0.13 s:
// 10.3%), less is not (of 0.135 s: 9.9%).
TEST(DiagnosisTest, IdleBetweenStepsIsAHostStallFromTenPercent) {
  WindowStats w = OneGpu({21 * kMs, 19 * kMs, 2 * kMs});
  Diagnosis d = Diagnose(w, {0.13, "log"});
  ASSERT_TRUE(d.host_stall);
  EXPECT_EQ(d.host_stall->gaps_per_gpu, 2);
  EXPECT_DOUBLE_EQ(d.host_stall->seconds_per_step, 0.04 / 3);
  EXPECT_DOUBLE_EQ(d.host_stall->share_of_step, 0.04 / 3 / 0.13);
  EXPECT_TRUE(d.host_stall->stalled);
  EXPECT_EQ(d.host_stall->gaps_seconds, (std::vector<double>{0.021, 0.019}));
  EXPECT_EQ(d.host_stall->gpu, "vm.trace.json.gz /device:GPU:0");
  d = Diagnose(w, {0.135, "log"});
  EXPECT_FALSE(d.host_stall->stalled);
}

// The stall is part of the idle, and per step both are over the profiled
// steps: never larger than the idle per step, whatever the steps.
TEST(DiagnosisTest, HostStallPerStepIsNeverAboveIdlePerStep) {
  for (int steps = 2; steps <= 5; ++steps) {
    SCOPED_TRACE(steps);
    WindowStats w = OneGpu({21 * kMs, 19 * kMs, 18 * kMs, 17 * kMs});
    w.profile_steps = steps;
    // The gaps are all of the idle: span - busy = their sum.
    w.devices[0].span_ps = w.devices[0].busy_ps + (21 + 19 + 18 + 17) * kMs;
    const Diagnosis d = Diagnose(w, {0.1, "log"});
    ASSERT_TRUE(d.host_stall);
    EXPECT_LE(d.host_stall->seconds_per_step,
              w.PerGpuStepSeconds(w.SumSpanPs() - w.SumBusyPs()) * (1 + 1e-12));
  }
}

// The mean over GPUs; a GPU with fewer gaps than boundaries waited 0 at
// the others; the worst GPU's gaps are the ones listed.
TEST(DiagnosisTest, HostStallIsAveragedOverGpus) {
  WindowStats w = OneGpu({30 * kMs, 10 * kMs});
  DeviceSummary second = w.devices[0];
  second.device = "/device:GPU:1";
  second.largest_gaps_ps = {8 * kMs};
  w.devices.push_back(second);
  const Diagnosis d = Diagnose(w, {0.1, "log"});
  ASSERT_TRUE(d.host_stall);
  EXPECT_DOUBLE_EQ(d.host_stall->seconds_per_step, (0.04 / 3 + 0.008 / 3) / 2);
  EXPECT_EQ(d.host_stall->gaps_seconds, (std::vector<double>{0.03, 0.01}));
  EXPECT_EQ(d.host_stall->gpu, "vm.trace.json.gz /device:GPU:0");
}

TEST(DiagnosisTest, OneStepHasNoBoundary) {
  WindowStats w = OneGpu({5 * kMs});
  w.profile_steps = 1;
  EXPECT_FALSE(Diagnose(w, {0.1, "log"}).host_stall);
  EXPECT_FALSE(Diagnose(WindowStats{}, {0.1, "log"}).host_stall);
}

}  // namespace diagnosis_test
}  // namespace profwatch::figures
