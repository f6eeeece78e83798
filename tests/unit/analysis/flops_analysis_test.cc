// FLOP counting through the whole analysis on generated Kineto windows:
// operators with known shapes linked to their kernels by External id, an
// outer operator (aten::linear over aten::mm) that must not count twice, an
// operator without kernels, garbage shapes, and the device's peak.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aggregate/flops.h"
#include "analysis/analyze.h"
#include "figures/flop_figures.h"
#include "testing/test_util.h"

namespace profwatch::analysis {
// Named for this file: the unity build compiles it with its neighbours.
namespace flops_analysis_test {

using testing::TempDir;

struct Op {
  std::string name;
  int64_t external_id;
  std::string dims;
  std::string concrete;  // "" for none
};
struct Kernel {
  std::string name;
  int64_t external_id;
  int64_t dur_us;
};

std::string Kineto(const std::vector<Op>& ops, const std::vector<Kernel>& kernels,
                   const std::string& device = "NVIDIA H100 80GB HBM3") {
  std::string j = R"({"schemaVersion":1,"deviceProperties":[{"id":0,"name":")" + device +
                  R"("}],"traceEvents":[)";
  int64_t ts = 100;
  bool first = true;
  auto sep = [&] {
    if (!first) j += ",";
    first = false;
  };
  for (const Op& o : ops) {
    sep();
    j += R"({"ph":"X","cat":"cpu_op","name":")" + o.name + R"(","pid":1,"tid":1,"ts":)" +
         std::to_string(ts) + R"(,"dur":5,"args":{"External id":)" + std::to_string(o.external_id) +
         R"(,"Input Dims":)" + o.dims;
    if (!o.concrete.empty()) j += R"(,"Concrete Inputs":)" + o.concrete;
    j += "}}";
    ts += 10;
  }
  for (const Kernel& k : kernels) {
    sep();
    j += R"({"ph":"X","cat":"kernel","name":")" + k.name + R"(","pid":0,"tid":7,"ts":)" +
         std::to_string(ts) + R"(,"dur":)" + std::to_string(k.dur_us) +
         R"(,"args":{"device":0,"stream":7,"External id":)" + std::to_string(k.external_id) + "}}";
    ts += k.dur_us + 1;
  }
  return j + "]}";
}

aggregate::WindowStats Analyze(const std::string& json, double peak = 0) {
  TempDir dir;
  const std::string path = dir.Sub("host_1.1000.pt.trace.json.gz");
  testing::WriteFile(path, testing::Gzip(json));
  AnalyzeOptions o;
  o.aggregate.profile_steps_flag = 1;
  o.aggregate.peak_flops = peak;
  auto a = AnalyzeFiles({path}, o);
  EXPECT_TRUE(a) << a.error().ToString();
  return a ? a->stats : aggregate::WindowStats{};
}

