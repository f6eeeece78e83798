#include "aggregate/window_stats.h"

#include <gtest/gtest.h>

namespace profwatch::aggregate {
namespace {

TEST(LauncherModeTest, FollowsGpusPerFile) {
  EXPECT_EQ(LauncherModeFor(16, 2), LauncherMode::kOneNodePerProcess);
  EXPECT_EQ(LauncherModeFor(2, 1), LauncherMode::kOneNodePerProcess);
  EXPECT_EQ(LauncherModeFor(4, 4), LauncherMode::kOneGpuPerProcess);
  EXPECT_EQ(LauncherModeFor(3, 4), LauncherMode::kMixed);
  EXPECT_EQ(LauncherModeFor(5, 4), LauncherMode::kMixed);
  EXPECT_EQ(LauncherModeFor(7, 4), LauncherMode::kMixed);
  EXPECT_EQ(LauncherModeFor(0, 4), LauncherMode::kUnknown);
  EXPECT_EQ(LauncherModeFor(4, 0), LauncherMode::kUnknown);
  EXPECT_EQ(LauncherModeName(LauncherMode::kOneNodePerProcess), "1-node/proc");
  EXPECT_EQ(LauncherModeName(LauncherMode::kOneGpuPerProcess), "1-GPU/proc");
  EXPECT_EQ(LauncherModeName(LauncherMode::kMixed), "mixed");
  EXPECT_EQ(LauncherModeName(LauncherMode::kUnknown), "unknown");
}

WindowStats WithDevices(int n, int steps) {
  WindowStats w;
  w.profile_steps = steps;
  for (int i = 0; i < n; ++i) {
    DeviceSummary d;
    d.device = "GPU " + std::to_string(i);
    d.busy_ps = 100 + i;
    d.span_ps = 1000;
    d.kernel_ps = 200;
    d.exposed_comm_ps = 7;
    w.devices.push_back(d);
  }
  return w;
}

TEST(WindowStatsTest, PerGpuStepFiguresDivideByGpusTimesSteps) {
  WindowStats w = WithDevices(16, 3);
  EXPECT_EQ(w.gpus(), 16);
  EXPECT_EQ(w.divisor(), 48);
  EXPECT_DOUBLE_EQ(w.PerGpuStepSeconds(48'000'000'000'000), 1.0);
  EXPECT_DOUBLE_EQ(w.PerGpuStepSeconds(12'000'000'000), 0.25e-3);
  EXPECT_DOUBLE_EQ(w.PerGpuStepCount(96), 2.0);
  EXPECT_DOUBLE_EQ(w.PerGpuStepCount(24), 0.5);
}

TEST(WindowStatsTest, ZeroDivisorGivesZero) {
  WindowStats none = WithDevices(0, 3);
  EXPECT_EQ(none.divisor(), 0);
  EXPECT_EQ(none.PerGpuStepSeconds(1'000'000), 0.0);
  EXPECT_EQ(none.PerGpuStepCount(5), 0.0);
  WindowStats no_steps = WithDevices(4, 0);
  EXPECT_EQ(no_steps.PerGpuStepSeconds(1'000'000), 0.0);
}

TEST(WindowStatsTest, SumsOverDevices) {
  WindowStats w = WithDevices(4, 3);
  EXPECT_EQ(w.SumBusyPs(), 100 + 101 + 102 + 103);
  EXPECT_EQ(w.SumSpanPs(), 4000);
  EXPECT_EQ(w.SumKernelPs(), 800);
  EXPECT_EQ(w.SumExposedCommPs(), 28);
}

TEST(WindowStatsTest, TraceStepSecondsIsMedianOfSlowestFilePerStep) {
  WindowStats w;
  EXPECT_EQ(w.TraceStepSeconds(), 0.0);
  const int64_t ms = 1'000'000'000;
  // Per step the slowest file: step 4 -> 12 ms, 5 -> 20 ms, 6 -> 40 ms.
  w.trace_steps = {{0, 4, 10 * ms}, {0, 5, 20 * ms}, {0, 6, 30 * ms},
                   {1, 4, 12 * ms}, {1, 5, 18 * ms}, {1, 6, 40 * ms}};
  EXPECT_DOUBLE_EQ(w.TraceStepSeconds(), 0.020);
  // Even count: mean of the middle two (12, 20, 40, 50 -> 30 ms).
  w.trace_steps.push_back({0, 7, 50 * ms});
  EXPECT_DOUBLE_EQ(w.TraceStepSeconds(), 0.030);
}

TEST(WindowStatsTest, UnnumberedStepsAlignByPositionWithinEachFile) {
  const int64_t ms = 1'000'000'000;
  WindowStats w;
  w.trace_steps = {
      {0, -1, 10 * ms}, {0, -1, 30 * ms}, {0, -1, 100 * ms}, {1, -1, 20 * ms}, {1, -1, 25 * ms}};
  // Groups: k=0 -> 20, k=1 -> 30, k=2 -> 100; median 30 ms.
  EXPECT_DOUBLE_EQ(w.TraceStepSeconds(), 0.030);
}

TEST(WindowStatsTest, PsToSecondsConverts) {
  EXPECT_DOUBLE_EQ(PsToSeconds(2'500'000'000'000), 2.5);
}

}  // namespace
}  // namespace profwatch::aggregate
