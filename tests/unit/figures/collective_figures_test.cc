// A window's collective figures (figures/collective_figures.h): per GPU per
// step over the divisor, the raw sums only where their bandwidth exists,
// the dominant exposed kind, and the process-group phrase.
#include "figures/collective_figures.h"

#include <gtest/gtest.h>

namespace profwatch::figures {
// Named for this file: the unity build compiles it with its neighbours.
namespace collective_figures_test {

using aggregate::CollectiveKind;
using K = CollectiveKind;

constexpr int64_t kMs = 1'000'000'000;  // picoseconds

TEST(CollectiveFiguresTest, PerGpuStepRawSumsAndAbsentBandwidth) {
  aggregate::CollectiveStats stats;
  aggregate::CollectiveSums& ar = stats[K::kAllReduce];
  ar.calls = 12;
  ar.kernel_ps = 120 * kMs;
  ar.exposed_ps = 30 * kMs;
  for (int i = 0; i < 12; ++i) ar.AddSized(K::kAllReduce, 1'000'000, 4, 10 * kMs);
  aggregate::CollectiveSums& other = stats[K::kOther];
  other.calls = 6;
  other.kernel_ps = 60 * kMs;
  other.exposed_ps = 60 * kMs;

  const std::vector<CollectiveFigures> f = ComputeCollectiveFigures(stats, 6);  // 2 GPUs x 3
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, K::kAllReduce);
  EXPECT_DOUBLE_EQ(f[0].calls_per_gpu_step, 2.0);
  EXPECT_DOUBLE_EQ(f[0].kernel_seconds_per_gpu_step, 0.02);
  EXPECT_DOUBLE_EQ(f[0].exposed_seconds_per_gpu_step, 0.005);
  EXPECT_DOUBLE_EQ(*f[0].bytes_per_gpu_step, 2e6);
  EXPECT_DOUBLE_EQ(*f[0].alg_bandwidth, 1e8);  // 1 MB in 10 ms
  EXPECT_DOUBLE_EQ(*f[0].bus_bandwidth, 1.5e8);
  EXPECT_DOUBLE_EQ(f[0].raw_kernel_seconds, 0.12);
  EXPECT_DOUBLE_EQ(f[0].raw_exposed_seconds, 0.03);
  EXPECT_DOUBLE_EQ(*f[0].raw_sized_bytes, 12e6);
  EXPECT_DOUBLE_EQ(*f[0].raw_sized_seconds, 0.12);
  EXPECT_DOUBLE_EQ(*f[0].raw_bus_bytes, 18e6);
  EXPECT_DOUBLE_EQ(*f[0].raw_bus_seconds, 0.12);
  EXPECT_TRUE(f[0].note.empty()) << f[0].note;
  // `other` has no sizes: bytes, bandwidths and their raw sums absent, with why.
  EXPECT_EQ(f[1].kind, K::kOther);
  EXPECT_FALSE(f[1].bytes_per_gpu_step || f[1].alg_bandwidth || f[1].bus_bandwidth);
  EXPECT_FALSE(f[1].raw_sized_bytes || f[1].raw_sized_seconds);
  EXPECT_FALSE(f[1].raw_bus_bytes || f[1].raw_bus_seconds);
  EXPECT_DOUBLE_EQ(f[1].raw_kernel_seconds, 0.06);
  EXPECT_FALSE(f[1].note.empty());

