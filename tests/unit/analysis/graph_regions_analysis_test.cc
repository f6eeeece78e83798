// Regions inside CUDA graphs through the whole analysis (read -> parse ->
// aggregate), on generated windows: an XSpace whose kernels carry only their
// module (as XLA writes a command buffer's kernels) and whose
// "/host:metadata" plane holds the module's HloProto; its JSON form; the
// JSON alone. Region seconds are the kernel durations written, summed by
// the scope each kernel's launch has in the generated module.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "testing/hostile_hlo.h"
#include "testing/proto_writer.h"
#include "testing/test_util.h"

namespace profwatch::analysis {
// Named for this file: the unity build compiles it with its neighbours.
namespace graph_regions_analysis_test {

using testing::Event;
using testing::HloComputation;
using testing::HloCustomCall;
using testing::HloInstr;
using testing::HloModule;
using testing::HloOperands;
using testing::HloSequence;
using testing::HloShape;
using testing::LenField;
using testing::Line;
using testing::MetadataEntry;
using testing::MetadataPlane;
using testing::Plane;
using testing::Space;
using testing::TempDir;
using testing::VarintField;

constexpr int64_t kPsPerUs = 1'000'000;

// jit_step: fusion a (attention), cuBLAS calls in attention and mlp,
// fusion b (mlp), a cuBLAS call in logits.
std::string StepModule() {
  const std::string fused_a = HloComputation(
      10, {HloInstr(100, "p", "parameter", ""),
           HloInstr(101, "rsqrt", "rsqrt", "jit(step)/jvp(decoder/layer_0)/attention/rsqrt")});
  const std::string fused_b = HloComputation(
      11, {HloInstr(110, "add", "add", "jit(step)/jvp(decoder/layer_0)/mlp/add"),
           HloInstr(111, "mul", "multiply", "jit(step)/jvp(decoder/layer_0)/mlp/mul")});
  const std::string entry = HloComputation(
      1,
      {HloInstr(1, "loop_rsqrt_fusion.2", "fusion", "", {10}),
       HloInstr(2, "custom-call.1", "custom-call",
                "jit(step)/jvp(decoder/layer_0)/attention/dot_general"),
       HloInstr(3, "custom-call.2", "custom-call",
                "jit(step)/jvp(decoder/layer_0)/mlp/dot_general") +
           HloShape({64, 256}) + HloOperands({6, 7}) +
           HloCustomCall("__cublas$lt$matmul",
                         R"({"gemm_backend_config":{"dot_dimension_numbers":{)"
                         R"("lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],)"
                         R"("lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}})"),
       HloInstr(6, "x", "parameter", "") + HloShape({64, 128}),
       HloInstr(7, "w", "parameter", "") + HloShape({128, 256}),
       HloInstr(4, "loop_add_fusion.7", "fusion", "", {11}),
       HloInstr(5, "custom-call.3", "custom-call", "jit(step)/jvp(logits)/dot_general")});
  return HloModule("jit_step", 1, {fused_a, fused_b, entry}, HloSequence(1, {1, 2, 3, 4, 5}));
}

struct K {
  const char* name;
  int64_t dur_us;
};
// Two steps of the graph; XLA names reused kernels with other numbers.
const std::vector<K> kKernels = {
    {"loop_rsqrt_fusion_1", 10}, {"nvjet_attn", 20},   {"nvjet_mlp", 30},
    {"loop_add_fusion", 5},      {"nvjet_logits", 40}, {"loop_rsqrt_fusion_1", 10},
    {"nvjet_attn", 20},          {"nvjet_mlp", 30},    {"loop_add_fusion", 5}};
const std::vector<std::string> kNames = {"loop_rsqrt_fusion_1", "nvjet_attn", "nvjet_mlp",
                                         "loop_add_fusion", "nvjet_logits"};

