#include "steplog/step_time_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace profwatch::steplog {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Step(int64_t step, double seconds, std::string_view prefix = "",
                 std::string_view extra = "") {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "completed step: %lld, seconds: %.3f, TFLOP/s/device: %.3f, Tokens/s/device: "
                "%.3f, total_weights: 1048576, loss: %.3f",
                static_cast<long long>(step), seconds, 1000.0 / seconds, 5000.0 / seconds,
                10.0 - 0.01 * static_cast<double>(step));
  return std::string(prefix) + buf + std::string(extra);
}

void FeedMaxTextConfig(StepTimeSource& s, std::string_view profiler, int skip, int steps) {
  s.AddLine("Config param model_name: llama2-7b");
  s.AddLine("Config param profiler: " + std::string(profiler));
  s.AddLine("Config param profiler_steps: " + std::to_string(steps));
  s.AddLine("Config param skip_first_n_steps_for_profiler: " + std::to_string(skip));
  s.AddLine("Config param profile_periodically_period: -1");
}

TEST(StepTimeSourceTest, CombinesPerNodeDuplicatesKeepingSlowestAndSpread) {
  FakeClock clock;
  StepTimeSource s(clock);
  s.AddLine(Step(10, 5.0, "[node0] "));
  s.AddLine(Step(10, 5.6, "[node1] ", ", MFU: 40.00%"));
  s.AddLine(Step(10, 5.2, "[node2] "));
  ASSERT_EQ(s.last_step(), 10);
  EXPECT_DOUBLE_EQ(*s.last_step_seconds(), 5.6);
  EXPECT_NEAR(*s.last_step_spread_seconds(), 0.6, 1e-12);
  // The slowest node's other fields.
  EXPECT_NEAR(*s.tokens_per_second_per_device(), 5000.0 / 5.6, 1e-3);
  EXPECT_NEAR(*s.tflops_per_device(), 1000.0 / 5.6, 1e-3);
  EXPECT_DOUBLE_EQ(*s.mfu_ratio(), 0.40);
  EXPECT_DOUBLE_EQ(*s.loss(), 9.9);
  std::vector<StepRecord> steps = s.Steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].lines, 3);
  EXPECT_EQ(s.step_lines(), 3u);
}

TEST(StepTimeSourceTest, SteadyStateExcludesWarmupProfiledAndWriteBack) {
  FakeClock clock;
  StepTimeSource s(clock);
  FeedMaxTextConfig(s, "xplane", /*skip=*/5, /*steps=*/3);
  // Outliers everywhere the steady state must not look: compilation (0..4),
  // profiled steps (5..7), write-back (8). Any one of them leaking into the
  // median moves it.
  const std::vector<double> excluded = {60.0, 9.0, 8.0, 7.0, 6.0, 3.6, 3.7, 3.8, 3.5};
  const std::vector<double> steady = {2.10, 2.00, 2.30, 2.05, 2.20, 2.15,
                                      2.25, 2.01, 2.40, 2.12, 2.11, 2.50};
  int64_t step = 0;
  for (double sec : excluded) s.AddLine(Step(step++, sec));
  EXPECT_FALSE(s.steady_step_seconds().has_value());
  for (double sec : steady) s.AddLine(Step(step++, sec));
  // Sorted steady: 2.00 2.01 2.05 2.10 2.11 2.12 | 2.15 2.20 2.25 2.30 2.40 2.50
  ASSERT_TRUE(s.steady_step_seconds().has_value());
  EXPECT_NEAR(*s.steady_step_seconds(), (2.12 + 2.15) / 2, 1e-12);
  EXPECT_EQ(s.steady_step_count(), 12u);

  for (int64_t i = 0; i <= 4; ++i) EXPECT_EQ(s.Classify(i), StepKind::kWarmup) << i;
  for (int64_t i = 5; i <= 7; ++i) EXPECT_EQ(s.Classify(i), StepKind::kProfiled) << i;
  EXPECT_EQ(s.Classify(8), StepKind::kWriteBack);
  for (int64_t i = 9; i <= 20; ++i) EXPECT_EQ(s.Classify(i), StepKind::kSteady) << i;
  EXPECT_EQ(s.first_profiled_step(), 5);
  EXPECT_EQ(s.profile_steps(), 3);
  EXPECT_THAT(s.ProfiledRanges(100), ElementsAre(StepRange{5, 7}));
  EXPECT_THAT(s.warnings(), IsEmpty());
}

