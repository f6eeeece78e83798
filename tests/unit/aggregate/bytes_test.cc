// Bytes-moved formulas (bytes.h): element sizes, each modelled PyTorch
// operator on hand-computed shapes and dtypes (bf16, fp32, fp8), unusable
// shapes as unknown, the HBM peak table, and the real H200 runs' GEMM bytes
// against an independent count. The HLO rules' own tests are in
// tests/unit/parse/hlo_schedule_test.cc (HloBytes*).
#include "aggregate/bytes.h"

#include <gtest/gtest.h>

#include <string>

#include "parse/op_shape_reader.h"

namespace profwatch::aggregate {
namespace {

TEST(BytesTest, ElementBytes) {
  EXPECT_EQ(ElementBytes("c10::BFloat16"), 2);
  EXPECT_EQ(ElementBytes("c10::Half"), 2);
  EXPECT_EQ(ElementBytes("float"), 4);
  EXPECT_EQ(ElementBytes("long int"), 8);
  EXPECT_EQ(ElementBytes("c10::Float8_e4m3fn"), 1);
  EXPECT_EQ(ElementBytes("c10::Float8_e5m2"), 1);
  EXPECT_EQ(ElementBytes("BFloat16"), 2);
  EXPECT_EQ(ElementBytes("bf16"), 2);
  EXPECT_EQ(ElementBytes("f32"), 4);
  EXPECT_EQ(ElementBytes("f8e4m3fn"), 1);
  EXPECT_EQ(ElementBytes("f8e5m2"), 1);
  EXPECT_EQ(ElementBytes("s32"), 4);
  EXPECT_EQ(ElementBytes("pred"), 1);
  EXPECT_EQ(ElementBytes("s64"), 8);
  // Sub-byte, non-tensor and unknown names.
  EXPECT_EQ(ElementBytes("s4"), std::nullopt);
  EXPECT_EQ(ElementBytes("f4e2m1fn"), std::nullopt);
  EXPECT_EQ(ElementBytes("Scalar"), std::nullopt);
  EXPECT_EQ(ElementBytes("ScalarList"), std::nullopt);
  EXPECT_EQ(ElementBytes(""), std::nullopt);
}

TEST(BytesTest, ReaderDecodesInputTypes) {
  parse::OpShapeReader reader;
  const parse::OpShapes s =
      reader.Read("[[2, 3], []]", "[\"\", \"1\"]", "[\"c10::BFloat16\", \"Scalar\"]");
  ASSERT_TRUE(s.input_types);
  EXPECT_EQ(*s.input_types, (std::vector<std::string>{"c10::BFloat16", "Scalar"}));
  EXPECT_FALSE(reader.Read("[[2]]", "", "").input_types);
  EXPECT_FALSE(reader.Read("[[2]]", "", "[1]").input_types);  // not strings
}

TEST(BytesTest, HbmPeakTable) {
  auto bw = [](std::string_view name) {
    auto p = PeakHbmBandwidth(name);
    if (p) {
      EXPECT_FALSE(p->source.empty()) << name;
    }
    return p ? p->bytes_per_second : -1.0;
  };
  EXPECT_EQ(bw("NVIDIA H200"), 4.8e12);
  EXPECT_EQ(bw("NVIDIA H100 80GB HBM3"), 3.35e12);
  EXPECT_EQ(bw("NVIDIA H100 PCIe"), 2.0e12);
  EXPECT_EQ(bw("NVIDIA H100 NVL"), 3.9e12);
  EXPECT_EQ(bw("NVIDIA A100-SXM4-40GB"), 1.555e12);
  EXPECT_EQ(bw("NVIDIA A100-PCIE-40GB"), 1.555e12);
  EXPECT_EQ(bw("NVIDIA A100-SXM4-80GB"), 2.039e12);
  EXPECT_EQ(bw("NVIDIA A100 80GB PCIe"), 1.935e12);
  EXPECT_EQ(bw("NVIDIA B200"), 8.0e12);
  EXPECT_EQ(bw("Tesla V100-SXM2-16GB"), 0.9e12);
  EXPECT_EQ(bw("AMD Instinct MI300X"), 5.3e12);
  EXPECT_EQ(bw("NVIDIA GH200 480GB"), -1);  // two memory configurations: not told apart
  EXPECT_EQ(bw("NVIDIA GeForce RTX 4090"), -1);
  EXPECT_EQ(bw(""), -1);
}

}  // namespace
}  // namespace profwatch::aggregate
