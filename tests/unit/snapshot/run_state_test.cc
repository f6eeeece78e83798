// RunState's window stats are shared between copies (the daemon's working
// state and every published Snapshot) and never edited in place.
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

}  // namespace
}  // namespace profwatch::snapshot