TEST(StepTimeSourceTest, SteadyMedianUsesOnlyTheMostRecentWindow) {
  FakeClock clock;
  StepTimeOptions opt;
  opt.steady_window = 5;
  StepTimeSource s(clock, opt);
  // No profiler: warm-up is the first min_warmup_steps (3) steps.
  for (int64_t i = 0; i < 3; ++i) s.AddLine(Step(i, 50.0));
  for (int64_t i = 3; i < 20; ++i) s.AddLine(Step(i, 100.0));  // old, outside the window
  const std::vector<double> recent = {1.0, 5.0, 2.0, 4.0, 3.0};
  int64_t step = 20;
  for (double sec : recent) s.AddLine(Step(step++, sec));
  EXPECT_DOUBLE_EQ(*s.steady_step_seconds(), 3.0);
  EXPECT_EQ(s.steady_step_count(), 5u);
  EXPECT_EQ(s.Classify(2), StepKind::kWarmup);
  EXPECT_EQ(s.Classify(3), StepKind::kSteady);
}

TEST(StepTimeSourceTest, WarmupIsAtLeastMinStepsEvenWithEarlyProfile) {
  FakeClock clock;
  StepTimeOptions opt;
  opt.min_warmup_steps = 4;
  StepTimeSource s(clock, opt);
  FeedMaxTextConfig(s, "xplane", /*skip=*/1, /*steps=*/2);
  EXPECT_EQ(s.Classify(0), StepKind::kWarmup);
  EXPECT_EQ(s.Classify(1), StepKind::kWarmup);  // profiled, but still compiling
  EXPECT_EQ(s.Classify(3), StepKind::kWarmup);  // the write-back step, inside warm-up
  EXPECT_EQ(s.Classify(4), StepKind::kSteady);
}

TEST(StepTimeSourceTest, ProfilerOffIgnoresWindowParams) {
  FakeClock clock;
  StepTimeSource s(clock);
  FeedMaxTextConfig(s, "", /*skip=*/5, /*steps=*/3);  // MaxText always dumps these
  EXPECT_FALSE(s.profiling_enabled());
  EXPECT_FALSE(s.first_profiled_step().has_value());
  EXPECT_EQ(s.Classify(2), StepKind::kWarmup);
  EXPECT_EQ(s.Classify(3), StepKind::kSteady);
  EXPECT_EQ(s.Classify(6), StepKind::kSteady);
  EXPECT_THAT(s.ProfiledRanges(100), IsEmpty());
}

TEST(StepTimeSourceTest, AcceptsEnumStyleAndLegacyProfilerValues) {
  FakeClock clock;
  StepTimeSource a(clock);
  a.AddLine("Config param profiler: ProfilerType.XPLANE");
  a.AddLine("Config param skip_first_n_steps_for_profiler: 5");
  a.AddLine("Config param profiler_steps: 3");
  EXPECT_TRUE(a.profiling_enabled());
  EXPECT_EQ(a.Classify(6), StepKind::kProfiled);

  StepTimeSource b(clock);
  b.AddLine("Config param profiler: ProfilerType.NONE");
  EXPECT_FALSE(b.profiling_enabled());

  StepTimeSource c(clock);
  c.AddLine("Config param enable_profiler: True");
  c.AddLine("Config param skip_first_n_steps_for_profiler: 2");
  c.AddLine("Config param profiler_steps: 5");
  EXPECT_TRUE(c.profiling_enabled());
  EXPECT_THAT(c.ProfiledRanges(100), ElementsAre(StepRange{2, 6}));
  EXPECT_EQ(c.Classify(7), StepKind::kWriteBack);
}

