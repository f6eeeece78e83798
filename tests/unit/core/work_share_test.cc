// WorkShare: chores run only while offered, Notify wakes the lender, and
// withdrawing the offer waits for a chore in progress.
#include "core/work_share.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

namespace profwatch {
namespace {

TEST(WorkShareTest, RunsTheOfferedChoreUntilItHasNoWork) {
  WorkShare share;
  EXPECT_FALSE(share.RunOne());  // nothing offered
  int left = 3, done = 0;
  share.Offer([&] {
    if (left == 0) return false;
    --left;
    ++done;
    return true;
  });
  while (share.RunOne()) {
  }
  EXPECT_EQ(done, 3);
  share.Offer({});
  left = 5;
  EXPECT_FALSE(share.RunOne());  // withdrawn
  EXPECT_EQ(done, 3);
}

TEST(WorkShareTest, NotifyAdvancesTheGenerationAndCallsTheWake) {
  WorkShare share;
  int wakes = 0;
  const uint64_t g0 = share.generation();
  share.Notify();  // no wake set: only the generation moves
  EXPECT_EQ(share.generation(), g0 + 1);
  share.SetWake([&] { ++wakes; });
  share.Notify();
  share.Notify();
  EXPECT_EQ(wakes, 2);
  EXPECT_EQ(share.generation(), g0 + 3);
  share.SetWake({});
  share.Notify();
  EXPECT_EQ(wakes, 2);
}

TEST(WorkShareTest, WithdrawingWaitsForTheChoreInProgress) {
  WorkShare share;
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> finished{false};
  share.Offer([&] {
    started.set_value();
    released.wait();
    finished = true;
    return true;
  });
  std::thread lender([&] { EXPECT_TRUE(share.RunOne()); });
  started.get_future().wait();
  // The chore is running: Offer({}) must not return before it finishes.
  std::atomic<bool> withdrawing{false};
  std::atomic<bool> withdrawn{false};
  std::thread withdraw([&] {
    withdrawing = true;
    share.Offer({});
    withdrawn = true;
    EXPECT_TRUE(finished.load());
  });
  // Released only once the withdrawal has begun (so the check above is
  // made against a running chore, not after it), and not yet returned.
  while (!withdrawing.load()) std::this_thread::yield();
  EXPECT_FALSE(withdrawn.load());
  release.set_value();
  withdraw.join();
  lender.join();
  EXPECT_FALSE(share.RunOne());
}

}  // namespace
}  // namespace profwatch