TEST(FlopsAnalysisTest, EachKindCountedOnceThroughItsKernels) {
  const std::string causal =
      R"(["", "", "", "", "", "", "64", "64", "True", "0.", "True", "False", ""])";
  const std::vector<Op> ops = {
      // linear (10) over mm (11): only mm launched kernels.
      {"aten::linear", 10, "[[16, 32], [64, 32], []]", ""},
      {"aten::mm", 11, "[[16, 32], [32, 64]]", ""},
      {"aten::bmm", 12, "[[4, 8, 32], [4, 32, 16]]", ""},
      {"aten::_cudnn_attention_forward", 13,
       "[[2, 4, 64, 32], [2, 4, 64, 32], [2, 4, 64, 32], [], [], [], [], [], [], [], [], [], []]",
       causal},
      {"aten::convolution", 14, "[[2, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], [], [], []]",
       R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])"},
      {"aten::mm", 15, "[[16, 32], [32, 64]]", ""},    // no kernel: not counted
      {"aten::mm", 16, "[[16, -32], [32, 64]]", ""},   // garbage: unknown
      {"aten::add", 17, "[[16, 32], [16, 32]]", ""}};  // not counted at all
  const std::vector<Kernel> kernels = {
      {"sm90_xmma_gemm_bf16", 11, 10},
      {"splitk_reduce", 11, 2},
      {"sm90_xmma_gemm_bf16", 12, 4},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop", 13, 20},
      {"implicit_convolve_sgemm", 14, 6},
      {"sm90_xmma_gemm_bf16", 16, 3},
      {"elementwise_kernel", 17, 1}};
  const aggregate::WindowStats s = Analyze(Kineto(ops, kernels));
  const double mm = 2.0 * 16 * 32 * 64, bmm = 2.0 * 4 * 8 * 32 * 16;
  const double attention = 2.0 * 2 * 4 * 64 * 64 * (32 + 32) / 2;  // causal
  const double conv = 2.0 * 2 * 4 * 3 * 9 * 8 * 8;
  EXPECT_DOUBLE_EQ(s.flops.flops[0], mm + bmm);
  EXPECT_DOUBLE_EQ(s.flops.flops[1], attention);
  EXPECT_DOUBLE_EQ(s.flops.flops[2], conv);
  // Kernel time of the counted operators: 12 + 4 (matmul), 20, 6.
  EXPECT_EQ(s.flops.kernel_ps[0], 16'000'000);
  EXPECT_EQ(s.flops.kernel_ps[1], 20'000'000);
  EXPECT_EQ(s.flops.kernel_ps[2], 6'000'000);
  EXPECT_EQ(s.flops.unknown_ops, 1);
  EXPECT_EQ(s.flops.unknown_kernel_ps, 3'000'000);
  EXPECT_EQ(s.flops.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.flops.peak_per_second, 989.4e12);
  EXPECT_EQ(s.flops.peak_source, "datasheet");
  // By family of each operator's longest kernel.
  double family_flops = 0;
  for (const auto& f : s.flops.families) family_flops += f.flops;
  EXPECT_DOUBLE_EQ(family_flops, mm + bmm + attention + conv);
}

TEST(FlopsAnalysisTest, PeakFlagOverridesAndUnknownDevicesHaveNone) {
  const std::vector<Op> ops = {{"aten::mm", 1, "[[16, 32], [32, 64]]", ""}};
  const std::vector<Kernel> kernels = {{"gemm", 1, 5}};
  const aggregate::WindowStats unknown = Analyze(Kineto(ops, kernels, "Mystery GPU"));
  EXPECT_EQ(unknown.flops.peak_per_second, 0);
  const aggregate::WindowStats given = Analyze(Kineto(ops, kernels, "Mystery GPU"), 5e14);
  EXPECT_EQ(given.flops.peak_per_second, 5e14);
  EXPECT_EQ(given.flops.peak_source, "--peak-flops");
}

TEST(FlopsAnalysisTest, TracesWithoutShapesCountNothing) {
  const std::vector<Op> ops = {};
  const std::vector<Kernel> kernels = {{"gemm", 1, 5}};
  const aggregate::WindowStats s = Analyze(Kineto(ops, kernels));
  EXPECT_FALSE(s.flops.Counted());
  EXPECT_EQ(s.total_kernel_ps, 5'000'000);
}

// Issue #37: operators whose Input Dims claim 1e6 x 1e6 x 1e6 matmuls
// (2e18 FLOP each, in 10 us kernels: 2e23 FLOP/s) made MFU 877,092. Such a
// count is impossible on any device: unknown, with or without a known peak,
// beside a real operator or alone.
TEST(FlopsAnalysisTest, ImpossibleShapesAreUnknown) {
  const std::vector<Op> ops = {{"aten::mm", 1, "[[1000000, 1000000], [1000000, 1000000]]", ""},
                               {"aten::mm", 2, "[[16, 32], [32, 64]]", ""}};
  const std::vector<Kernel> kernels = {{"sm90_xmma_gemm_bf16", 1, 10},
                                       {"sm90_xmma_gemm_bf16", 2, 5}};
  for (const char* device : {"NVIDIA H200", "Mystery GPU"}) {
    SCOPED_TRACE(device);
    const aggregate::WindowStats s = Analyze(Kineto(ops, kernels, device));
    ASSERT_GT(s.flops.Total(), 1e18);  // counted from the shapes as given
    const figures::FlopFigures f = figures::ComputeFlopFigures(s, {0.1, "config"});
    EXPECT_FALSE(f.total_per_gpu_step.has_value());
    EXPECT_FALSE(f.achieved_per_second.has_value());
    EXPECT_FALSE(f.model_per_second.has_value());
    EXPECT_FALSE(f.mfu.has_value());
    EXPECT_NE(f.note.find("impossible count"), std::string::npos) << f.note;
  }
}

}  // namespace flops_analysis_test
}  // namespace profwatch::analysis