std::string Xspace() {
  std::string md;
  for (size_t i = 0; i < kNames.size(); ++i)
    md += MetadataEntry(static_cast<int64_t>(i) + 1, kNames[i]);
  // stat_metadata: 7 = hlo_module, 8 = its value (a reference).
  md += LenField(5, VarintField(1, 7) + LenField(2, VarintField(1, 7) + LenField(2, "hlo_module")));
  md += LenField(5, VarintField(1, 8) + LenField(2, VarintField(1, 8) + LenField(2, "jit_step")));
  std::vector<std::string> events;
  int64_t at_us = 0;
  for (const K& k : kKernels) {
    const auto id = std::find(kNames.begin(), kNames.end(), k.name) - kNames.begin() + 1;
    events.push_back(Event(id, at_us * kPsPerUs, k.dur_us * kPsPerUs) +
                     LenField(4, VarintField(1, 7) + VarintField(7, 8)));
    at_us += k.dur_us + 1;
  }
  const std::string device =
      Plane(0, "/device:GPU:0", {Line(7, "Stream #7(Compute)", 1'000'000, events)}, md);
  return Space({device}) + MetadataPlane({StepModule()});
}

std::string Json() {
  std::string j =
      R"j({"displayTimeUnit":"ns","traceEvents":[)j"
      R"j({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)j"
      R"j({"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"Stream #7(Compute)"}})j";
  int64_t at_us = 1000;
  for (const K& k : kKernels) {
    j +=
        R"j(,{"ph":"X","pid":1,"tid":7,"ts":)j" + std::to_string(at_us) + R"j(,"dur":)j" +
        std::to_string(k.dur_us) + R"j(,"name":")j" + k.name +
        R"j(","args":{"hlo_module":"jit_step","hlo_op":"command_buffer_1","tf_op":"XlaModule:"}})j";
    at_us += k.dur_us + 1;
  }
  return j + "]}";
}

const AnalyzeOptions& Options() {
  static const AnalyzeOptions options;
  return options;
}

double RegionSeconds(const aggregate::WindowStats& s, const std::string& region) {
  for (const auto& r : s.regions) {
    if (r.region == region) return s.PerGpuStepSeconds(r.kernel_ps);
  }
  return 0;
}

void ExpectPlaced(const aggregate::WindowStats& s) {
  // Per GPU per step (3 profile steps): attention 2x(10+20), mlp 2x(30+5),
  // logits 40 (the window ends before the second step's logits call).
  EXPECT_NEAR(RegionSeconds(s, "decoder/layer_0/attention"), 60e-6 / 3, 1e-12);
  EXPECT_NEAR(RegionSeconds(s, "decoder/layer_0/mlp"), 70e-6 / 3, 1e-12);
  EXPECT_NEAR(RegionSeconds(s, "logits/dot_general"), 40e-6 / 3, 1e-12);
  EXPECT_NEAR(s.region_coverage, 1.0, 1e-12);
  EXPECT_EQ(s.graph.kernel_ps, 170 * kPsPerUs);
  EXPECT_EQ(s.graph.placed_ps, 170 * kPsPerUs);
  EXPECT_TRUE(s.graph.unplaced.empty()) << s.graph.unplaced;
}

TEST(GraphRegionsAnalysisTest, XSpaceKernelsArePlacedByTheirModulesSchedule) {
  TempDir dir;
  const std::string xplane = dir.Sub("2026_11_26_00_00_00/host.xplane.pb");
  testing::WriteFile(xplane, Xspace());
  auto a = AnalyzeFiles({xplane}, Options());
  ASSERT_TRUE(a) << a.error().ToString();
  ExpectPlaced(a->stats);
}

TEST(GraphRegionsAnalysisTest, JsonKernelsTakeTheSchedulesOfTheProcessXplane) {
  TempDir dir;
  const std::string json = dir.Sub("2026_11_26_00_00_00/host.trace.json.gz");
  const std::string xplane = dir.Sub("2026_11_26_00_00_00/host.xplane.pb");
  testing::WriteFile(json, testing::Gzip(Json()));
  testing::WriteFile(xplane, Xspace());
  auto a = AnalyzeFiles({json, xplane}, Options());
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->format, "json");
  ExpectPlaced(a->stats);
}

// The mlp GEMM (a cuBLAS call on [64,128] x [128,256]) ran twice, paired
// with its kernel each time: 2 x 2*64*128*256 FLOP over its two kernels.
TEST(GraphRegionsAnalysisTest, GemmFlopsComeFromTheCallsShapes) {
  TempDir dir;
  const std::string xplane = dir.Sub("2026_11_26_00_00_00/host.xplane.pb");
  testing::WriteFile(xplane, Xspace());
  auto a = AnalyzeFiles({xplane}, Options());
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_DOUBLE_EQ(a->stats.flops.flops[0], 2 * 2.0 * 64 * 128 * 256);
  EXPECT_EQ(a->stats.flops.kernel_ps[0], 2 * 30 * kPsPerUs);
  EXPECT_EQ(a->stats.flops.unknown_ops, 0);
}