TEST(StepTimeSourceTest, FlagOverridesWinAndMismatchIsWarned) {
  FakeClock clock;
  StepTimeOptions opt;
  opt.overrides.profiler_steps = 2;
  StepTimeSource s(clock, opt);
  FeedMaxTextConfig(s, "xplane", /*skip=*/5, /*steps=*/3);
  EXPECT_EQ(s.profile_config().profiler_steps, 2);
  EXPECT_EQ(s.log_profile_config().profiler_steps, 3);
  EXPECT_EQ(s.Classify(6), StepKind::kProfiled);
  EXPECT_EQ(s.Classify(7), StepKind::kWriteBack);
  EXPECT_EQ(s.Classify(8), StepKind::kSteady);
  ASSERT_EQ(s.warnings().size(), 1u);
  EXPECT_THAT(s.warnings()[0], HasSubstr("profile_steps=2"));
  EXPECT_THAT(s.warnings()[0], HasSubstr("profiler_steps=3"));
  // The same disagreement seen again (per-node config dumps) warns once.
  s.AddLine("Config param profiler_steps: 3");
  EXPECT_EQ(s.warnings().size(), 1u);
}

TEST(StepTimeSourceTest, AgreeingFlagsDoNotWarn) {
  FakeClock clock;
  StepTimeOptions opt;
  opt.overrides.profiler_steps = 3;
  opt.overrides.skip_first_n_steps = 5;
  StepTimeSource s(clock, opt);
  FeedMaxTextConfig(s, "xplane", 5, 3);
  EXPECT_THAT(s.warnings(), IsEmpty());
}

TEST(StepTimeSourceTest, FlagsAloneDefineWindowAndWarnWhenLogSaysOff) {
  FakeClock clock;
  StepTimeOptions opt;
  opt.overrides.profiler_steps = 3;
  opt.overrides.skip_first_n_steps = 10;
  StepTimeSource s(clock, opt);
  EXPECT_TRUE(s.profiling_enabled());
  EXPECT_THAT(s.ProfiledRanges(100), ElementsAre(StepRange{10, 12}));
  EXPECT_EQ(s.Classify(13), StepKind::kWriteBack);
  EXPECT_THAT(s.warnings(), IsEmpty());
  s.AddLine("Config param profiler: ");
  ASSERT_EQ(s.warnings().size(), 1u);
  EXPECT_THAT(s.warnings()[0], HasSubstr("profiler is off"));
  EXPECT_TRUE(s.profiling_enabled());
}

TEST(StepTimeSourceTest, PeriodicProfilingExcludesEveryWindow) {
  FakeClock clock;
  StepTimeSource s(clock);
  s.AddLine("Config param profiler: nsys");
  s.AddLine("Config param skip_first_n_steps_for_profiler: 5");
  s.AddLine("Config param profiler_steps: 3");
  s.AddLine("Config param profile_periodically_period: 10");
  EXPECT_THAT(s.ProfiledRanges(30),
              ElementsAre(StepRange{5, 7}, StepRange{15, 17}, StepRange{25, 27}));
  EXPECT_EQ(s.Classify(15), StepKind::kProfiled);
  EXPECT_EQ(s.Classify(17), StepKind::kProfiled);
  EXPECT_EQ(s.Classify(18), StepKind::kWriteBack);
  EXPECT_EQ(s.Classify(19), StepKind::kSteady);
  EXPECT_EQ(s.Classify(28), StepKind::kWriteBack);
  for (int64_t i = 0; i < 40; ++i)
    s.AddLine(Step(i, s.Classify(i) == StepKind::kSteady ? 2.0 : 9.0));
  EXPECT_DOUBLE_EQ(*s.steady_step_seconds(), 2.0);
}

