// The analysis queue's fairness on a fake clock: owners, then jobs, then runs
// take turns; within a run the longest-waiting window goes first; the oldest
// wait is visible.
#include "window/fair_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace profwatch::window {
namespace {

using std::chrono::seconds;

ShareKey Key(watch::Owner owner, const std::string& job = "j", const std::string& run = "r") {
  return ShareKey{owner, job, run};
}

// Pops everything, returning the serials in service order.
std::vector<uint64_t> Drain(FairQueue& q) {
  std::vector<uint64_t> out;
  while (auto s = q.Pop()) out.push_back(*s);
  return out;
}

// A flood of one owner's windows waiting longer does not hold a window of
// another owner that becomes ready later: it is served second (the first
// pop was already the flood's), and then the owners alternate.
TEST(FairQueueTest, LateOwnerIsServedWithinOneRoundOfAFlood) {
  FakeClock clock;
  FairQueue q;
  for (uint64_t i = 1; i <= 1000; ++i) q.Push(Key(1000, "flood", "run"), i, clock.Now());
  EXPECT_EQ(q.Pop(), 1u);
  clock.Advance(seconds(30));
  q.Push(Key(2000, "victim", "run"), 5000, clock.Now());
  EXPECT_EQ(q.Pop(), 5000u);
  EXPECT_EQ(q.Pop(), 2u);
  EXPECT_EQ(q.size(), 998u);
}

// Owners take turns in uid order, whatever each has waiting, starting with
// the owner of the longest-waiting window.
// A worker goes to the waiting owners holding the fewest workers: owner
// 1000 already holds two and round-robin would serve it next (2000 was
// served last), yet 2000, holding none, is served until it holds as many.
TEST(FairQueueTest, AnOwnerHoldingMoreWorkersWaitsForTheOthersToHoldAsMany) {
  FakeClock clock;
  FairQueue q;
  for (uint64_t i = 1; i <= 4; ++i) q.Push(Key(1000), i, clock.Now());
  for (uint64_t i = 11; i <= 14; ++i) q.Push(Key(2000), i, clock.Now());
  EXPECT_EQ(q.Pop(), 1u);
  EXPECT_EQ(q.Pop(), 11u);  // 2000 served last
  std::map<watch::Owner, int64_t> busy = {{1000, 2}, {2000, 0}};
  EXPECT_EQ(q.Pop(busy), 12u);
  busy[2000] = 1;
  EXPECT_EQ(q.Pop(busy), 13u);
  busy[2000] = 2;  // as many as 1000: turns again, 1000 after 2000
  EXPECT_EQ(q.Pop(busy), 2u);
  // An owner holding workers but with nothing waiting takes no turn.
  busy = {{1000, 0}, {2000, 5}, {3000, 0}};
  EXPECT_EQ(q.Pop(busy), 3u);
  EXPECT_EQ(q.Pop(busy), 4u);
  EXPECT_EQ(q.Pop(busy), 14u);
  EXPECT_EQ(q.Pop(busy), std::nullopt);
}

TEST(FairQueueTest, OwnersAlternateRoundRobin) {
  FakeClock clock;
  FairQueue q;
  uint64_t serial = 1;
  for (watch::Owner owner : {30u, 10u, 20u}) {
    for (int i = 0; i < 3; ++i) {
      q.Push(Key(owner), serial++, clock.Now());
      clock.Advance(seconds(1));
    }
  }
  // Owner 30 queued serials 1-3 first, owner 10 4-6, owner 20 7-9.
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
}

// An owner with many runs (or jobs) gets no more turns than an owner with
// one: shares go by owner first.
TEST(FairQueueTest, ManyRunsOfOneOwnerDoNotOutweighAnotherOwner) {
  FakeClock clock;
  FairQueue q;
  for (uint64_t i = 1; i <= 100; ++i) {
    q.Push(Key(1, "job" + std::to_string(i % 10), "run" + std::to_string(i)), i, clock.Now());
  }
  for (uint64_t i = 101; i <= 110; ++i) q.Push(Key(2, "one", "run"), i, clock.Now());
  std::map<watch::Owner, int> served;
  for (int i = 0; i < 20; ++i) {
    const uint64_t s = *q.Pop();
    ++served[s > 100 ? 2u : 1u];
  }
  EXPECT_EQ(served[1], 10);
  EXPECT_EQ(served[2], 10);
}

// Within an owner, jobs take turns; within a job, runs take turns; within a
// run, the window waiting longest goes first (ties: the lower rank).
TEST(FairQueueTest, JobsThenRunsTakeTurnsWithinAnOwner) {
  FakeClock clock;
  FairQueue q;
  const auto t0 = clock.Now();
  q.Push(Key(7, "a", "r1"), 1, t0);
  q.Push(Key(7, "a", "r1"), 2, t0 + seconds(5));
  q.Push(Key(7, "a", "r2"), 3, t0 + seconds(1));
  q.Push(Key(7, "b", "r1"), 4, t0 + seconds(9));
  q.Push(Key(7, "b", "r1"), 5, t0 + seconds(2), /*rank=*/2);
  q.Push(Key(7, "b", "r1"), 6, t0 + seconds(2), /*rank=*/1);
  // a/r1, b/r1, a/r2, b/r1, a/r1, b/r1.
  EXPECT_EQ(Drain(q), (std::vector<uint64_t>{1, 6, 3, 5, 2, 4}));
}

// The oldest wait follows the fake clock, and what was served or taken out
// no longer counts.
TEST(FairQueueTest, OldestWaitIsTheLongestWaitingWindowsAndFollowsRemovals) {
  FakeClock clock;
  FairQueue q;
  EXPECT_FALSE(q.OldestSince().has_value());
  const auto t0 = clock.Now();
  q.Push(Key(1), 1, t0);
  clock.Advance(seconds(10));
  q.Push(Key(2), 2, clock.Now());
  clock.Advance(seconds(50));
  ASSERT_TRUE(q.OldestSince().has_value());
  EXPECT_EQ(clock.Now() - *q.OldestSince(), seconds(60));
  EXPECT_EQ(q.WaitingByOwner(), (std::map<watch::Owner, size_t>{{1, 1}, {2, 1}}));
  EXPECT_TRUE(q.Remove(1));
  EXPECT_FALSE(q.Remove(1));
  EXPECT_EQ(clock.Now() - *q.OldestSince(), seconds(50));
  EXPECT_EQ(q.Pop(), 2u);
  EXPECT_FALSE(q.OldestSince().has_value());
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.Pop().has_value());
}

