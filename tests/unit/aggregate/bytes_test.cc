// Bytes-moved formulas (bytes.h): element sizes, each modelled PyTorch
// operator on hand-computed shapes and dtypes (bf16, fp32, fp8), unusable
// shapes as unknown, the HBM peak table, and the real H200 runs' GEMM bytes
// against an independent count. The HLO rules' own tests are in
// tests/unit/parse/hlo_schedule_test.cc (HloBytes*).
#include "aggregate/bytes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "parse/op_shape_reader.h"
#include "testing/real_hlo.h"
#include "testing/test_util.h"

namespace profwatch::aggregate {
// Named for this file: the unity build compiles it with its neighbours.
namespace bytes_test {

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

// An operator's bytes from its args as Kineto writes them (the JSON arrays a
// TraceEvent carries), decoded by parse's reader as the aggregator does.
std::optional<OpBytes> FromJson(std::string_view op, std::string_view dims, std::string_view types,
                                std::string_view concrete = "") {
  parse::OpShapeReader reader;
  return TorchOpBytes(op, reader.Read(dims, concrete, types));
}

int64_t Bytes(std::string_view op, std::string_view dims, std::string_view types,
              std::string_view concrete = "") {
  auto b = FromJson(op, dims, types, concrete);
  EXPECT_TRUE(b.has_value()) << op;
  if (!b) return -1;
  EXPECT_TRUE(b->known) << op << " " << dims << " " << types;
  return b->known ? b->bytes : -1;
}

bool Unknown(std::string_view op, std::string_view dims, std::string_view types,
             std::string_view concrete = "") {
  auto b = FromJson(op, dims, types, concrete);
  return b.has_value() && !b->known;
}

std::string Types(std::initializer_list<std::string_view> t) {
  std::string out = "[";
  for (std::string_view s : t) {
    if (out.size() > 1) out += ", ";
    out += "\"" + std::string(s) + "\"";
  }
  return out + "]";
}

TEST(BytesTest, Gemms) {
  const std::string bf2 = Types({"c10::BFloat16", "c10::BFloat16"});
  // The H200 fixture's LM head: [32000,16384] x [16384,2048] in bf16.
  EXPECT_EQ(Bytes("aten::mm", "[[32000, 16384], [16384, 2048]]", bf2),
            (int64_t{32000} * 16384 + int64_t{16384} * 2048 + int64_t{32000} * 2048) * 2);
  // fp32 [8,32] x [32,64]: (256 + 2048 + 512) * 4.
  EXPECT_EQ(Bytes("aten::mm", "[[8, 32], [32, 64]]", Types({"float", "float"})), 11264);
  // fp8 e4m3 [16,32] x e5m2 [32,64]: one byte each, the product in A's type.
  EXPECT_EQ(
      Bytes("aten::mm", "[[16, 32], [32, 64]]", Types({"c10::Float8_e4m3fn", "c10::Float8_e5m2"})),
      512 + 2048 + 1024);
  // addmm: the bias as recorded ([64]) + (MK + KN + MN), bf16.
  EXPECT_EQ(Bytes("aten::addmm", "[[64], [8, 32], [32, 64], [], []]",
                  Types({"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"})),
            (64 + 256 + 2048 + 512) * 2);
  // bmm: B * (MK + KN + MN).
  EXPECT_EQ(Bytes("aten::bmm", "[[4, 8, 32], [4, 32, 16]]", bf2), 4 * (256 + 512 + 128) * 2);
  // baddbmm fp32 with a [4,8,16] input added.
  EXPECT_EQ(Bytes("aten::baddbmm", "[[4, 8, 16], [4, 8, 32], [4, 32, 16], [], []]",
                  Types({"float", "float", "float", "Scalar", "Scalar"})),
            (512 + 4 * (256 + 512 + 128)) * 4);
  // linear: input [2,5,32], weight [64,32], bias [64]; output [2,5,64].
  EXPECT_EQ(Bytes("aten::linear", "[[2, 5, 32], [64, 32], [64]]",
                  Types({"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"})),
            (320 + 2048 + 64 + 640) * 2);
  // linear without bias (an undefined tensor: "" type).
  EXPECT_EQ(Bytes("aten::linear", "[[10, 32], [64, 32], []]",
                  Types({"c10::BFloat16", "c10::BFloat16", ""})),
            (320 + 2048 + 640) * 2);
  // matmul broadcasts batch dims: [3,1,8,32] x [5,32,16] -> [3,5,8,16];
  // each operand read once as recorded.
  EXPECT_EQ(Bytes("aten::matmul", "[[3, 1, 8, 32], [5, 32, 16]]", bf2),
            (768 + 2560 + 3 * 5 * 8 * 16) * 2);
  EXPECT_EQ(Bytes("aten::matmul", "[[32], [32, 16]]", bf2), (32 + 512 + 16) * 2);
}

TEST(BytesTest, GemmShapesUnusable) {
  const std::string bf2 = Types({"c10::BFloat16", "c10::BFloat16"});
  EXPECT_TRUE(Unknown("aten::mm", "[[8, 32], [16, 64]]", bf2));  // K differs
  EXPECT_TRUE(Unknown("aten::mm", "[[8, 32], [32, 64]]", ""));   // no Input type
  EXPECT_TRUE(Unknown("aten::mm", "[[8, 32], [32, 64]]", Types({"c10::BFloat16"})));
  // Sub-byte or unknown element types are not guessed.
  EXPECT_TRUE(Unknown("aten::mm", "[[8, 32], [32, 64]]",
                      Types({"c10::Float4_e2m1fn_x2", "c10::Float4_e2m1fn_x2"})));
  EXPECT_TRUE(Unknown("aten::bmm", "[[4, 8, 32], [2, 32, 16]]", bf2));  // batch differs
  // Overflow of int64.
  EXPECT_TRUE(Unknown("aten::mm", "[[4611686018427387904, 4], [4, 4]]", bf2));
  // Not modelled at all: no bytes model, not unknown.
  EXPECT_FALSE(FromJson("aten::view", "[[8, 32], []]", Types({"c10::BFloat16", "ScalarList"})));
  EXPECT_FALSE(FromJson("aten::convolution", "[[1, 3, 8, 8], [4, 3, 3, 3]]", bf2));
}

TEST(BytesTest, AttentionForwardAndBackward) {
  // The H200 fixture's cuDNN attention: q, k, v [8,16,2048,128] bf16.
  const int64_t qkv = int64_t{8} * 16 * 2048 * 128;
  EXPECT_EQ(Bytes("aten::_scaled_dot_product_cudnn_attention",
                  "[[8, 16, 2048, 128], [8, 16, 2048, 128], [8, 16, 2048, 128], [], [], [], [], "
                  "[], []]",
                  Types({"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar",
                         "Scalar", "Scalar", ""})),
            4 * qkv * 2);  // q, k, v read, out written
  // Flash forward in fp32 with Dv 64 != D 128: out is [2,4,256,64].
  EXPECT_EQ(Bytes("aten::_scaled_dot_product_flash_attention",
                  "[[2, 4, 256, 128], [2, 4, 512, 128], [2, 4, 512, 64], [], [], [], []]",
                  Types({"float", "float", "float", "Scalar", "Scalar", "Scalar", ""})),
            (2 * 4 * 256 * 128 + 2 * 4 * 512 * 128 + 2 * 4 * 512 * 64 + 2 * 4 * 256 * 64) * 4);
  // Backward: grad_out, q, k, v, out (bf16), logsumexp [8,16,2048,1]
  // (fp32) and the philox seed and offset (0-d int64) read; dq, dk, dv
  // written.
  EXPECT_EQ(Bytes("aten::_scaled_dot_product_cudnn_attention_backward",
                  "[[8, 16, 2048, 128], [8, 16, 2048, 128], [8, 16, 2048, 128], [8, 16, 2048, "
                  "128], [8, 16, 2048, 128], [8, 16, 2048, 1], [], [], [], [], [], [], [], [], [], "
                  "[]]",
                  Types({"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16",
                         "c10::BFloat16", "float", "long int", "long int", "", "", "", "Scalar",
                         "Scalar", "Scalar", "Scalar", ""})),
            8 * qkv * 2 + int64_t{8} * 16 * 2048 * 4 + 2 * 8);  // + philox seed, offset (0-d)
  EXPECT_TRUE(Unknown("aten::_scaled_dot_product_flash_attention", "[[2, 4, 256, 128]]",
                      Types({"c10::BFloat16"})));
}

TEST(BytesTest, ElementwiseCopyAndFill) {
  const int64_t n = int64_t{8} * 2048 * 2048;
  // fp32 + bf16 (+ alpha): both read, the fp32 sum written.
  EXPECT_EQ(Bytes("aten::add", "[[8, 2048, 2048], [8, 2048, 2048], []]",
                  Types({"float", "c10::BFloat16", "Scalar"}), "[\"\", \"\", \"1\"]"),
            n * (4 + 2 + 4));
  // Broadcast: [4,1] * [1,5] writes [4,5].
  EXPECT_EQ(Bytes("aten::mul", "[[4, 1], [1, 5]]", Types({"c10::BFloat16", "c10::BFloat16"})),
            (4 + 5 + 20) * 2);
  // A 0-d tensor operand is one element.
  EXPECT_EQ(Bytes("aten::mul", "[[16], []]", Types({"float", "float"})), (16 + 1 + 16) * 4);
  // fp8: one byte per element.
  EXPECT_EQ(Bytes("aten::mul", "[[16], [16]]", Types({"c10::Float8_e4m3fn", "c10::Float8_e4m3fn"})),
            48);
  // In place: self and other read, self written.
  EXPECT_EQ(Bytes("aten::add_", "[[8, 2048, 2048], [8, 2048, 2048], []]",
                  Types({"float", "float", "Scalar"})),
            n * 12);
  EXPECT_TRUE(Unknown("aten::add", "[[4, 3], [4, 5]]", Types({"float", "float"})));
  // copy_(dst bf16, src fp32): src read, dst written, once each.
  const int64_t logits = int64_t{8} * 2048 * 32000;
  EXPECT_EQ(Bytes("aten::copy_", "[[8, 2048, 32000], [8, 2048, 32000], []]",
                  Types({"c10::BFloat16", "float", "Scalar"})),
            logits * 6);
  EXPECT_EQ(Bytes("aten::fill_", "[[16384, 32000], []]", Types({"float", "Scalar"})),
            int64_t{16384} * 32000 * 4);
}

TEST(BytesTest, Normalisations) {
  const int64_t n = int64_t{8} * 2048 * 2048;
  // rms_norm fp32: input and weight read, output written.
  EXPECT_EQ(Bytes("aten::_fused_rms_norm", "[[8, 2048, 2048], [], [2048], []]",
                  Types({"float", "ScalarList", "float", ""})),
            n * 8 + 2048 * 4);
  // layer_norm bf16 [4,8,16] with weight and bias [16].
  EXPECT_EQ(Bytes("aten::layer_norm", "[[4, 8, 16], [], [16], [16], [], []]",
                  Types({"c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar",
                         "Scalar"})),
            (512 + 16 + 16 + 512) * 2);
  // Backward (the fixture's): grad_out, input, rstd [8,2048,1], weight read;
  // grad_input and grad_weight written.
  EXPECT_EQ(Bytes("aten::_fused_rms_norm_backward",
                  "[[8, 2048, 2048], [8, 2048, 2048], [], [8, 2048, 1], [2048], []]",
                  Types({"float", "float", "ScalarList", "float", "float", "ScalarList"})),
            n * 4 * 3 + 16384 * 4 + 2048 * 4 * 2);
  // native_layer_norm_backward bf16 [32,64]: grad_out, input, mean and rstd
  // ([32,1] fp32), weight, bias read; grad_input, grad_weight, grad_bias.
  EXPECT_EQ(Bytes("aten::native_layer_norm_backward",
                  "[[32, 64], [32, 64], [], [32, 1], [32, 1], [64], [64], []]",
                  Types({"c10::BFloat16", "c10::BFloat16", "ScalarList", "float", "float",
                         "c10::BFloat16", "c10::BFloat16", "ScalarList"})),
            (2048 * 2 + 64 * 2) * 2 + 32 * 4 * 2 + 2048 * 2 + 64 * 2 * 2);
}

TEST(BytesTest, ReductionsAndSoftmax) {
  // sum over the last dim, keepdim: [4,8,16] -> [4,8,1].
  EXPECT_EQ(Bytes("aten::sum", "[[4, 8, 16], [], [], []]",
                  Types({"c10::BFloat16", "ScalarList", "Scalar", ""}),
                  "[\"\", \"[-1]\", \"False\", \"\"]"),
            (512 + 32) * 2);
  EXPECT_EQ(
      Bytes("aten::mean", "[[4, 8, 16], [], [], []]", Types({"float", "ScalarList", "Scalar", ""}),
            "[\"\", \"[0, 2]\", \"True\", \"\"]"),
      (512 + 8) * 4);
  // sum(self, dtype): everything to one element.
  EXPECT_EQ(Bytes("aten::sum", "[[4, 8, 16], []]", Types({"c10::BFloat16", ""}), "[\"\", \"\"]"),
            (512 + 1) * 2);
  EXPECT_TRUE(Unknown("aten::sum", "[[4, 8, 16], [], [], []]",
                      Types({"float", "ScalarList", "Scalar", ""}),
                      "[\"\", \"[3]\", \"False\", \"\"]"));
  const int64_t logits = int64_t{16384} * 32000;
  EXPECT_EQ(
      Bytes("aten::_log_softmax", "[[16384, 32000], [], []]", Types({"float", "Scalar", "Scalar"})),
      logits * 4 * 2);
  // Backward: grad_out and output read, grad_input written.
  EXPECT_EQ(Bytes("aten::_log_softmax_backward_data", "[[16384, 32000], [16384, 32000], [], []]",
                  Types({"float", "float", "Scalar", "Scalar"})),
            logits * 4 * 3);
}

TEST(BytesTest, TritonKernelsCountEveryTensorArgument) {
  // torch.compile's kernel: in_ptr bf16 [2048,8192], out_ptr fp32 (the
  // fixture's), xnumel a Scalar.
  EXPECT_EQ(Bytes("triton_poi_fused__to_copy_0", "[[2048, 8192], [2048, 8192], []]",
                  Types({"c10::BFloat16", "float", "Scalar"}), "[\"\", \"\", \"16777216\"]"),
            int64_t{2048} * 8192 * 6);
  EXPECT_TRUE(Unknown("triton_red_fused_sum_1", "[[], []]", Types({"Scalar", "Scalar"})));
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

// The real H200 PyTorch run (record_shapes): every GEMM operator's bytes
// equal (MK + KN + MN) * element size over its recorded shapes, counted
// here independently (nlohmann over the decompressed trace).
TEST(BytesTest, RealTorchRunGemmsEqualTheirShapes) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, "real/h200/jobs/4545-gpt-h200-flops/flops");
  const std::string path = run + "/profiler/vm_442.1795655713837382813.pt.trace.json.gz";
  auto text = testing::RunCommand("zcat '" + path + "'");
  ASSERT_EQ(text.exit_code, 0);
  const nlohmann::json trace = nlohmann::json::parse(text.out);
  auto size = [](const nlohmann::json& t) -> int64_t {
    if (t == "c10::BFloat16") return 2;
    if (t == "float") return 4;
    ADD_FAILURE() << t;
    return 0;
  };
  parse::OpShapeReader reader;
  int mm = 0, matmul = 0;
  int64_t total = 0, expected_total = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (e.value("cat", "") != "cpu_op" || (name != "aten::mm" && name != "aten::matmul")) continue;
    const nlohmann::json& d = e["args"]["Input Dims"];
    const nlohmann::json& t = e["args"]["Input type"];
    // A [..., M, K] (leading dims fold into M), B [K, N].
    int64_t m = 1;
    for (size_t i = 0; i + 1 < d[0].size(); ++i) m *= d[0][i].get<int64_t>();
    const int64_t k = d[0].back().get<int64_t>();
    ASSERT_EQ(d[1].size(), 2u);
    ASSERT_EQ(d[1][0].get<int64_t>(), k);
    const int64_t n = d[1][1].get<int64_t>();
    ASSERT_EQ(t[0], t[1]);
    const int64_t expected = (m * k + k * n + m * n) * size(t[0]);
    auto b = TorchOpBytes(name, reader.Read(e["args"]["Input Dims"].dump(), "", t.dump()));
    ASSERT_TRUE(b && b->known) << e.dump();
    EXPECT_EQ(b->bytes, expected) << e.dump();
    total += b->bytes;
    expected_total += expected;
    (name == "aten::mm" ? mm : matmul) += 1;
  }
  EXPECT_GT(mm, 0);
  EXPECT_GT(matmul, 0);
  EXPECT_EQ(total, expected_total);
}

