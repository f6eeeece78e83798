// FLOP formulas of PyTorch operators (flops.h): each counted operator on
// shapes with a known answer, garbage shapes as unknown, the peak table (the
// per-window figures: figures/flop_figures_test.cc).
#include "aggregate/flops.h"

#include <gtest/gtest.h>

#include <string>

#include "parse/hlo_schedule.h"
#include "parse/op_shape_reader.h"
#include "testing/proto_writer.h"
#include "testing/real_hlo.h"
#include "testing/test_util.h"

namespace profwatch::aggregate {
namespace {

// An operator's FLOPs from its args as Kineto writes them (the JSON arrays
// a TraceEvent carries), decoded by parse's reader as the aggregator does.
std::optional<OpFlops> FromJson(std::string_view op, std::string_view dims,
                                std::string_view concrete) {
  parse::OpShapeReader reader;
  return TorchOpFlops(op, reader.Read(dims, concrete));
}

int64_t Flops(std::string_view op, std::string_view dims, std::string_view concrete = "") {
  auto f = FromJson(op, dims, concrete);
  EXPECT_TRUE(f.has_value()) << op;
  if (!f) return -1;
  EXPECT_TRUE(f->known) << op << " " << dims;
  return f->known ? f->flops : -1;
}

bool Unknown(std::string_view op, std::string_view dims, std::string_view concrete = "") {
  auto f = FromJson(op, dims, concrete);
  return f.has_value() && !f->known;
}

TEST(FlopsTest, Matmuls) {
  // The H200 fixture's LM head: [32000,16384] x [16384,2048].
  EXPECT_EQ(Flops("aten::mm", "[[32000, 16384], [16384, 2048]]"),
            int64_t{2} * 32000 * 16384 * 2048);
  EXPECT_EQ(Flops("aten::addmm", "[[64], [8, 32], [32, 64], [], []]"), 2 * 8 * 32 * 64);
  EXPECT_EQ(Flops("aten::bmm", "[[4, 8, 32], [4, 32, 16]]"), 2 * 4 * 8 * 32 * 16);
  EXPECT_EQ(Flops("aten::baddbmm", "[[4, 8, 16], [4, 8, 32], [4, 32, 16], [], []]"),
            2 * 4 * 8 * 32 * 16);
  // linear: input [2, 5, 32] and weight [64, 32]: 10 rows.
  EXPECT_EQ(Flops("aten::linear", "[[2, 5, 32], [64, 32], [64]]"), 2 * 10 * 32 * 64);
  // matmul broadcasts batch dims: [3, 1, 8, 32] x [5, 32, 16] -> batch 15.
  EXPECT_EQ(Flops("aten::matmul", "[[3, 1, 8, 32], [5, 32, 16]]"), 2 * 15 * 8 * 32 * 16);
  EXPECT_EQ(Flops("aten::matmul", "[[32], [32, 16]]"), 2 * 32 * 16);  // vector x matrix
  const auto kind = FromJson("aten::mm", "[[2, 3], [3, 4]]", "");
  ASSERT_TRUE(kind);
  EXPECT_EQ(kind->kind, FlopKind::kMatmul);
}

TEST(FlopsTest, AttentionForwardBackwardAndCausal) {
  // q, k, v [B=8, H=16, S=2048, D=128], the fixture's cuDNN attention.
  const std::string qkv = "[[8, 16, 2048, 128], [8, 16, 2048, 128], [8, 16, 2048, 128]";
  const int64_t full = int64_t{2} * 8 * 16 * 2048 * 2048 * (128 + 128);
  // _cudnn_attention_forward: is_causal is concrete input 10.
  const std::string fwd = qkv + ", [], [], [], [], [], [], [], [], [], []]";
  const std::string causal =
      R"(["", "", "", "", "", "", "2048", "2048", "True", "0.", "True", "False", ""])";
  const std::string dense =
      R"(["", "", "", "", "", "", "2048", "2048", "True", "0.", "False", "False", ""])";
  EXPECT_EQ(Flops("aten::_cudnn_attention_forward", fwd, causal), full / 2);
  EXPECT_EQ(Flops("aten::_cudnn_attention_forward", fwd, dense), full);
  // Backward: grad_out first, then q, k, v; 2.5x the forward; is_causal 14.
  const std::string bwd = "[[8, 16, 2048, 128], " + qkv.substr(1) + ", [8, 16, 2048, 128]]";
  const std::string bcausal =
      R"(["", "", "", "", "", "", "", "", "", "", "", "2048", "2048", "0.", "True", ""])";
  EXPECT_EQ(Flops("aten::_cudnn_attention_backward", bwd, bcausal), full * 5 / 2 / 2);
  // The flash SDPA: (q, k, v, dropout_p, is_causal, ...).
  EXPECT_EQ(Flops("aten::_scaled_dot_product_flash_attention", qkv + "]",
                  R"(["", "", "", "0.", "False", "False", ""])"),
            full);
  const auto a = FromJson("aten::_cudnn_attention_forward", fwd, causal);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, FlopKind::kAttention);
  // Without the causal flag it is not guessed.
  EXPECT_TRUE(Unknown("aten::_cudnn_attention_forward", fwd, "[]"));
}

TEST(FlopsTest, Convolutions) {
  // input [2, 3, 32, 32], weight [16, 3, 3, 3], stride 1, padding 1: 32x32 out.
  const std::string dims = "[[2, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], [], [], []]";
  EXPECT_EQ(Flops("aten::convolution", dims,
                  R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])"),
            int64_t{2} * 2 * 16 * 3 * 9 * 32 * 32);
  // Stride 2, no padding: (32 - 3) / 2 + 1 = 15.
  EXPECT_EQ(Flops("aten::convolution", dims,
                  R"(["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"])"),
            int64_t{2} * 2 * 16 * 3 * 9 * 15 * 15);
  // cudnn_convolution (self, weight, padding, stride, dilation, groups, ...),
  // depthwise: groups 4, weight [4, 1, 3, 3] on 4 channels.
  EXPECT_EQ(Flops("aten::cudnn_convolution", "[[1, 4, 8, 8], [4, 1, 3, 3], [], [], [], []]",
                  R"(["", "", "[1, 1]", "[1, 1]", "[1, 1]", "4", "False", "False", "True"])"),
            int64_t{2} * 1 * 4 * 1 * 9 * 8 * 8);
  // Transposed convolutions are not counted.
  EXPECT_TRUE(Unknown("aten::convolution", dims,
                      R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"])"));
}

