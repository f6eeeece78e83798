// Bytes through the whole analysis (read -> parse -> aggregate -> figures) on
// generated Kineto windows: an operator's bytes once, through the kernels it
// launched, in the family of the kernel that ran them, with their kernels'
// time; an outer operator without kernels (aten::linear over aten::mm) not
// counted; memcpy/memset from CUPTI's own `bytes`, apart from the families;
// a trace without shapes has no bytes, with the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "figures/byte_figures.h"
#include "figures/flop_figures.h"
#include "testing/test_util.h"

namespace profwatch::analysis {
// Named for this file: the unity build compiles it with its neighbours.
namespace bytes_analysis_test {

using testing::TempDir;

struct Op {
  std::string name;
  int64_t external_id;
  std::string dims;   // "" for none
  std::string types;  // "" for none
};
struct Device {
  std::string cat;  // kernel, gpu_memcpy, gpu_memset
  std::string name;
  int64_t external_id;
  int64_t dur_us;
  int64_t bytes = -1;  // args.bytes of a memory operation; -1: none
};

std::string Kineto(const std::vector<Op>& ops, const std::vector<Device>& device) {
  std::string j =
      R"({"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],"traceEvents":[)";
  int64_t ts = 100;
  bool first = true;
  auto sep = [&] {
    if (!first) j += ",";
    first = false;
  };
  for (const Op& o : ops) {
    sep();
    j += R"({"ph":"X","cat":"cpu_op","name":")" + o.name + R"(","pid":1,"tid":1,"ts":)" +
         std::to_string(ts) + R"(,"dur":5,"args":{"External id":)" + std::to_string(o.external_id);
    if (!o.dims.empty()) j += R"(,"Input Dims":)" + o.dims;
    if (!o.types.empty()) j += R"(,"Input type":)" + o.types;
    j += "}}";
    ts += 10;
  }
  for (const Device& k : device) {
    sep();
    j += R"({"ph":"X","cat":")" + k.cat + R"(","name":")" + k.name + R"(","pid":0,"tid":7,"ts":)" +
         std::to_string(ts) + R"(,"dur":)" + std::to_string(k.dur_us) +
         R"(,"args":{"device":0,"stream":7,"External id":)" + std::to_string(k.external_id);
    if (k.bytes >= 0) j += R"(,"bytes":)" + std::to_string(k.bytes);
    j += "}}";
    ts += k.dur_us + 1;
  }
  return j + "]}";
}

aggregate::WindowStats Analyze(const std::string& json, double peak_hbm = 0,
                               const std::string& rules = "auto") {
  TempDir dir;
  const std::string path = dir.Sub("host_1.1000.pt.trace.json.gz");
  testing::WriteFile(path, testing::Gzip(json));
  AnalyzeOptions o;
  o.aggregate.profile_steps_flag = 1;
  o.aggregate.peak_hbm_bandwidth = peak_hbm;
  o.rules = rules;
  auto a = AnalyzeFiles({path}, o);
  EXPECT_TRUE(a) << a.error().ToString();
  return a ? a->stats : aggregate::WindowStats{};
}

const aggregate::ByteStats::Family* FamilyOf(const aggregate::WindowStats& s,
                                             const std::string& family) {
  for (const auto& f : s.bytes.families) {
    if (f.family == family) return &f;
  }
  return nullptr;
}

constexpr const char* kBf16x2 = R"(["c10::BFloat16", "c10::BFloat16"])";

std::vector<Op> Ops() {
  return {
      // linear (10) over mm (11): only mm launched kernels.
      {"aten::linear", 10, "[[16, 32], [64, 32], []]", R"(["c10::BFloat16", "c10::BFloat16", ""])"},
      {"aten::mm", 11, "[[16, 32], [32, 64]]", kBf16x2},
      {"aten::mm", 12, "[[8, 8], [8, 8]]", kBf16x2},  // no kernel: not counted
      {"aten::add", 17, "[[16, 32], [16, 32], []]",
       R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])"}};
}

std::vector<Device> DeviceEvents() {
  return {{"kernel", "sm90_xmma_gemm_bf16", 11, 10},
          {"kernel", "splitk_reduce", 11, 2},
          {"kernel", "elementwise_kernel", 17, 1},
          {"kernel", "elementwise_kernel", 99, 4},  // no operator: no bytes model
          {"gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 5, 2, 131136},
          {"gpu_memset", "Memset (Device)", 6, 1, 4},
          {"gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 7, 1}};  // no bytes arg
}

TEST(BytesAnalysisTest, EachOperatorCountedOnceThroughItsKernels) {
  const aggregate::WindowStats s = Analyze(Kineto(Ops(), DeviceEvents()));
  // mm: (M*K + K*N + M*N) bf16 elements, in the gemm family (its longest
  // kernel), with the time of its gemm kernel only: its splitk_reduce is
  // the reduce family's time (issue #61: counted in gemm, the family's
  // modeled time exceeded its kernel time).
  const aggregate::ByteStats::Family* gemm = FamilyOf(s, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_DOUBLE_EQ(gemm->bytes, (16.0 * 32 + 32 * 64 + 16 * 64) * 2);
  EXPECT_EQ(gemm->kernel_ps, 10'000'000);
  EXPECT_EQ(gemm->memory_bound_ps, 0);
  EXPECT_EQ(FamilyOf(s, "reduce"), nullptr);
  // add: two inputs and the output, bf16; the kernel without an operator
  // has no bytes model.
  double other_bytes = 0;
  int64_t other_ps = 0;
  for (const auto& f : s.bytes.families) {
    if (f.family == "gemm") continue;
    other_bytes += f.bytes;
    other_ps += f.kernel_ps;
  }
  EXPECT_DOUBLE_EQ(other_bytes, 3.0 * 16 * 32 * 2);
  EXPECT_EQ(other_ps, 1'000'000);
  // aten::add's kernel is of a memory-bound kind.
  ASSERT_NE(FamilyOf(s, "elementwise"), nullptr);
  EXPECT_EQ(FamilyOf(s, "elementwise")->memory_bound_ps, 1'000'000);
  EXPECT_EQ(s.bytes.unknown_ops, 0);
  EXPECT_TRUE(s.bytes.absent.empty()) << s.bytes.absent;
  // Memory operations: CUPTI's count where the trace gives one.
  EXPECT_DOUBLE_EQ(s.bytes.memop_bytes, 131136.0 + 4);
  EXPECT_EQ(s.bytes.memops, 2);
  EXPECT_EQ(s.bytes.memop_ps, 3'000'000);
  // The H200's HBM from the device table.
  EXPECT_GT(s.bytes.peak_hbm_bytes_per_second, 0);
  EXPECT_FALSE(s.bytes.peak_hbm_source.empty());
}

TEST(BytesAnalysisTest, FiguresPerFamilyAndCoverage) {
  const aggregate::WindowStats s = Analyze(Kineto(Ops(), DeviceEvents()), 4.8e12);
  EXPECT_EQ(s.bytes.peak_hbm_source, "--peak-hbm-bandwidth");
  const figures::FlopFigures flops = figures::ComputeFlopFigures(s, {});
  const figures::ByteFigures b = figures::ComputeByteFigures(s, flops);
  const double mm_bytes = (16.0 * 32 + 32 * 64 + 16 * 64) * 2, mm_flops = 2.0 * 16 * 32 * 64;
  ASSERT_TRUE(b.bytes_per_gpu_step);
  EXPECT_DOUBLE_EQ(*b.bytes_per_gpu_step, mm_bytes + 3.0 * 16 * 32 * 2);
  // Compute kernel time 17 us, of it 11 us with a bytes model (mm's gemm
  // kernel, add's elementwise kernel).
  ASSERT_TRUE(b.coverage);
  EXPECT_DOUBLE_EQ(*b.coverage, 11.0 / 17.0);
  ASSERT_TRUE(b.memop_bytes_per_gpu_step);
  EXPECT_DOUBLE_EQ(*b.memop_bytes_per_gpu_step, 131140.0);
  ASSERT_TRUE(b.ridge);
  EXPECT_DOUBLE_EQ(*b.ridge, s.flops.peak_per_second / 4.8e12);
  const figures::FamilyByteFigures* gemm = nullptr;
  for (const auto& f : b.families) {
    if (f.family == "gemm") gemm = &f;
  }
  ASSERT_NE(gemm, nullptr);
  ASSERT_TRUE(gemm->achieved_bytes_per_second);
  EXPECT_DOUBLE_EQ(*gemm->achieved_bytes_per_second, mm_bytes / 10e-6);
  ASSERT_TRUE(gemm->arithmetic_intensity);
  EXPECT_DOUBLE_EQ(*gemm->arithmetic_intensity, mm_flops / mm_bytes);
  // 42.7 FLOP/B is below the H200's ridge (about 206): memory-bound, at
  // the achieved bandwidth over the peak.
  ASSERT_TRUE(gemm->roofline_bound);
  EXPECT_EQ(*gemm->roofline_bound, "memory");
  EXPECT_DOUBLE_EQ(*gemm->roofline_fraction, mm_bytes / 10e-6 / 4.8e12);
  // The elementwise family has bytes but no FLOPs: no intensity; its kernels
  // are of a memory-bound kind (issue #61), so it is on the memory roof.
  const figures::FamilyByteFigures* add = nullptr;
  for (const auto& f : b.families) {
    if (f.family == "elementwise") add = &f;
  }
  ASSERT_NE(add, nullptr);
  EXPECT_FALSE(add->arithmetic_intensity);
  ASSERT_TRUE(add->roofline_bound);
  EXPECT_EQ(*add->roofline_bound, "memory");
  EXPECT_DOUBLE_EQ(*add->roofline_fraction, 3.0 * 16 * 32 * 2 / 1e-6 / 4.8e12);
  // Without a known HBM peak, no place on the roof.
  aggregate::WindowStats unknown = s;
  unknown.bytes.peak_hbm_bytes_per_second = 0;
  for (const auto& f : figures::ComputeByteFigures(unknown, flops).families) {
    EXPECT_FALSE(f.roofline_bound) << f.family;
  }
}

// Issue #61: the memory-bound kind is decided per kernel. Inductor's
// pointwise and reduction kernels (triton_poi_, triton_red_, triton_per_)
// are memory-bound, its templates (triton_tem_, a GEMM) are not: the triton
// family is on the memory roof only when all its modeled time is of the
// memory-bound kinds.
TEST(BytesAnalysisTest, TritonFamilyIsMemoryBoundOnlyWithoutTemplates) {
  const std::string f32x2 = R"(["float", "float"])";
  const std::vector<Op> ops = {{"triton_poi_fused_add_0", 21, "[[1024], [1024]]", f32x2},
                               {"triton_red_fused_sum_1", 22, "[[1024], [1]]", f32x2},
                               {"triton_tem_fused_mm_2", 23, "[[64, 64], [64, 64]]", f32x2}};
  const std::vector<Device> poi = {{"kernel", "triton_poi_fused_add_0", 21, 2},
                                   {"kernel", "triton_red_fused_sum_1", 22, 3}};
  std::vector<Device> all = poi;
  all.push_back({"kernel", "triton_tem_fused_mm_2", 23, 5});
  {
    const aggregate::WindowStats s = Analyze(Kineto(ops, poi), 4.8e12, "nvidia");
    const aggregate::ByteStats::Family* t = FamilyOf(s, "triton");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->kernel_ps, 5'000'000);
    EXPECT_EQ(t->memory_bound_ps, 5'000'000);
    const figures::ByteFigures b =
        figures::ComputeByteFigures(s, figures::ComputeFlopFigures(s, {}));
    ASSERT_EQ(b.families.size(), 1u);
    ASSERT_TRUE(b.families[0].roofline_bound);
    EXPECT_EQ(*b.families[0].roofline_bound, "memory");
    const double bytes = 1024.0 * 4 * 2 + (1024.0 + 1) * 4;
    EXPECT_DOUBLE_EQ(*b.families[0].roofline_fraction, bytes / 5e-6 / 4.8e12);
    EXPECT_FALSE(b.families[0].arithmetic_intensity);
  }
  {
    const aggregate::WindowStats s = Analyze(Kineto(ops, all), 4.8e12, "nvidia");
    const aggregate::ByteStats::Family* t = FamilyOf(s, "triton");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->kernel_ps, 10'000'000);
    EXPECT_EQ(t->memory_bound_ps, 5'000'000);
    const figures::ByteFigures b =
        figures::ComputeByteFigures(s, figures::ComputeFlopFigures(s, {}));
    ASSERT_EQ(b.families.size(), 1u);
    EXPECT_TRUE(b.families[0].achieved_bytes_per_second);
    EXPECT_FALSE(b.families[0].roofline_bound);
    EXPECT_FALSE(b.families[0].roofline_fraction);
  }
}

TEST(BytesAnalysisTest, TraceWithoutShapesHasNoBytesAndSaysWhy) {
  std::vector<Op> ops = Ops();
  for (Op& o : ops) o.dims = o.types = "";
  const aggregate::WindowStats s = Analyze(Kineto(ops, DeviceEvents()));
  EXPECT_TRUE(s.bytes.families.empty());
  EXPECT_NE(s.bytes.absent.find("record_shapes=True"), std::string::npos) << s.bytes.absent;
  const figures::ByteFigures b = figures::ComputeByteFigures(s, figures::ComputeFlopFigures(s, {}));
  EXPECT_FALSE(b.bytes_per_gpu_step);
  EXPECT_FALSE(b.coverage);
  EXPECT_EQ(b.note, s.bytes.absent);
  // Memory operations keep CUPTI's count without shapes.
  ASSERT_TRUE(b.memop_bytes_per_gpu_step);
  EXPECT_DOUBLE_EQ(*b.memop_bytes_per_gpu_step, 131140.0);
}

TEST(BytesAnalysisTest, UnusableShapesAreUnknownNotGuessed) {
  std::vector<Op> ops = {{"aten::mm", 11, "[[16, 32], [32, 64]]", R"(["c10::Mystery", "x"])"}};
  const aggregate::WindowStats s =
      Analyze(Kineto(ops, {{"kernel", "sm90_xmma_gemm_bf16", 11, 10}}));
  EXPECT_TRUE(s.bytes.families.empty());
  EXPECT_EQ(s.bytes.unknown_ops, 1);
}

}  // namespace bytes_analysis_test
}  // namespace profwatch::analysis