// The real JAX run (4242 base, one jit_train_step per step): its GEMM
// launches (cuBLAS custom-calls and Triton GEMM fusions) move what their
// dots' operands and results hold, bf16 throughout (counted here from the
// dot shapes, not from the launch bytes), without the cuBLAS workspace of
// each call; docs/bytes-model.md gives the figure.
TEST(BytesTest, RealJaxGemmBytesAreTheirDotsOperandsAndResult) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, testing::kRealCommandBufferXplane);
  auto index = testing::ReadHloModulesOf(path);
  ASSERT_TRUE(index) << index.error().ToString();
  const parse::HloModuleSchedule* m = index->Find("jit_train_step");
  ASSERT_NE(m, nullptr);
  int64_t gemm = 0, dots = 0;
  int gemms = 0;
  for (const parse::HloLaunch& l : m->launches) {
    const auto b = HloLaunchBytes(l);
    ASSERT_TRUE(b) << l.kernel_base;
    if (l.flop_kind != parse::HloLaunch::Flops::kMatmul) continue;
    ++gemms;
    gemm += *b;
    for (const parse::HloLaunch::Dot& d : l.dots) {
      // Output: every dimension that is not contracted (rhs: nor batch).
      auto product = [](const parse::Dims& dims, const parse::Dims& skip,
                        const parse::Dims& skip2) {
        int64_t n = 1;
        for (size_t i = 0; i < dims.size(); ++i) {
          const auto in = [&](const parse::Dims& s) {
            return std::find(s.begin(), s.end(), static_cast<int64_t>(i)) != s.end();
          };
          if (!in(skip) && !in(skip2)) n *= dims[i];
        }
        return n;
      };
      const int64_t lhs = product(d.shape.lhs, {}, {}), rhs = product(d.shape.rhs, {}, {});
      const int64_t out = product(d.shape.lhs, d.shape.lhs_contracting, {}) *
                          product(d.shape.rhs, d.shape.rhs_contracting, d.shape.rhs_batch);
      dots += (lhs + rhs + out) * 2 * d.count;
    }
  }
  EXPECT_EQ(gemms, 51);
  EXPECT_EQ(gemm, dots);
  EXPECT_EQ(gemm, 17'833'132'032);
}

}  // namespace bytes_test
}  // namespace profwatch::aggregate
