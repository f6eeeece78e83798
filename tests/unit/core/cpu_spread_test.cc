#include "core/cpu_spread.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace profwatch {
namespace {

cpu_set_t AffinityOfThisThread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return set;
}

TEST(CpuSpreadTest, MovesOffTheGivenCpuAndKeepsTheAffinity) {
  const cpu_set_t before = AffinityOfThisThread();
  if (CPU_COUNT(&before) < 2) GTEST_SKIP() << "needs two CPUs to move between";
  if (sched_setaffinity(0, sizeof before, &before) != 0)
    GTEST_SKIP() << "affinity not settable here";
  // A thread of its own, so the test runner's affinity is never touched.
  std::thread([&] {
    // Retried: the scheduler may move the thread between the two calls.
    int cpu = -1, moved_to = -1;
    for (int tries = 0; tries < 100 && moved_to < 0; ++tries) {
      cpu = CurrentCpu();
      ASSERT_GE(cpu, 0);
      moved_to = MoveOffCpu(cpu);
    }
    ASSERT_GE(moved_to, 0);
    EXPECT_NE(moved_to, cpu);
    EXPECT_TRUE(CPU_ISSET(moved_to, &before));
    cpu_set_t after = AffinityOfThisThread();
    EXPECT_TRUE(CPU_EQUAL(&after, &before));
  }).join();
}

TEST(CpuSpreadTest, StaysWhenOnAnotherCpuOrPinned) {
  const cpu_set_t before = AffinityOfThisThread();
  std::thread([&] {
    // Pinned to its CPU (as under `taskset -c N`): it stays there.
    const int cpu = CurrentCpu();
    ASSERT_GE(cpu, 0);
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET(cpu, &only);
    if (sched_setaffinity(0, sizeof only, &only) != 0) GTEST_SKIP() << "affinity not settable here";
    EXPECT_EQ(MoveOffCpu(cpu), -1);
    // Not on the CPU named, or none named: nothing to do.
    EXPECT_EQ(MoveOffCpu(cpu + 1), -1);
    EXPECT_EQ(MoveOffCpu(-1), -1);
    EXPECT_EQ(CurrentCpu(), cpu);
    cpu_set_t after = AffinityOfThisThread();
    EXPECT_TRUE(CPU_EQUAL(&after, &only));
  }).join();
  cpu_set_t now = AffinityOfThisThread();
  EXPECT_TRUE(CPU_EQUAL(&now, &before));
}

}  // namespace
}  // namespace profwatch