TEST(StepTimeSourceTest, PeriodicWindowsBeforeFirstFollowMaxTextModulo) {
  // MaxText activates when (step - first) % period == 0 with Python's modulo,
  // so skip=15 period=10 also profiles from step 5.
  FakeClock clock;
  StepTimeSource s(clock);
  s.AddLine("Config param profiler: xplane");
  s.AddLine("Config param skip_first_n_steps_for_profiler: 15");
  s.AddLine("Config param profiler_steps: 2");
  s.AddLine("Config param profile_periodically_period: 10");
  EXPECT_THAT(s.ProfiledRanges(25),
              ElementsAre(StepRange{5, 6}, StepRange{15, 16}, StepRange{25, 26}));
  // Warm-up still runs to the configured first step.
  EXPECT_EQ(s.Classify(5), StepKind::kWarmup);
  EXPECT_EQ(s.Classify(17), StepKind::kWriteBack);
}

TEST(StepTimeSourceTest, RestartAfterCheckpointStartsNewSegment) {
  FakeClock clock;
  StepTimeSource s(clock);
  FeedMaxTextConfig(s, "xplane", 5, 3);
  for (int64_t i = 0; i < 15; ++i) s.AddLine(Step(i, 2.0));
  EXPECT_EQ(s.run_start_step(), 0);
  // The job died and was requeued from the step-100 checkpoint into the same log.
  FeedMaxTextConfig(s, "xplane", 5, 3);
  s.AddLine(Step(100, 70.0));
  EXPECT_EQ(s.run_start_step(), 100);
  EXPECT_EQ(s.first_profiled_step(), 105);
  EXPECT_EQ(s.Classify(104), StepKind::kWarmup);
  EXPECT_EQ(s.Classify(107), StepKind::kProfiled);
  EXPECT_EQ(s.Classify(108), StepKind::kWriteBack);
  EXPECT_EQ(s.Steps().size(), 1u);  // old segment dropped
  EXPECT_FALSE(s.steady_step_seconds().has_value());
}

TEST(StepTimeSourceTest, LogReadFromTheMiddleAssumesFreshRun) {
  FakeClock clock;
  StepTimeSource s(clock);
  s.AddLine(Step(500, 2.0));
  EXPECT_EQ(s.run_start_step(), 0);
  EXPECT_EQ(s.Classify(500), StepKind::kSteady);
  EXPECT_DOUBLE_EQ(*s.steady_step_seconds(), 2.0);
}

