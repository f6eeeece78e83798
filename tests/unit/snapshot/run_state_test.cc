// RunState's window stats and figures are shared between copies (the
// daemon's working state and every published Snapshot) and never edited in
// place.
#include <gtest/gtest.h>

#include "snapshot/snapshot.h"

namespace profwatch::snapshot {
namespace {

TEST(RunStateTest, StatsOfARunWithoutAWindowAreTheSharedEmptyOnes) {
  RunState r;
  ASSERT_NE(r.stats, nullptr);
  EXPECT_EQ(r.stats, NoWindowStats());
  EXPECT_EQ(r.stats->gpus(), 0);
  EXPECT_TRUE(r.stats->families.empty());
}

TEST(RunStateTest, CopiesShareStatsAndEditingOneLeavesTheOthers) {
  RunState a;
  a.key = {"job", "run"};
  aggregate::WindowStats& edit = a.MutableStats();
  edit.total_kernel_ps = 42;
  edit.profile_steps = 5;
  EXPECT_NE(a.stats, NoWindowStats());
  EXPECT_EQ(NoWindowStats()->total_kernel_ps, 0);  // the shared empty stats stay empty

  const RunState published = a;  // what PublishLocked does per run
  EXPECT_EQ(published.stats.get(), a.stats.get());

  a.MutableStats().total_kernel_ps = 7;
  EXPECT_NE(published.stats.get(), a.stats.get());
  EXPECT_EQ(published.stats->total_kernel_ps, 42);
  EXPECT_EQ(a.stats->total_kernel_ps, 7);
  EXPECT_EQ(a.stats->profile_steps, 5);  // the copy kept the other fields
}

// Figures are computed when the window or the step time changes, and only
// then: an unchanged run keeps the very same figures.
TEST(RunStateTest, FiguresFollowTheStatsAndTheStepTime) {
  RunState r;
  RefreshFigures(r);
  EXPECT_EQ(r.figures, nullptr);  // no window, no figures
  r.has_window = true;
  aggregate::WindowStats& st = r.MutableStats();
  st.profile_steps = 2;
  st.total_kernel_ps = 1'000'000'000'000;
  st.devices.resize(1);
  RefreshFigures(r);
  ASSERT_NE(r.figures, nullptr);
  EXPECT_EQ(r.figures->stats, r.stats);
  EXPECT_DOUBLE_EQ(r.figures->time.total_kernel_seconds, 0.5);
  EXPECT_FALSE(r.figures->step_gap);

  const auto before = r.figures;
  RefreshFigures(r);
  EXPECT_EQ(r.figures, before);  // nothing changed: not computed again

  r.step_seconds = 0.8;
  r.step_source = "log";
  RefreshFigures(r);
  ASSERT_NE(r.figures, before);
  ASSERT_TRUE(r.figures->step_gap);
  EXPECT_DOUBLE_EQ(r.figures->step_gap->minus_kernel_seconds, 0.3);

  const auto with_step = r.figures;
  r.MutableStats().total_kernel_ps = 600'000'000'000;
  RefreshFigures(r);
  ASSERT_NE(r.figures, with_step);
  EXPECT_DOUBLE_EQ(r.figures->time.total_kernel_seconds, 0.3);

  r.has_window = false;
  RefreshFigures(r);
  EXPECT_EQ(r.figures, nullptr);
}

}  // namespace
}  // namespace profwatch::snapshot