TEST(FlopsTest, GarbageShapesAreUnknownNeverACrash) {
  EXPECT_TRUE(Unknown("aten::mm", ""));                                    // missing
  EXPECT_TRUE(Unknown("aten::mm", "[[2, -3], [-3, 4]]"));                  // negative
  EXPECT_TRUE(Unknown("aten::mm", "[[2, 3], [4, 5]]"));                    // K mismatch
  EXPECT_TRUE(Unknown("aten::mm", "[[9223372036854775807, 2], [2, 2]]"));  // overflow
  EXPECT_TRUE(Unknown("aten::mm", "[[99999999999999999999, 2], [2, 2]]"));
  EXPECT_TRUE(Unknown("aten::mm", "[[2, 3]]"));           // one input
  EXPECT_TRUE(Unknown("aten::bmm", "[[2, 3], [3, 4]]"));  // wrong rank
  EXPECT_TRUE(Unknown("aten::mm", "{\"a\": 1}"));
  EXPECT_TRUE(Unknown("aten::mm", "[[2, 3], [3, 4"));  // cut
  EXPECT_TRUE(Unknown("aten::mm", "[[2.5, 3], [3, 4]]"));
  EXPECT_TRUE(Unknown("aten::linear", "[[], [64, 32]]"));
  EXPECT_TRUE(Unknown("aten::_cudnn_attention_forward", "[[8, 16, 2048], [8], [8]]", "[]"));
  EXPECT_TRUE(Unknown("aten::convolution", "[[2, 3, 32, 32], [16, 3, 3, 3]]", "[\"\", 7]"));
  EXPECT_FALSE(FromJson("aten::add", "[[2, 3], [2, 3]]", "").has_value());  // not counted
  EXPECT_FALSE(FromJson("aten::mm_", "[[2, 3], [3, 4]]", "").has_value());
}

