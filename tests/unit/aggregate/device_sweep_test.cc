#include "aggregate/device_sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace profwatch::aggregate {
// Named for this file: the unity build compiles it with its neighbours.
namespace device_sweep_test {

struct K {
  std::string name;
  int64_t start, end;
};

struct Result {
  SweepTotals totals;
  std::map<std::string, int64_t> exclusive, idle_before;  // nonzero entries only
};

// Sweeps `kernels` in start order (equal starts in the given order): the tag
// of a kernel is its name's index in `names`; names starting "nccl" are comm.
Result Sweep(std::vector<K> kernels) {
  std::vector<std::string> names;
  for (const K& k : kernels) {
    if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
  }
  auto tag_of = [&](const std::string& n) {
    return static_cast<uint32_t>(std::find(names.begin(), names.end(), n) - names.begin());
  };
  std::vector<uint8_t> comm;
  for (const auto& n : names) comm.push_back(n.starts_with("nccl") ? 1 : 0);
  DeviceSweep sweep(comm, [&](uint32_t a, uint32_t b) { return names[a] < names[b]; });
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const K& a, const K& b) { return a.start < b.start; });
  for (const K& k : kernels) sweep.Add(k.start, k.end, tag_of(k.name));
  Result r;
  r.totals = sweep.Finish();
  for (size_t t = 0; t < names.size(); ++t) {
    if (sweep.exclusive()[t] != 0) r.exclusive[names[t]] = sweep.exclusive()[t];
    if (sweep.idle_before()[t] != 0) r.idle_before[names[t]] = sweep.idle_before()[t];
  }
  return r;
}

using Times = std::map<std::string, int64_t>;

// Idle gaps only (not overlaps, not the time before the first kernel),
// longest first; equal gaps kept apart.
TEST(DeviceSweepTest, KeepsTheLongestIdleGapsLongestFirst) {
  const Result r = Sweep({{"a", 5, 10},
                          {"b", 8, 12},
                          {"a", 20, 30},
                          {"c", 30, 31},
                          {"a", 34, 40},
                          {"b", 48, 50},
                          {"c", 58, 60}});
  EXPECT_EQ(r.totals.largest_gaps, (std::vector<int64_t>{8, 8, 8, 3}));
  EXPECT_EQ(r.totals.idle, 27);
}

// At most kLargestGaps are kept: the longest ones, whatever their order.
TEST(DeviceSweepTest, KeepsAtMostTheBoundOfGaps) {
  std::vector<K> ks;
  int64_t t = 0;
  std::vector<int64_t> gaps;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; ++i) {
    ks.push_back({"k", t, t + 2});
    const int64_t gap = 1 + static_cast<int64_t>(rng() % 1000);
    gaps.push_back(gap);
    t += 2 + gap;
  }
  ks.push_back({"k", t, t + 2});
  std::sort(gaps.begin(), gaps.end(), std::greater<>());
  gaps.resize(kLargestGaps);
  EXPECT_EQ(Sweep(ks).totals.largest_gaps, gaps);
}

TEST(DeviceSweepTest, OneStreamGapsGoToTheKernelAfterThem) {
  const Result r = Sweep({{"a", 0, 10}, {"b", 15, 20}, {"a", 20, 30}, {"c", 31, 32}});
  EXPECT_EQ(r.exclusive, (Times{{"a", 20}, {"b", 5}, {"c", 1}}));
  EXPECT_EQ(r.idle_before, (Times{{"b", 5}, {"c", 1}}));
  EXPECT_EQ(r.totals.idle, 6);
  EXPECT_EQ(r.totals.overlapped, 0);
  EXPECT_EQ(r.totals.busy, 26);
  EXPECT_EQ(r.totals.exclusive, 26);
}

TEST(DeviceSweepTest, NestedKernelIsNeverAlone) {
  const Result r = Sweep({{"outer", 0, 100}, {"inner", 20, 50}});
  EXPECT_EQ(r.exclusive, (Times{{"outer", 70}}));
  EXPECT_EQ(r.totals.overlapped, 30);
  EXPECT_EQ(r.totals.busy, 100);
  EXPECT_EQ(r.totals.idle, 0);
  EXPECT_TRUE(r.idle_before.empty());
}

TEST(DeviceSweepTest, PartialOverlapSplitsTheEnds) {
  const Result r = Sweep({{"a", 0, 10}, {"b", 5, 15}});
  EXPECT_EQ(r.exclusive, (Times{{"a", 5}, {"b", 5}}));
  EXPECT_EQ(r.totals.overlapped, 5);
  EXPECT_EQ(r.totals.busy, 15);
}

// Two launches of one kernel overlapping on two streams are two kernels.
TEST(DeviceSweepTest, OverlappingLaunchesOfOneNameOverlap) {
  const Result r = Sweep({{"a", 0, 10}, {"a", 5, 15}});
  EXPECT_EQ(r.exclusive, (Times{{"a", 10}}));
  EXPECT_EQ(r.totals.overlapped, 5);
}

