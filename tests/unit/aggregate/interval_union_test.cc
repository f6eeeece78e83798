#include "aggregate/interval_union.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace profwatch::aggregate {
namespace {

TEST(IntervalListTest, UnionOfOverlappingAndDisjointIntervals) {
  IntervalList l;
  l.Add(0, 10);
  l.Add(5, 20);
  l.Add(30, 40);
  l.Normalize();
  EXPECT_EQ(l.Length(), 30);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l.intervals()[0].end, 20);
}

TEST(IntervalListTest, InOrderAppendsCoalesceImmediately) {
  IntervalList l;
  for (int64_t i = 0; i < 1000; ++i) l.Add(i * 10, i * 10 + 10);  // back to back
  EXPECT_EQ(l.size(), 1u);
  l.Add(20000, 20001);
  EXPECT_EQ(l.size(), 2u);
  l.Normalize();
  EXPECT_EQ(l.Length(), 10001);
}

TEST(IntervalListTest, OutOfOrderAppendsAreSortedAtNormalize) {
  IntervalList l;
  l.Add(30, 40);
  l.Add(0, 10);
  l.Add(35, 50);
  l.Add(5, 31);
  l.Normalize();
  EXPECT_EQ(l.Length(), 50);
  EXPECT_EQ(l.size(), 1u);
}

TEST(IntervalListTest, EmptyIntervalsAddNothing) {
  IntervalList l;
  l.Add(5, 5);
  l.Add(7, 3);
  l.Normalize();
  EXPECT_EQ(l.size(), 0u);
  EXPECT_EQ(l.Length(), 0);
}

TEST(IntervalListTest, IntervalIsSixteenBytes) { EXPECT_EQ(sizeof(Interval), 16u); }

TEST(DifferenceLengthTest, SubtractsCoveredParts) {
  IntervalList a, b;
  a.Add(50, 150);
  a.Add(200, 250);
  b.Add(0, 100);
  b.Add(120, 130);
  b.Add(240, 260);
  a.Normalize();
  b.Normalize();
  // [100,120) + [130,150) + [200,240) = 20 + 20 + 40
  EXPECT_EQ(DifferenceLength(a, b), 80);
  EXPECT_EQ(DifferenceLength(b, a), 50 + 0 + 10);
  IntervalList empty;
  EXPECT_EQ(DifferenceLength(a, empty), 150);
  EXPECT_EQ(DifferenceLength(empty, a), 0);
}

TEST(DifferenceLengthTest, OneBIntervalCoveringSeveralA) {
  IntervalList a, b;
  a.Add(0, 10);
  a.Add(20, 30);
  a.Add(40, 50);
  b.Add(5, 45);
  a.Normalize();
  b.Normalize();
  EXPECT_EQ(DifferenceLength(a, b), 5 + 5);
}

}  // namespace
}  // namespace profwatch::aggregate