// A serial queued twice waits once, from its first push.
TEST(FairQueueTest, PushingAQueuedSerialAgainKeepsItsPlace) {
  FakeClock clock;
  FairQueue q;
  const auto t0 = clock.Now();
  q.Push(Key(1), 1, t0);
  q.Push(Key(1), 1, t0 + seconds(100));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(*q.OldestSince(), t0);
  EXPECT_TRUE(q.Contains(1));
}

// A newly waiting owner after the rotation's current position is served
// before the owners the rotation has passed: no owner waits more than one
// round, whenever it arrives.
TEST(FairQueueTest, EveryOwnerIsServedOncePerRound) {
  FakeClock clock;
  FairQueue q;
  uint64_t serial = 1;
  for (watch::Owner owner = 1; owner <= 5; ++owner) {
    for (int i = 0; i < 4; ++i) q.Push(Key(owner), serial++, clock.Now());
  }
  // Each round of five pops serves each owner exactly once, whoever joins.
  for (int round = 0; round < 4; ++round) {
    std::map<watch::Owner, int> served;
    for (int i = 0; i < 5; ++i) {
      const uint64_t s = *q.Pop();
      ++served[static_cast<watch::Owner>((s - 1) / 4 + 1)];
    }
    EXPECT_EQ(served.size(), 5u) << "round " << round;
  }
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace profwatch::window