// HLO launches from their shapes (HloScheduleTest.LaunchShapesFromShapesAndConfigs
// reads the same module): the formulas Kineto's operators use.
TEST(FlopsTest, HloLaunchFlops) {
  auto m = parse::DecodeHloProto(testing::FlopShapesHlo());
  ASSERT_TRUE(m) << m.error().ToString();
  ASSERT_EQ(m->launches.size(), 6u);
  EXPECT_EQ(HloLaunchFlops(m->launches[0]), 2 * 4 * 8 * 16 * 32);
  EXPECT_EQ(HloLaunchFlops(m->launches[1]), 2 * 8 * 32 * 16);
  EXPECT_EQ(HloLaunchFlops(m->launches[2]), std::nullopt);
  const int64_t attention = int64_t{2} * 2 * 4 * 64 * 64 * (32 + 32) / 2;  // causal
  EXPECT_EQ(HloLaunchFlops(m->launches[3]), attention);
  EXPECT_EQ(HloLaunchFlops(m->launches[4]), attention * 5 / 2);
  EXPECT_EQ(HloLaunchFlops(m->launches[5]), std::nullopt);  // no value operand
  // A dot run 12^12 times per execution (a fusion's nested computations).
  parse::HloLaunch wide;
  wide.flop_kind = parse::HloLaunch::Flops::kMatmul;
  int64_t paths = 1;
  for (int i = 0; i < 12; ++i) paths *= 12;
  wide.dots.push_back({parse::DotShape{{2, 2}, {2, 2}, {1}, {0}, {}, {}}, paths});
  EXPECT_EQ(HloLaunchFlops(wide), paths * 16);
  wide.dots[0].count = int64_t{1} << 62;  // overflows: unknown, never wrapped
  EXPECT_EQ(HloLaunchFlops(wide), std::nullopt);
  // Dimension numbers that do not fit the shapes.
  EXPECT_EQ(DotFlops({{4, 8}, {8, 2}, {1}, {0, 1}, {}, {}}), std::nullopt);
  EXPECT_EQ(DotFlops({{4, 8}, {8, 2}, {2}, {0}, {}, {}}), std::nullopt);
  EXPECT_EQ(DotFlops({{4, 8}, {8, 2}, {1}, {0}, {1}, {}}), std::nullopt);  // given twice
}

// The real command-buffer capture's train step (HloScheduleTest reads its
// schedule): its dots are the model's 6*B*S*(L*(4D^2+2DF)+D*V) =
// 26,233,660,243,968 FLOP (fixtures README); the causal cuDNN attention 4
// layers x (forward + 2.5x backward) x 2*B*H*S*S*(D+Dv)/2 with B=8, H=16,
// S=2048, D=Dv=128.
TEST(FlopsTest, RealJaxModuleFlops) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, testing::kRealCommandBufferXplane);
  auto index = testing::ReadHloModulesOf(path);
  ASSERT_TRUE(index) << index.error().ToString();
  const parse::HloModuleSchedule* m = index->Find("jit_train_step");
  ASSERT_NE(m, nullptr);
  int64_t matmul = 0, attention = 0;
  for (const parse::HloLaunch& l : m->launches) {
    const auto f = HloLaunchFlops(l);
    ASSERT_TRUE(f);
    if (l.flop_kind == parse::HloLaunch::Flops::kMatmul) matmul += *f;
    if (l.flop_kind == parse::HloLaunch::Flops::kAttention) attention += *f;
  }
  EXPECT_EQ(matmul, 26'233'660'243'968);
  EXPECT_EQ(attention, int64_t{4} * 7 / 2 * 2 * 8 * 16 * 2048 * 2048 * 256 / 2);
}

TEST(FlopsTest, DensePeaksByDeviceName) {
  EXPECT_EQ(DensePeakFlops("NVIDIA H200"), 989.4e12);
  EXPECT_EQ(DensePeakFlops("NVIDIA H100 80GB HBM3"), 989.4e12);
  EXPECT_EQ(DensePeakFlops("NVIDIA H100 PCIe"), 756e12);
  EXPECT_EQ(DensePeakFlops("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_EQ(DensePeakFlops("NVIDIA B200"), 2250e12);
  EXPECT_EQ(DensePeakFlops("Tesla V100-SXM2-32GB"), 125e12);
  EXPECT_EQ(DensePeakFlops("AMD Instinct MI300X"), 1307.4e12);
  EXPECT_FALSE(DensePeakFlops("NVIDIA GeForce RTX 4090").has_value());
  EXPECT_FALSE(DensePeakFlops("").has_value());
}

// The formula behind ImpossibleCountIsUnknown (figures/flop_figures_test.cc):
// shapes claiming 1e6 x 1e6 x 1e6 matmuls count 2e18 FLOP each.
TEST(FlopsTest, HugeShapesCountWhatTheyClaim) {
  const auto huge = FromJson("aten::mm", "[[1000000, 1000000], [1000000, 1000000]]", "");
  ASSERT_TRUE(huge && huge->known);
  EXPECT_EQ(huge->flops, 2'000'000'000'000'000'000);
}

}  // namespace
}  // namespace profwatch::aggregate
