// PlaceGraphKernels: kernels of a CUDA graph laid over their module's
// schedule. Each rule of graph_regions.h on a schedule written by hand.
#include "aggregate/graph_regions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace profwatch::aggregate {
namespace {

using Kind = parse::HloLaunch::Kind;

// Scopes 0..: attention, attention/dot, mlp/dot, mlp, logits/dot, loop.
parse::HloModuleSchedule Schedule(std::vector<parse::HloLaunch> launches) {
  parse::HloModuleSchedule s;
  s.name = "jit_step";
  s.scopes = {
      "jit(step)/jvp(dec/l0)/attention",       "jit(step)/jvp(dec/l0)/attention/dot_general",
      "jit(step)/jvp(dec/l0)/mlp/dot_general", "jit(step)/jvp(dec/l0)/mlp",
      "jit(step)/jvp(logits)/dot_general",     "jit(step)/while"};
  s.launches = std::move(launches);
  return s;
}
parse::HloLaunch Fusion(std::string base, uint32_t scope) {
  return {Kind::kFusion, std::move(base), scope};
}
parse::HloLaunch Library(uint32_t scope) { return {Kind::kLibrary, "", scope}; }

// One step: a fusion, two library calls of different scopes, a fusion, a
// library call.
parse::HloModuleSchedule OneStep() {
  return Schedule(
      {Fusion("loop_a_fusion", 0), Library(1), Library(2), Fusion("loop_b_fusion", 3), Library(4)});
}

std::vector<std::string> Scopes(const parse::HloModuleSchedule& s, const GraphPlacement& p) {
  std::vector<std::string> out;
  for (int32_t at : p.scope) {
    if (at < 0) {
      out.push_back("-");
    } else if (static_cast<size_t>(at) < s.scopes.size()) {
      out.push_back(s.scopes[static_cast<size_t>(at)]);
    } else {
      out.push_back("shared:" + p.shared_scopes[static_cast<size_t>(at) - s.scopes.size()]);
    }
  }
  return out;
}

TEST(GraphRegionsTest, AnchorsByNameAndOneKernelPerLibraryCallOverSteps) {
  const auto s = OneStep();
  // Two steps; fusion kernels carry another number than their instruction
  // (kernel reuse) and the second step wraps to the schedule's start.
  const std::vector<std::string_view> k = {"loop_a_fusion_3", "nvjet_x", "nvjet_y",
                                           "loop_b_fusion",   "nvjet_z", "loop_a_fusion_3",
                                           "nvjet_x",         "nvjet_y", "loop_b_fusion"};
  const GraphPlacement p = PlaceGraphKernels(s, k);
  EXPECT_EQ(p.anchors, 4u);
  const std::vector<std::string> want = {s.scopes[0], s.scopes[1], s.scopes[2],
                                         s.scopes[3], s.scopes[4], s.scopes[0],
                                         s.scopes[1], s.scopes[2], s.scopes[3]};
  EXPECT_EQ(Scopes(s, p), want);
}

TEST(GraphRegionsTest, MoreKernelsThanCallsShareTheCallsCommonScope) {
  const auto s = OneStep();
  // Three library kernels between a and b: the two calls launched them, but
  // which launched two is unknown: they get what both calls share.
  const std::vector<std::string_view> k = {"loop_a_fusion", "k1", "k2", "k3", "loop_b_fusion"};
  const GraphPlacement p = PlaceGraphKernels(s, k);
  const std::vector<std::string> want = {s.scopes[0], "shared:jit(step)/jvp(dec/l0)",
                                         "shared:jit(step)/jvp(dec/l0)",
                                         "shared:jit(step)/jvp(dec/l0)", s.scopes[3]};
  EXPECT_EQ(Scopes(s, p), want);
}

TEST(GraphRegionsTest, OneCallWithSeveralKernelsGivesThemItsScope) {
  const auto s = OneStep();
  // After b: one call (logits) before the next step's a; its two kernels.
  const std::vector<std::string_view> k = {"loop_b_fusion", "gemm", "splitk_reduce",
                                           "loop_a_fusion"};
  const GraphPlacement p = PlaceGraphKernels(s, k);
  const std::vector<std::string> want = {s.scopes[3], s.scopes[4], s.scopes[4], s.scopes[0]};
  EXPECT_EQ(Scopes(s, p), want);
}

TEST(GraphRegionsTest, EdgesLoopsAndUnknownNamesStayUnplaced) {
  // A loop between a and b: its kernels are not in the order.
  const auto s = Schedule(
      {Fusion("loop_a_fusion", 0), Library(1), {Kind::kOpaque, "", 5}, Fusion("loop_b_fusion", 3)});
  const std::vector<std::string_view> k = {"lead", "loop_a_fusion", "x",
                                           "y",    "loop_b_fusion", "tail"};
  const GraphPlacement p = PlaceGraphKernels(s, k);
  const std::vector<std::string> want = {"-", s.scopes[0], "-", "-", s.scopes[3], "-"};
  EXPECT_EQ(Scopes(s, p), want);
  // No launch between two anchors but a kernel there: nothing to give it.
  const auto tight = Schedule({Fusion("loop_a_fusion", 0), Fusion("loop_b_fusion", 3)});
  const GraphPlacement q = PlaceGraphKernels(tight, {"loop_a_fusion", "odd", "loop_b_fusion"});
  EXPECT_EQ(Scopes(tight, q), (std::vector<std::string>{s.scopes[0], "-", s.scopes[3]}));
  // An empty schedule places nothing.
  const GraphPlacement e = PlaceGraphKernels(Schedule({}), {"loop_a_fusion"});
  EXPECT_EQ(e.scope, std::vector<int32_t>{-1});
}

// Kernels crafted to wrap around a long schedule at every other anchor (x
// is its last fusion, y the one before): each gap would walk the whole
// schedule. The gaps stop at their budget, say so, and the anchors are all
// still placed; a steady capture of many steps stays well within it.
TEST(GraphRegionsTest, GapsThatWrapAroundTheScheduleStopAtTheirBudget) {
  constexpr size_t kLaunches = 2000;
  std::vector<parse::HloLaunch> launches(kLaunches, Library(2));
  launches[kLaunches - 2] = Fusion("loop_y_fusion", 3);
  launches[kLaunches - 1] = Fusion("loop_x_fusion", 0);
  const auto s = Schedule(std::move(launches));
  std::vector<std::string_view> k;
  for (int i = 0; i < 2000; ++i) {
    k.insert(k.end(), {"loop_x_fusion", "nvjet", "loop_y_fusion", "nvjet"});
  }
  const GraphPlacement p = PlaceGraphKernels(s, k);
  EXPECT_TRUE(p.gaps_over_budget);
  EXPECT_LE(p.gap_work, kGapWorkPerItem * (kLaunches + k.size()));
  EXPECT_GT(p.gap_work, 0u);
  EXPECT_EQ(p.anchors, 4000u);

  const auto steady = OneStep();
  std::vector<std::string_view> steps;
  for (int i = 0; i < 1000; ++i) {
    steps.insert(steps.end(), {"loop_a_fusion", "nvjet_x", "nvjet_y", "loop_b_fusion", "nvjet_z"});
  }
  const GraphPlacement q = PlaceGraphKernels(steady, steps);
  EXPECT_FALSE(q.gaps_over_budget);
  EXPECT_EQ(q.gap_work, 3u * 1000 - 1);  // the 3 library calls of each step, the last one's cut
  EXPECT_EQ(Scopes(steady, q)[4994], "jit(step)/jvp(logits)/dot_general");
}

}  // namespace
}  // namespace profwatch::aggregate
