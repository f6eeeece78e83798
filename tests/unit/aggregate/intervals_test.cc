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

TEST(IntervalListTest, TouchingInOrderAppendsAreJoined) {
  IntervalList l;
  for (int64_t i = 0; i < 1000; ++i) l.Add(i * 10, i * 10 + 10);  // back to back
  EXPECT_EQ(l.size(), 1u);
  l.Add(20000, 20001);
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(l.Total(), 10001);
}

TEST(IntervalListTest, SortOrdersByStartAndJoinsTouchingNeighbours) {
  IntervalList l;
  l.Add(30, 40);
  l.Add(0, 10);
  l.Add(10, 12);  // touches [0,10): joined at once
  l.Add(40, 50);  // touches [30,40) only after sorting
  l.Add(5, 31);
  l.Sort();
  EXPECT_EQ(Pairs(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 12}, {5, 31}, {30, 50}}));
  EXPECT_EQ(l.Total(), 12 + 26 + 20);
  l.Sort();  // idempotent
  EXPECT_EQ(l.size(), 3u);
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