  // The kind with the most exposed time: other (0.01 s per GPU per step).
  EXPECT_EQ(DominantExposedCollective(f), std::optional<size_t>(1));
  // No GPUs: nothing per GPU per step.
  EXPECT_TRUE(ComputeCollectiveFigures(stats, 0).empty());
}

TEST(CollectiveFiguresTest, NoExposedTimeHasNoDominantKind) {
  std::vector<CollectiveFigures> f(2);
  EXPECT_EQ(DominantExposedCollective(f), std::nullopt);
  f[1].exposed_seconds_per_gpu_step = 0.1;
  f[0].exposed_seconds_per_gpu_step = 0.1;
  EXPECT_EQ(DominantExposedCollective(f), std::optional<size_t>(0));  // the first of equals
}

TEST(CollectiveFiguresTest, ProcessGroupPhraseNamesTheTracesGroups) {
  CollectiveFigures f;
  EXPECT_EQ(ProcessGroupPhrase(f), "");
  f.process_groups = {{"fsdp", "[0, 1]"}};
  EXPECT_EQ(ProcessGroupPhrase(f), ", process group 'fsdp'");
  f.process_groups.push_back({"tp", ""});
  f.more_process_groups = true;
  EXPECT_EQ(ProcessGroupPhrase(f), ", process groups 'fsdp', 'tp', ...");
}

// Sizes are the trace's word (issue 47). A call claiming more than any GPU
// holds is unknown, counted and named in the note; the other calls keep
// theirs. A kind whose sized calls claim a rate no GPU memory reaches has
// no bytes or bandwidth, with a note; at the bound it is believed.
TEST(CollectiveFiguresTest, ImpossibleSizesAndRatesAreUnknownWithANote) {
  const int64_t ms = 1'000'000'000;  // picoseconds
  aggregate::CollectiveStats st;
  aggregate::CollectiveSums& ar = st[K::kAllReduce];
  ar.calls = 2;
  ar.kernel_ps = 2 * ms;
  ar.AddSized(K::kAllReduce, int64_t{1} << 61, 8, ms);  // 2^59 floats
  EXPECT_EQ(ar.sized_calls, 0);
  EXPECT_EQ(ar.oversized_calls, 1);
  EXPECT_EQ(ar.AlgBandwidth(), std::nullopt);
  std::vector<CollectiveFigures> f = ComputeCollectiveFigures(st, 1);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].bytes_per_gpu_step, std::nullopt);
  EXPECT_EQ(f[0].bus_bandwidth, std::nullopt);
  EXPECT_EQ(f[0].note,
            "1 calls claimed more than 1 TiB each, more than any GPU holds: impossible sizes, "
            "not counted");
  ar.AddSized(K::kAllReduce, 1'000'000, 8, ms);  // 1 MB in 1 ms: believed
  f = ComputeCollectiveFigures(st, 1);
  EXPECT_DOUBLE_EQ(*f[0].alg_bandwidth, 1e9);
  EXPECT_EQ(f[0].note,
            "bytes and bandwidth over the 1 of 2 calls that carried their size (1 calls claimed "
            "more than 1 TiB each, more than any GPU holds: impossible sizes, not counted)");

  aggregate::CollectiveStats fast;  // 1e12 B in 1 ms: 1e15 B/s
  aggregate::CollectiveSums& ag = fast[K::kAllGather];
  ag.calls = 1;
  ag.kernel_ps = ms;
  ag.AddSized(K::kAllGather, 1'000'000'000'000, 8, ms);
  EXPECT_DOUBLE_EQ(*ag.AlgBandwidth(), 1e15);  // the raw sums keep it
  f = ComputeCollectiveFigures(fast, 1);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].bytes_per_gpu_step, std::nullopt);
  EXPECT_EQ(f[0].alg_bandwidth, std::nullopt);
  EXPECT_EQ(f[0].bus_bandwidth, std::nullopt);
  EXPECT_EQ(f[0].note,
            "impossible sizes: the sized calls claim 1e+15 B/s over their kernels, above the "
            "1e13 B/s no GPU's memory reaches (a collective's bytes cross it at least once): "
            "bytes and bandwidth unknown");

  aggregate::CollectiveStats edge;  // exactly the bound (send_recv: busbw = algbw)
  aggregate::CollectiveSums& sr = edge[K::kSendRecv];
  sr.calls = 1;
  sr.kernel_ps = ms;
  sr.AddSized(K::kSendRecv, 10'000'000'000, 2, ms);
  f = ComputeCollectiveFigures(edge, 1);
  EXPECT_DOUBLE_EQ(*f[0].bus_bandwidth, aggregate::kMaxCollectiveBandwidth);
  EXPECT_TRUE(f[0].note.empty()) << f[0].note;

  aggregate::CollectiveSums merged;  // merging keeps the count
  merged.Merge(ar);
  merged.Merge(ar);
  EXPECT_EQ(merged.oversized_calls, 2);
}

}  // namespace collective_figures_test
}  // namespace profwatch::figures