TEST(StepTimeSourceTest, NewestStepStillArrivingIsLeftOutOfMedian) {
  FakeClock clock;
  StepTimeSource s(clock);
  for (int64_t i = 3; i < 6; ++i) {
    s.AddLine(Step(i, 2.0, "[node0] "));
    s.AddLine(Step(i, 2.0, "[node1] "));
  }
  s.AddLine(Step(6, 1.0, "[node0] "));  // node1's line for step 6 not yet read
  EXPECT_EQ(s.steady_step_count(), 3u);
  EXPECT_DOUBLE_EQ(*s.steady_step_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(*s.last_step_seconds(), 1.0);
  s.AddLine(Step(6, 3.0, "[node1] "));
  EXPECT_EQ(s.steady_step_count(), 4u);
  EXPECT_DOUBLE_EQ(*s.steady_step_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(*s.last_step_seconds(), 3.0);
}

TEST(StepTimeSourceTest, CountsParseErrorsAndIgnoresGarbage) {
  FakeClock clock;
  StepTimeSource s(clock);
  s.AddLine("completed step: twelve, seconds: 5.0");
  s.AddLine("completed step: 12");
  s.AddLine(std::string("\0\xff\xfe completed step: \x01", 21));
  s.AddLine("some unrelated log line");
  s.AddLine(std::string(100000, '\xff'));
  s.AddLine("");
  s.AddLine("Config param profiler_steps: three");
  EXPECT_EQ(s.parse_errors(), 3u);
  EXPECT_EQ(s.step_lines(), 0u);
  EXPECT_FALSE(s.last_step().has_value());
  EXPECT_FALSE(s.steady_step_seconds().has_value());
  ASSERT_EQ(s.warnings().size(), 1u);
  EXPECT_THAT(s.warnings()[0], HasSubstr("profiler_steps"));
}

TEST(StepTimeSourceTest, LastStepTimeComesFromInjectedClock) {
  FakeClock clock;
  StepTimeSource s(clock);
  EXPECT_FALSE(s.last_step_time().has_value());
  s.AddLine(Step(1, 2.0));
  const TimePoint t1 = clock.Now();
  EXPECT_EQ(s.last_step_time(), t1);
  clock.Advance(std::chrono::seconds(7));
  s.AddLine(Step(0, 2.0));  // a late line of an older step does not move it
  EXPECT_EQ(s.last_step_time(), t1);
  s.AddLine(Step(2, 2.0));
  EXPECT_EQ(s.last_step_time(), t1 + std::chrono::seconds(7));
  EXPECT_EQ(s.last_step(), 2);
}

// A line read while catching up carries when it was written at the latest
// (its log's modification time); the clock still caps it.
TEST(StepTimeSourceTest, LastStepTimeIsTheWrittenTimeWhenEarlier) {
  FakeClock clock;
  StepTimeSource s(clock);
  const TimePoint month_ago = clock.Now() - std::chrono::hours(24 * 30);
  s.AddLine(Step(1, 2.0), month_ago);
  EXPECT_EQ(s.last_step_time(), month_ago);
  s.AddLine(Step(2, 2.0), clock.Now() + std::chrono::hours(1));  // a file from the future
  EXPECT_EQ(s.last_step_time(), clock.Now());
  s.AddLine(Step(3, 2.0));
  EXPECT_EQ(s.last_step_time(), clock.Now());
}

TEST(StepTimeSourceTest, RetainsBoundedNumberOfSteps) {
  FakeClock clock;
  StepTimeOptions opt;
  opt.max_retained_steps = 50;
  opt.steady_window = 10;
  StepTimeSource s(clock, opt);
  for (int64_t i = 0; i < 1000; ++i) s.AddLine(Step(i, 1.0 + static_cast<double>(i % 2)));
  std::vector<StepRecord> steps = s.Steps();
  ASSERT_EQ(steps.size(), 50u);
  EXPECT_EQ(steps.front().step, 950);
  EXPECT_EQ(steps.back().step, 999);
  EXPECT_DOUBLE_EQ(*s.steady_step_seconds(), 1.5);
  // Far below the retained steps is a restart the step gauges follow (issue
  // 23), not an old line to ignore.
  s.AddLine(Step(3, 99.0));
  EXPECT_EQ(s.last_step(), 3);
  EXPECT_EQ(s.Steps().size(), 1u);
}

TEST(StepKindTest, NamesAreStable) {
  EXPECT_EQ(StepKindName(StepKind::kWarmup), "warmup");
  EXPECT_EQ(StepKindName(StepKind::kProfiled), "profiled");
  EXPECT_EQ(StepKindName(StepKind::kWriteBack), "write_back");
  EXPECT_EQ(StepKindName(StepKind::kSteady), "steady");
}

// A training job restarted from an earlier checkpoint (no new config dump):
// the step gauges follow the new run instead of freezing at the old highest
// step, and the steady median uses the new run's steps only.
TEST(StepTimeSourceTest, StepsGoingBackwardsStartTheSeriesAgain) {
  FakeClock clock;
  StepTimeSource s(clock);
  for (int64_t step = 0; step <= 200; ++step) s.AddLine(Step(step, 0.5));
  ASSERT_EQ(s.last_step(), 200);
  for (int64_t step = 100; step <= 160; ++step) s.AddLine(Step(step, 0.9));
  EXPECT_EQ(s.last_step(), 160);
  EXPECT_DOUBLE_EQ(*s.last_step_seconds(), 0.9);
  ASSERT_TRUE(s.steady_step_seconds().has_value());
  EXPECT_DOUBLE_EQ(*s.steady_step_seconds(), 0.9);
  EXPECT_EQ(s.restarts(), 1u);
  EXPECT_EQ(s.run_start_step(), 100);
}

TEST(StepTimeSourceTest, NodesReportingAStepLateIsNotARestart) {
  FakeClock clock;
  StepTimeSource s(clock);
  for (int64_t step = 0; step <= 50; ++step) s.AddLine(Step(step, 0.5, "[node0] "));
  s.AddLine(Step(45, 0.6, "[node1] "));  // a slow node catching up
  EXPECT_EQ(s.last_step(), 50);
  EXPECT_EQ(s.restarts(), 0u);
}

// --- one period per window ----------------------------------------------------

// Feeds steps [first, last] at `seconds`, the profiled and write-back steps
// (by the source's own config) at distinct slow values.
void FeedSteps(StepTimeSource& s, int64_t first, int64_t last, double seconds) {
  for (int64_t i = first; i <= last; ++i) {
    const StepKind kind = s.Classify(i);
    s.AddLine(Step(i, kind == StepKind::kProfiled    ? 0.150
                      : kind == StepKind::kWriteBack ? 0.200
                      : i == 0                       ? 40.0
                                                     : seconds));
  }
}

void FeedPeriodicConfig(StepTimeSource& s, int period) {
  s.AddLine("Config param profiler: xplane");
  s.AddLine("Config param skip_first_n_steps_for_profiler: 5");
  s.AddLine("Config param profiler_steps: 3");
  s.AddLine("Config param profile_periodically_period: " + std::to_string(period));
}

// The scenario with periodic profiling (period 60: windows at steps
// 5-7 and 65-67). The first window's step time comes from the 0.100 s steps
// after it (no steady step before it: 0..4 are warm-up) and is settled once
// three of them are in; 29 slower steps (0.139 s) appended later move the
// live steady step time but not the window's. The second window gets the
// 0.053 s steps around its own profiled steps (ten before, three after).
TEST(WindowStepTimeTest, LaterSlowStepsDoNotMoveASettledWindow) {
  FakeClock clock;
  StepTimeSource s(clock);
  FeedPeriodicConfig(s, 60);
  FeedSteps(s, 0, 9, 0.100);  // the window's files land after its write-back step
  std::optional<WindowSteps> w1 = s.LatestWindow();
  ASSERT_TRUE(w1);
  EXPECT_TRUE(w1->located);
  EXPECT_EQ(w1->profiled, (StepRange{5, 7}));
  EXPECT_EQ(w1->period_first, std::nullopt);
  EXPECT_EQ(w1->period_end, 65);
  WindowStepTime t = s.WindowSteadySeconds(*w1);
  EXPECT_EQ(t.seconds, 0.1);
  EXPECT_EQ(t.steps, 1u);
  EXPECT_FALSE(t.settled);
  FeedSteps(s, 10, 10, 0.100);
  EXPECT_FALSE(s.WindowSteadySeconds(*w1).settled);
  FeedSteps(s, 11, 24, 0.100);
  t = s.WindowSteadySeconds(*w1);
  EXPECT_EQ(t.seconds, 0.1);
  EXPECT_EQ(t.steps, 3u);  // steps 9..11
  EXPECT_TRUE(t.settled);

  FeedSteps(s, 25, 53, 0.139);
  EXPECT_EQ(s.steady_step_seconds(), 0.139);  // the live view follows the log
  t = s.WindowSteadySeconds(*w1);
  EXPECT_EQ(t.seconds, 0.1);
  EXPECT_TRUE(t.settled);

  FeedSteps(s, 54, 70, 0.053);
  std::optional<WindowSteps> w2 = s.LatestWindow(&*w1);
  ASSERT_TRUE(w2);
  EXPECT_TRUE(w2->located);
  EXPECT_EQ(w2->profiled, (StepRange{65, 67}));
  EXPECT_EQ(w2->period_first, 8);
  EXPECT_EQ(w2->period_end, 125);
  t = s.WindowSteadySeconds(*w2);
  EXPECT_EQ(t.seconds, 0.053);  // 55..64 before, 69..70 after
  EXPECT_EQ(t.steps, 12u);
  EXPECT_FALSE(t.settled);
  FeedSteps(s, 71, 71, 0.053);
  FeedSteps(s, 72, 90, 0.300);
  t = s.WindowSteadySeconds(*w2);
  EXPECT_EQ(t.seconds, 0.053);
  EXPECT_EQ(t.steps, 13u);  // 55..64, 69..71
  EXPECT_TRUE(t.settled);
  // The first window's period ended where the second's began.
  EXPECT_EQ(s.WindowSteadySeconds(*w1).seconds, 0.1);
}

// Profiled once (no period): a second window cannot be the configured one,
// so it is anchored at the log's last step when it is placed, and its step
// time comes from the steady steps up to there and after.
TEST(WindowStepTimeTest, WindowTheConfigDoesNotDescribeIsAnchoredAtTheLastStep) {
  FakeClock clock;
  StepTimeSource s(clock);
  FeedMaxTextConfig(s, "xplane", /*skip=*/5, /*steps=*/3);
  FeedSteps(s, 0, 30, 0.100);
  std::optional<WindowSteps> w1 = s.LatestWindow();
  ASSERT_TRUE(w1);
  EXPECT_EQ(w1->profiled, (StepRange{5, 7}));
  FeedSteps(s, 31, 59, 0.139);
  FeedSteps(s, 60, 75, 0.053);
  EXPECT_EQ(s.LatestWindow(), w1) << "without the previous window: the configured one";
  std::optional<WindowSteps> w2 = s.LatestWindow(&*w1);
  ASSERT_TRUE(w2);
  EXPECT_FALSE(w2->located);
  EXPECT_EQ(w2->profiled, (StepRange{75, 75}));
  WindowStepTime t = s.WindowSteadySeconds(*w2);
  EXPECT_EQ(t.seconds, 0.053);  // 66..75
  EXPECT_FALSE(t.settled);
  FeedSteps(s, 76, 78, 0.053);
  EXPECT_TRUE(s.WindowSteadySeconds(*w2).settled);
  EXPECT_EQ(s.WindowSteadySeconds(*w1).seconds, 0.1);
}

// A log without profile config (PyTorch): the window is the log's last step.
TEST(WindowStepTimeTest, LogWithoutProfileConfigAnchorsAtTheLastStep) {
  FakeClock clock;
  StepTimeSource s(clock);
  EXPECT_EQ(s.LatestWindow(), std::nullopt);
  FeedSteps(s, 0, 14, 0.081);
  std::optional<WindowSteps> w = s.LatestWindow();
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->located);
  EXPECT_EQ(w->profiled, (StepRange{14, 14}));
  WindowStepTime t = s.WindowSteadySeconds(*w);
  EXPECT_EQ(t.seconds, 0.081);
  EXPECT_EQ(t.steps, 10u);  // 5..14 (0..2 warm-up)
  FeedSteps(s, 15, 40, 0.2);
  t = s.WindowSteadySeconds(*w);
  EXPECT_EQ(t.seconds, 0.081);  // ten before, three after
  EXPECT_EQ(t.steps, 13u);
  EXPECT_TRUE(t.settled);
}

// The job restarted (a new config dump): the window's steps are gone, its
// time is settled and the caller keeps the value it had.
TEST(WindowStepTimeTest, RestartedLogSettlesTheWindow) {
  FakeClock clock;
  StepTimeSource s(clock);
  FeedMaxTextConfig(s, "xplane", /*skip=*/5, /*steps=*/3);
  FeedSteps(s, 0, 10, 0.100);  // two steady steps after the profile
  std::optional<WindowSteps> w = s.LatestWindow();
  ASSERT_TRUE(w);
  EXPECT_FALSE(s.WindowSteadySeconds(*w).settled);
  const uint64_t segment = s.segment();
  FeedMaxTextConfig(s, "xplane", /*skip=*/5, /*steps=*/3);
  s.AddLine(Step(100, 0.3));
  EXPECT_EQ(s.segment(), segment + 1);
  WindowStepTime t = s.WindowSteadySeconds(*w);
  EXPECT_TRUE(t.settled);
  EXPECT_EQ(t.seconds, std::nullopt);
}

}  // namespace
}  // namespace profwatch::steplog
