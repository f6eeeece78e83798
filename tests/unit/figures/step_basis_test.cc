// The step basis (figures/step_basis.h): each source of the step time wins
// exactly where its precedence says (the profile steps:
// tests/unit/aggregate/profile_steps_test.cc), values that
// are no step time are skipped, and the diagnosis' fallback order.
#include "figures/step_basis.h"

#include <gtest/gtest.h>

namespace profwatch::figures {
// Named for this file: the unity build compiles it with its neighbours.
namespace step_basis_test {

constexpr int64_t kMs = 1'000'000'000;  // picoseconds

// One GPU, three profiled steps of 55, 57 and 56 ms in the trace.
aggregate::WindowStats WithMarkers() {
  aggregate::WindowStats w;
  w.profile_steps = 3;
  w.trace_steps = {{0, 1, 55 * kMs}, {0, 2, 57 * kMs}, {0, 3, 56 * kMs}};
  return w;
}

TEST(StepTimeTest, EachSourceWinsOverTheOnesAfterIt) {
  const aggregate::WindowStats w = WithMarkers();
  StepSources s;
  s.config = 0.3;
  EXPECT_EQ(ChooseStepTime(s, nullptr), (StepTime{0.3, "config"}));
  EXPECT_EQ(ChooseStepTime(s, &w), (StepTime{0.056, "trace"}));
  s.log_steady = 0.07;
  EXPECT_EQ(ChooseStepTime(s, &w), (StepTime{0.07, "log"}));
  s.log_window = 0.06;
  EXPECT_EQ(ChooseStepTime(s, &w), (StepTime{0.06, "log"}));
  s.recorded = StepTime{0.05, "trace"};
  EXPECT_EQ(ChooseStepTime(s, &w), (StepTime{0.05, "trace"}));
  s.given = 0.04;
  EXPECT_EQ(ChooseStepTime(s, &w), (StepTime{0.04, "config"}));
}

TEST(StepTimeTest, ValuesThatAreNoStepTimeAreSkipped) {
  StepSources s;
  s.given = 0.0;
  s.recorded = StepTime{-1.0, "log"};
  s.log_window = 0.0;
  s.log_steady = -0.5;
  s.config = 0.0;
  EXPECT_EQ(ChooseStepTime(s, nullptr), StepTime{});
  aggregate::WindowStats no_markers;
  EXPECT_EQ(ChooseStepTime(s, &no_markers), StepTime{});
  s.config = 0.2;
  EXPECT_EQ(ChooseStepTime(s, &no_markers), (StepTime{0.2, "config"}));
}

TEST(DiagnosisStepTest, TheStepTimeThenTheMarkersThenTheKernelSpan) {
  aggregate::WindowStats w = WithMarkers();
  aggregate::DeviceSummary d;
  d.span_ps = 162 * kMs;
  w.devices.push_back(d);
  DiagnosisStep b = DiagnosisStepOf(w, {0.06, "log"});
  EXPECT_DOUBLE_EQ(b.seconds, 0.06);
  EXPECT_EQ(b.basis, "log");
  EXPECT_TRUE(b.measured);
  b = DiagnosisStepOf(w, {});
  EXPECT_DOUBLE_EQ(b.seconds, 0.056);
  EXPECT_EQ(b.basis, "trace");
  EXPECT_TRUE(b.measured);
  w.trace_steps.clear();
  b = DiagnosisStepOf(w, {0.0, "log"});
  EXPECT_DOUBLE_EQ(b.seconds, 0.054);  // 162 ms over 3 steps
  EXPECT_EQ(b.basis, "kernel span");
  EXPECT_FALSE(b.measured);
}

}  // namespace step_basis_test
}  // namespace profwatch::figures
