#include "core/budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

namespace profwatch {
namespace {

FileLimits Limits(uint64_t bytes, std::chrono::nanoseconds time) {
  FileLimits l;
  l.max_bytes = bytes;
  l.max_time = time;
  return l;
}

TEST(FileBudgetTest, BytesReadAndSpilledAreEachBoundedAndTheErrorSticks) {
  FileBudget read(Limits(100, std::chrono::nanoseconds(0)));
  EXPECT_TRUE(read.AddRead(60));
  EXPECT_TRUE(read.AddSpill(100));  // a budget of its own
  EXPECT_TRUE(read.AddRead(40));    // exactly the limit is within it
  Status over = read.AddRead(1);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, ErrorCode::kOverBudget);
  EXPECT_NE(over.error().context.find("--file-max-bytes"), std::string::npos);
  EXPECT_TRUE(read.exceeded());
  // Every later call fails with the first error.
  EXPECT_EQ(read.Check().error().context, over.error().context);
  EXPECT_EQ(read.AddSpill(0).error().context, over.error().context);

  FileBudget spill(Limits(100, std::chrono::nanoseconds(0)));
  Status s = spill.AddSpill(101);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().context.find("spill"), std::string::npos) << s.error().context;
}

TEST(FileBudgetTest, TimeAndStopFlagEndTheBudgetZeroMeansNoLimit) {
  FileBudget timed(Limits(0, std::chrono::nanoseconds(1)));
  while (timed.Check()) {
  }  // a nanosecond passes
  EXPECT_NE(timed.Check().error().context.find("--file-max-seconds"), std::string::npos);

  std::atomic<bool> stop{false};
  FileLimits l = Limits(0, std::chrono::nanoseconds(0));
  l.stop = &stop;
  FileBudget budget(l);
  EXPECT_TRUE(budget.AddRead(uint64_t{1} << 62));  // 0: no byte limit
  EXPECT_TRUE(budget.Check());
  stop = true;
  Status s = budget.Check();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kOverBudget);
  EXPECT_NE(s.error().context.find("stopped"), std::string::npos);
}

TEST(FileBudgetTest, OverBudgetIsItsOwnReasonRetriedOnlyOnChange) {
  EXPECT_EQ(ErrorCodeName(ErrorCode::kOverBudget), "over_budget");
  EXPECT_EQ(RetryClassOf(ErrorCode::kOverBudget), RetryClass::kOnChange);
  bool listed = false;
  for (ErrorCode c : kAllErrorCodes) listed |= c == ErrorCode::kOverBudget;
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace profwatch