TEST(GraphRegionsAnalysisTest, JsonAloneSaysWhyItsGraphKernelsHaveNoRegion) {
  TempDir dir;
  const std::string json = dir.Sub("2026_11_26_00_00_00/host.trace.json.gz");
  testing::WriteFile(json, testing::Gzip(Json()));
  auto a = AnalyzeFiles({json}, Options());
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_TRUE(a->stats.has_regions);
  EXPECT_TRUE(a->stats.regions.empty());
  EXPECT_EQ(a->stats.region_coverage, 0.0);
  EXPECT_EQ(a->stats.graph.kernel_ps, 170 * kPsPerUs);
  EXPECT_EQ(a->stats.graph.placed_ps, 0);
  EXPECT_NE(a->stats.graph.unplaced.find("no .xplane.pb"), std::string::npos)
      << a->stats.graph.unplaced;
}

TEST(GraphRegionsAnalysisTest, BrokenHloKeepsTheWindowAndSaysWhy) {
  TempDir dir;
  const std::string json = dir.Sub("2026_11_26_00_00_00/host.trace.json.gz");
  const std::string xplane = dir.Sub("2026_11_26_00_00_00/host.xplane.pb");
  testing::WriteFile(json, testing::Gzip(Json()));
  testing::WriteFile(xplane, "\x0a\xff\xff\xff garbage");
  auto a = AnalyzeFiles({json, xplane}, Options());
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->stats.devices.size(), 1u);
  EXPECT_EQ(a->stats.total_kernel_ps, 170 * kPsPerUs);
  EXPECT_EQ(a->stats.graph.placed_ps, 0);
  EXPECT_NE(a->stats.graph.unplaced.find("host.xplane.pb"), std::string::npos)
      << a->stats.graph.unplaced;
}

// The window's module in the xplane beside it is crafted (issue #37): a
// fusion calling itself, 12 nested calls 12 wide, two computations calling
// each other. The window is analysed in bounded time, keeps its kernel
// figures, and its graph kernels say the module was skipped as too complex
// (no regions, no FLOPs from it: absent, not zero).
TEST(GraphRegionsAnalysisTest, HostileModuleIsSkippedAsTooComplexAndTheWindowKept) {
  const std::vector<std::string> hostile = {
      testing::SelfCallingFusionHlo("jit_step"), testing::NestedCallsHlo("jit_step"),
      testing::TwoComputationCycleHlo(/*calls=*/true, "jit_step"),
      testing::TwoComputationCycleHlo(/*calls=*/false, "jit_step")};
  for (const std::string& module : hostile) {
    SCOPED_TRACE(module.size());
    testing::RunWithin(std::chrono::seconds(60), [&] {
      TempDir dir;
      const std::string json = dir.Sub("2026_11_26_00_00_00/host.trace.json.gz");
      const std::string xplane = dir.Sub("2026_11_26_00_00_00/host.xplane.pb");
      testing::WriteFile(json, testing::Gzip(Json()));
      testing::WriteFile(xplane, MetadataPlane({module}));
      auto a = AnalyzeFiles({json, xplane}, Options());
      ASSERT_TRUE(a) << a.error().ToString();
      EXPECT_TRUE(a->errors.empty());
      EXPECT_EQ(a->stats.devices.size(), 1u);
      EXPECT_EQ(a->stats.total_kernel_ps, 170 * kPsPerUs);
      EXPECT_EQ(a->stats.graph.kernel_ps, 170 * kPsPerUs);
      EXPECT_EQ(a->stats.graph.placed_ps, 0);
      EXPECT_EQ(a->stats.graph.unplaced.rfind("module jit_step skipped: too_complex: ", 0), 0u)
          << a->stats.graph.unplaced;
      EXPECT_TRUE(a->stats.regions.empty());
      EXPECT_FALSE(a->stats.flops.Counted());
    });
  }
}

}  // namespace graph_regions_analysis_test
}  // namespace profwatch::analysis
