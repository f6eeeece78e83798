// A window's collective figures (figures/collective_figures.h): per GPU per
// step over the divisor, the raw sums only where their bandwidth exists,
// the dominant exposed kind, and the process-group phrase.
#include "figures/collective_figures.h"

#include <gtest/gtest.h>

namespace profwatch::figures {
namespace {

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

}  // namespace
}  // namespace profwatch::figures