TEST(DeviceSweepTest, TiedStartsGiveTheGapToTheSmallestName) {
  for (bool alpha_first : {true, false}) {
    std::vector<K> k = {{"zeta", 0, 10}};
    if (alpha_first) {
      k.push_back({"alpha", 20, 25});
      k.push_back({"beta", 20, 30});
    } else {
      k.push_back({"beta", 20, 30});
      k.push_back({"alpha", 20, 25});
    }
    const Result r = Sweep(k);
    EXPECT_EQ(r.idle_before, (Times{{"alpha", 10}})) << alpha_first;
    EXPECT_EQ(r.exclusive, (Times{{"zeta", 10}, {"beta", 5}})) << alpha_first;
    EXPECT_EQ(r.totals.overlapped, 5);
  }
}

TEST(DeviceSweepTest, ZeroLengthKernelsTakeNoPart) {
  const Result r = Sweep({{"a", 0, 10}, {"z", 12, 12}, {"b", 15, 20}, {"z", 20, 20}});
  EXPECT_EQ(r.idle_before, (Times{{"b", 5}}));
  EXPECT_EQ(r.exclusive, (Times{{"a", 10}, {"b", 5}}));
  EXPECT_EQ(r.totals.idle, 5);
}

TEST(DeviceSweepTest, CommUnderComputeIsHiddenTheRestIsExposed) {
  const Result r = Sweep({{"nccl_allreduce", 0, 10}, {"gemm", 5, 8}, {"gemm", 12, 20}});
  EXPECT_EQ(r.totals.compute_busy, 11);
  EXPECT_EQ(r.totals.exposed_comm, 7);
  EXPECT_EQ(r.totals.busy, 18);
  EXPECT_EQ(r.totals.idle, 2);
  EXPECT_EQ(r.idle_before, (Times{{"gemm", 2}}));
}

TEST(DeviceSweepTest, NoKernelsNoTime) {
  const Result r = Sweep({});
  EXPECT_EQ(r.totals.busy, 0);
  EXPECT_EQ(r.totals.idle, 0);
}

// Random kernels on integer times against counting every time unit.
TEST(DeviceSweepTest, MatchesCountingEveryTimeUnit) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> pool = {"a", "b", "c", "nccl_x", "nccl_y", "d"};
  for (int round = 0; round < 300; ++round) {
    std::vector<K> ks;
    const size_t n = rng() % 12;
    for (size_t i = 0; i < n; ++i) {
      const int64_t s = static_cast<int64_t>(rng() % 60);
      const int64_t len = static_cast<int64_t>(rng() % 15);  // zero-length sometimes
      ks.push_back({pool[rng() % pool.size()], s, s + len});
    }
    std::shuffle(ks.begin(), ks.end(), rng);
    const Result got = Sweep(ks);

    SweepTotals want;
    Times excl, before;
    int64_t lo = 1000, hi = -1;
    for (const K& k : ks) {
      if (k.end <= k.start) continue;
      lo = std::min(lo, k.start);
      hi = std::max(hi, k.end);
    }
    int64_t gap = 0;
    for (int64_t t = lo; t < hi; ++t) {
      int running = 0, compute = 0, comm = 0;
      const K* only = nullptr;
      for (const K& k : ks) {
        if (k.start <= t && t < k.end) {
          ++running;
          ++(k.name.starts_with("nccl") ? comm : compute);
          only = &k;
        }
      }
      if (running == 0) {
        ++want.idle;
        ++gap;
        continue;
      }
      if (gap > 0) {  // the gap ended at t: the smallest name starting at t
        std::string owner;
        for (const K& k : ks) {
          if (k.start == t && k.end > k.start && (owner.empty() || k.name < owner)) owner = k.name;
        }
        before[owner] += gap;
        gap = 0;
      }
      ++want.busy;
      if (running == 1) {
        ++want.exclusive;
        ++excl[only->name];
      } else {
        ++want.overlapped;
      }
      if (compute > 0) {
        ++want.compute_busy;
      } else {
        ++want.exposed_comm;
      }
    }
    EXPECT_EQ(got.totals.busy, want.busy) << round;
    EXPECT_EQ(got.totals.exclusive, want.exclusive) << round;
    EXPECT_EQ(got.totals.overlapped, want.overlapped) << round;
    EXPECT_EQ(got.totals.idle, want.idle) << round;
    EXPECT_EQ(got.totals.compute_busy, want.compute_busy) << round;
    EXPECT_EQ(got.totals.exposed_comm, want.exposed_comm) << round;
    EXPECT_EQ(got.exclusive, excl) << round;
    EXPECT_EQ(got.idle_before, before) << round;
  }
}

}  // namespace device_sweep_test
}  // namespace profwatch::aggregate
