// Issue #48: the profile steps of a window, chosen in one place: the flag,
// the window's Kineto ProfilerStep# markers (ranks that disagree flagged),
// the training log, NVTX step ranges, 3.
#include "aggregate/profile_steps.h"

#include <gtest/gtest.h>

namespace profwatch::aggregate {
namespace {

using Source = ProfileStepsSource;

FileSummary File(const std::string& path, parse::TraceSchema schema) {
  FileSummary f;
  f.path = path;
  f.schema = schema;
  return f;
}

// `file`: the index of the window's file the markers are in.
std::vector<StepSpan> Steps(uint32_t file, std::vector<int64_t> numbers) {
  std::vector<StepSpan> out;
  for (int64_t n : numbers) out.push_back(StepSpan{file, n, 1000});
  return out;
}

TEST(ProfileStepsTest, FlagThenMarkersThenLogThenNvtxThenThree) {
  const std::vector<FileSummary> kineto = {File("a.pt.trace.json", parse::TraceSchema::kKineto)};
  // Duplicated markers (cpu and gpu copies) count once.
  const std::vector<StepSpan> two = Steps(0, {7, 8, 7, 8});
  auto c = ChooseProfileSteps(4, 6, kineto, two);
  EXPECT_EQ(c.steps, 4);
  EXPECT_EQ(c.source, Source::kFlag);
  c = ChooseProfileSteps(std::nullopt, 6, kineto, two);
  EXPECT_EQ(c.steps, 2);
  EXPECT_EQ(c.source, Source::kTrace);
  EXPECT_TRUE(c.disagreement.empty());
  c = ChooseProfileSteps(std::nullopt, 6, kineto, {});
  EXPECT_EQ(c.steps, 6);
  EXPECT_EQ(c.source, Source::kLog);
  const std::vector<FileSummary> nsys = {File("n.sqlite", parse::TraceSchema::kNsys)};
  c = ChooseProfileSteps(std::nullopt, std::nullopt, nsys, Steps(0, {10, 11, 12, 13, 10}));
  EXPECT_EQ(c.steps, 4);
  EXPECT_EQ(c.source, Source::kNvtx);
  c = ChooseProfileSteps(std::nullopt, 5, nsys, Steps(0, {10, 11}));
  EXPECT_EQ(c.steps, 5);
  EXPECT_EQ(c.source, Source::kLog);
  // A JAX file's "Steps" line is no Kineto marker; unnumbered spans count for nothing.
  const std::vector<FileSummary> jax = {File("h.xplane.pb", parse::TraceSchema::kXPlane)};
  c = ChooseProfileSteps(std::nullopt, std::nullopt, jax, Steps(0, {1, 2, 3, 4, -1}));
  EXPECT_EQ(c.steps, kDefaultProfileSteps);
  EXPECT_EQ(c.source, Source::kDefault);
  c = ChooseProfileSteps(std::nullopt, std::nullopt, {}, {});
  EXPECT_EQ(c.steps, 3);
  EXPECT_EQ(c.source, Source::kDefault);
  EXPECT_EQ(ChooseProfileSteps(int64_t{1} << 40, std::nullopt, {}, {}).steps, kMaxProfileSteps);
  EXPECT_EQ(ChooseProfileSteps(std::nullopt, 5'000'000'000, {}, {}).steps, kMaxProfileSteps);
  // A log count of 0 is none.
  c = ChooseProfileSteps(std::nullopt, 0, {}, {});
  EXPECT_EQ(c.steps, 3);
  EXPECT_EQ(c.source, Source::kDefault);
}

// --format drill: profile_drill.py's rule, the flag (0 included), else the
// log, else 3, never the window's marks (it passes none).
TEST(ProfileStepsTest, DrillsRuleIsTheFlagThenTheLogThenThree) {
  EXPECT_EQ(ChooseProfileSteps(0, 6, {}, {}).steps, 0);
  EXPECT_EQ(ChooseProfileSteps(std::nullopt, 6, {}, {}).steps, 6);
  EXPECT_EQ(ChooseProfileSteps(std::nullopt, std::nullopt, {}, {}).steps, 3);
}

TEST(ProfileStepsTest, RanksThatDisagreeAreFlaggedAndTheMostCommonCountIsTaken) {
  const std::vector<FileSummary> files = {
      File("r0", parse::TraceSchema::kKineto), File("r1", parse::TraceSchema::kKineto),
      File("r2", parse::TraceSchema::kKineto), File("r3", parse::TraceSchema::kKineto)};
  std::vector<StepSpan> steps = Steps(0, {1, 2});
  for (uint32_t f : {1u, 2u}) {
    for (const StepSpan& s : Steps(f, {1, 2, 3, 4, 5})) steps.push_back(s);
  }
  auto c = ChooseProfileSteps(std::nullopt, std::nullopt, files, steps);
  EXPECT_EQ(c.steps, 5);
  EXPECT_EQ(c.source, Source::kTrace);
  EXPECT_EQ(c.disagreement,
            "Kineto files disagree on their ProfilerStep# markers: 2 files mark 5 steps, 1 file "
            "marks 2 steps, 1 file marks none; 5 taken");
  // A tie goes to the larger count.
  steps = Steps(0, {1, 2});
  for (const StepSpan& s : Steps(2, {1, 2, 3, 4, 5})) steps.push_back(s);
  c = ChooseProfileSteps(std::nullopt, std::nullopt, files, steps);
  EXPECT_EQ(c.steps, 5);
  EXPECT_FALSE(c.disagreement.empty());
}

}  // namespace
}  // namespace profwatch::aggregate
