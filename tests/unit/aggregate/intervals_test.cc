#include "aggregate/intervals.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace profwatch::aggregate {
namespace {

std::vector<std::pair<int64_t, int64_t>> Pairs(const IntervalList& l) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Interval& i : l.intervals()) out.emplace_back(i.start, i.end);
  return out;
}

// Overlapping kernels of one name stay two intervals: the sweep counts them
// as two kernels running.
TEST(IntervalListTest, OverlappingIntervalsStayApart) {
  IntervalList l;
  l.Add(0, 10);
  l.Add(5, 20);
  l.Add(30, 40);
  l.Sort();
  EXPECT_EQ(Pairs(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 10}, {5, 20}, {30, 40}}));
  EXPECT_EQ(l.Total(), 35);
}

// Touching launches stay two: a region boundary may lie between them.
TEST(IntervalListTest, SortOrdersByStartAndKeepsEveryInterval) {
  IntervalList l;
  l.Add(30, 40);
  l.Add(0, 10);
  l.Add(10, 12);
  l.Add(40, 50);
  l.Add(5, 31);
  l.Sort();
  EXPECT_EQ(Pairs(l), (std::vector<std::pair<int64_t, int64_t>>{
                          {0, 10}, {5, 31}, {10, 12}, {30, 40}, {40, 50}}));
  EXPECT_EQ(l.Total(), 10 + 26 + 2 + 10 + 10);
  l.Sort();  // idempotent
  EXPECT_EQ(l.size(), 5u);
}

TEST(IntervalListTest, EmptyIntervalsAddNothing) {
  IntervalList l;
  l.Add(5, 5);
  l.Add(7, 3);
  l.Sort();
  EXPECT_EQ(l.size(), 0u);
  EXPECT_EQ(l.Total(), 0);
}

TEST(IntervalListTest, IntervalIsSixteenBytes) { EXPECT_EQ(sizeof(Interval), 16u); }

}  // namespace
}  // namespace profwatch::aggregate
