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

// SortByStart against std::sort: the same intervals, starts in order. Sizes
// on both sides of the comparison-sort cut-over, starts from a narrow range
// (many ties) to the whole int64 range (offsets past 2^63).
TEST(SortByStartTest, SortsLikeAComparisonSort) {
  std::mt19937_64 rng(11);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Shape {
    size_t n;
    int64_t lo, hi;
  };
  const Shape shapes[] = {{0, 0, 10},
                          {1, -5, 5},
                          {2047, 0, 1 << 20},
                          {2048, 0, 1 << 20},
                          {5000, 0, 3},
                          {5000, -1000000, 1000000},
                          {6000, 0, int64_t{6} << 40},  // a 1e5 trace's picoseconds
                          {7000, kMin, kMax},
                          {3000, 42, 42}};
  std::vector<Interval> scratch;
  for (const Shape& shape : shapes) {
    std::uniform_int_distribution<int64_t> start(shape.lo, shape.hi);
    std::vector<Interval> v(shape.n);
    for (size_t i = 0; i < v.size(); ++i) v[i] = {start(rng), static_cast<int64_t>(i)};
    if (shape.n > 2 && shape.lo == kMin) {
      v[0].start = kMax;
      v[1].start = kMin;
    }
    std::vector<Interval> expected = v;
    auto by_start_then_end = [](const Interval& a, const Interval& b) {
      return a.start != b.start ? a.start < b.start : a.end < b.end;
    };
    std::sort(expected.begin(), expected.end(), by_start_then_end);
    SortByStart(v, scratch);
    ASSERT_EQ(v.size(), expected.size());
    EXPECT_TRUE(std::is_sorted(
        v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; }))
        << "n=" << shape.n << " range [" << shape.lo << ", " << shape.hi << "]";
    // Equal starts may come in any order: compare as sorted multisets.
    std::sort(v.begin(), v.end(), by_start_then_end);
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(v[i].start, expected[i].start) << "n=" << shape.n << " at " << i;
      ASSERT_EQ(v[i].end, expected[i].end) << "n=" << shape.n << " at " << i;
    }
  }
}

}  // namespace
}  // namespace profwatch::aggregate
