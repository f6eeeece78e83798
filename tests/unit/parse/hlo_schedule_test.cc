// Tests of the HLO schedule reader: hand-built HloProtos with known launch
// order and scopes, the real JAX command-buffer capture (counts from an
// independent Python wire decoder), and garbage.
#include "parse/hlo_schedule.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "parse/xplane_parser.h"
#include "read/byte_source.h"
#include "testing/hostile_hlo.h"
#include "testing/proto_writer.h"
#include "testing/real_hlo.h"
#include "testing/test_util.h"

namespace profwatch::parse {
namespace {

using testing::LenField;
using testing::VarintField;

using testing::HloComputation;
using testing::HloInstr;
using testing::HloModule;
using testing::HloSequence;

// A module whose schedule runs: fusion.2 (scope = what its ops share),
// a cuBLAS call, a called computation (inlined: its fusion), a loop
// (opaque), and parameters/tuples (nothing).
std::string SampleModule() {
  const std::string fused = HloComputation(
      10, {HloInstr(100, "p0", "parameter", "ignored/param"),
           HloInstr(101, "mul", "multiply", "jit(step)/jvp(decoder/layer_0)/mlp/mul"),
           HloInstr(102, "add", "add", "jit(step)/jvp(decoder/layer_0)/mlp/add")});
  const std::string inner_fused =
      HloComputation(11, {HloInstr(110, "neg", "negate", "jit(step)/jvp(logits)/neg")});
  const std::string called =
      HloComputation(20, {HloInstr(200, "loop_negate_fusion.4", "fusion", "x", {11})});
  const std::string entry = HloComputation(
      1,
      {HloInstr(1, "param", "parameter", ""),
       HloInstr(2, "loop_add_fusion.2", "fusion", "jit(step)/jvp(decoder/layer_0)/mlp/add", {10}),
       HloInstr(3, "custom-call.7", "custom-call",
                "jit(step)/jvp(decoder/layer_0)/mlp/dot_general"),
       HloInstr(4, "call", "call", "", {20}), HloInstr(5, "while.1", "while", "jit(step)/while"),
       HloInstr(6, "tuple", "tuple", "")});
  // Scheduled in another order than the instructions are listed.
  const std::string schedule = HloSequence(1, {1, 3, 2, 4, 5, 6}) + HloSequence(20, {200});
  return HloModule("jit_step", 1, {fused, inner_fused, called, entry}, schedule);
}

TEST(HloScheduleTest, LaunchesFollowTheScheduleWithScopes) {
  auto m = DecodeHloProto(SampleModule());
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->name, "jit_step");
  ASSERT_EQ(m->launches.size(), 4u);
  using Kind = HloLaunch::Kind;
  EXPECT_EQ(m->launches[0].kind, Kind::kLibrary);
  EXPECT_EQ(m->scopes[m->launches[0].scope], "jit(step)/jvp(decoder/layer_0)/mlp/dot_general");
  EXPECT_EQ(m->launches[1].kind, Kind::kFusion);
  EXPECT_EQ(m->launches[1].kernel_base, "loop_add_fusion");
  // mul and add share decoder/layer_0/mlp; the parameter does not count.
  EXPECT_EQ(m->scopes[m->launches[1].scope], "jit(step)/jvp(decoder/layer_0)/mlp");
  EXPECT_EQ(m->launches[2].kind, Kind::kFusion);  // from the inlined call
  EXPECT_EQ(m->launches[2].kernel_base, "loop_negate_fusion");
  EXPECT_EQ(m->scopes[m->launches[2].scope], "jit(step)/jvp(logits)/neg");
  EXPECT_EQ(m->launches[3].kind, Kind::kOpaque);
}

TEST(HloScheduleTest, ModuleWithoutScheduleIsUnsupported) {
  const std::string entry = HloComputation(1, {HloInstr(1, "f.1", "fusion", "a")});
  auto m = DecodeHloProto(HloModule("m", 1, {entry}, ""));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(m.error().context.find("no schedule"), std::string::npos);
  auto no_entry = DecodeHloProto(HloModule("m", 9, {entry}, HloSequence(1, {1})));
  ASSERT_FALSE(no_entry);
  EXPECT_EQ(no_entry.error().code, ErrorCode::kUnsupported);
}

TEST(HloScheduleTest, GarbageIsAnErrorNeverACrash) {
  const std::string good = SampleModule();
  std::mt19937 rng(7);
  int errors = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bad = good;
    if (i % 2 == 0) {
      bad.resize(rng() % good.size());  // cut anywhere
    } else {
      for (int k = 0; k < 4; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
    }
    auto m = DecodeHloProto(bad);
    if (!m) ++errors;
  }
  EXPECT_GT(errors, 1000);  // most damage is detected; none crashes (ASan/UBSan run this)
  auto junk = DecodeHloProto("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff");
  ASSERT_FALSE(junk);
  EXPECT_EQ(junk.error().code, ErrorCode::kCorrupt);
}

// The shapes FLOPs are counted from (aggregate/flops.h has the formulas;
// FlopsTest.HloLaunchFlops the figures): a fused dot, cuBLAS and cuDNN
// attention calls; unusable shapes or configs are flagged, never guessed.
TEST(HloScheduleTest, LaunchShapesFromShapesAndConfigs) {
  auto m = DecodeHloProto(testing::FlopShapesHlo());
  ASSERT_TRUE(m) << m.error().ToString();
  ASSERT_EQ(m->launches.size(), 6u);
  using F = HloLaunch::Flops;
  const HloLaunch& fused = m->launches[0];
  EXPECT_EQ(fused.flop_kind, F::kMatmul);
  ASSERT_EQ(fused.dots.size(), 1u);
  EXPECT_EQ(fused.dots[0].count, 1);
  EXPECT_EQ(fused.dots[0].shape, (DotShape{{4, 8, 16}, {4, 16, 32}, {2}, {1}, {0}, {0}}));
  EXPECT_FALSE(fused.shapes_unusable);
  ASSERT_EQ(m->launches[1].dots.size(), 1u);
  EXPECT_EQ(m->launches[1].dots[0].shape, (DotShape{{8, 32}, {32, 16}, {1}, {0}, {}, {}}));
  EXPECT_EQ(m->launches[2].flop_kind, F::kMatmul);
  EXPECT_TRUE(m->launches[2].shapes_unusable);  // not JSON
  for (size_t i : {3, 4}) {
    const HloLaunch& l = m->launches[i];
    EXPECT_EQ(l.flop_kind, F::kAttention);
    ASSERT_TRUE(l.attention);
    EXPECT_EQ(l.attention->batch, 2);
    EXPECT_EQ(l.attention->heads, 4);
    EXPECT_EQ(l.attention->q_len, 64);
    EXPECT_EQ(l.attention->kv_len, 64);
    EXPECT_EQ(l.attention->head_dim, 32);
    EXPECT_EQ(l.attention->value_dim, 32);
    EXPECT_TRUE(l.attention->causal);
    EXPECT_EQ(l.attention->backward, i == 4);
  }
  EXPECT_EQ(m->launches[5].flop_kind, F::kAttention);
  EXPECT_TRUE(m->launches[5].shapes_unusable);  // no value operand
}

// Bytes one execution of each launch moves (HloLaunch::bytes), on
// hand-built fusions: a parameter read through a slice or a gather counts
// what they read, an in-place scatter or dynamic-update-slice what it
// touches (updates read and written), a parameter with any other use counts
// whole; a cuBLAS call without its workspace; none for collectives or
// sub-byte types. Element types: 16 BF16, 11 F32, 4 S32, 2 S8, 21 S4.
TEST(HloScheduleTest, HloBytesCountWhatSlicesGathersAndInPlaceUpdatesTouch) {
  using testing::HloArrayShape;
  using testing::HloCustomCall;
  using testing::HloOperands;
  using testing::HloTupleShape;
  auto shape = [](int64_t type, const std::vector<int64_t>& dims) {
    return LenField(3, HloArrayShape(type, dims));
  };
  auto param = [&](int64_t id, int64_t type, const std::vector<int64_t>& dims) {
    return HloInstr(id, "p" + std::to_string(id), "parameter", "") + shape(type, dims);
  };
  const std::string dot_dims = LenField(30, VarintField(1, 1) + VarintField(2, 0));
  // 10: a dot bf16 [8,32] x [32,16] -> [8,16].
  const std::string dot = HloComputation(10, {param(100, 16, {8, 32}), param(101, 16, {32, 16}),
                                              HloInstr(102, "dot", "dot", "") + shape(16, {8, 16}) +
                                                  HloOperands({100, 101}) + dot_dims});
  // 11: rows 0..127 of a bf16 [1024,1024] sliced and negated.
  const std::string slice = HloComputation(
      11, {param(110, 16, {1024, 1024}),
           HloInstr(111, "slice", "slice", "") + shape(16, {128, 1024}) + HloOperands({110}),
           HloInstr(112, "neg", "negate", "") + shape(16, {128, 1024}) + HloOperands({111})});
  // 12: 16,384 elements gathered from an f32 table of 524,288,000 (2 GB),
  // through a bitcast.
  const std::string gather = HloComputation(
      12, {param(120, 11, {524288000}), param(121, 4, {16384, 1}),
           HloInstr(122, "bc", "bitcast", "") + shape(11, {524288000, 1}) + HloOperands({120}),
           HloInstr(123, "gather", "gather", "") + shape(11, {16384}) + HloOperands({122, 121})});
  // 13: 1,024 f32 updates scattered in place into an f32 [536870912] (2 GiB).
  const std::string scatter = HloComputation(
      13, {param(130, 11, {536870912}), param(131, 4, {1024, 1}), param(132, 11, {1024}),
           HloInstr(133, "scatter", "scatter", "") + shape(11, {536870912}) +
               HloOperands({130, 131, 132})});
  // 14: an f32 [16,256] update written in place into [4096,256] at (i, 0).
  const std::string dus =
      HloComputation(14, {param(140, 11, {4096, 256}), param(141, 11, {16, 256}), param(142, 4, {}),
                          HloInstr(143, "dus", "dynamic-update-slice", "") +
                              shape(11, {4096, 256}) + HloOperands({140, 141, 142, 142})});
  // 15: a parameter both sliced and added whole: read whole, once.
  const std::string mixed = HloComputation(
      15,
      {param(150, 11, {64, 64}),
       HloInstr(151, "slice", "slice", "") + shape(11, {8, 64}) + HloOperands({150}),
       HloInstr(152, "add", "add", "") + shape(11, {64, 64}) + HloOperands({150, 150}),
       HloInstr(153, "t", "tuple", "") + LenField(3, HloTupleShape({})) + HloOperands({151, 152})});
  // 16: s4 (no whole-byte size).
  const std::string s4 =
      HloComputation(16, {param(160, 21, {64}), HloInstr(161, "neg", "negate", "") +
                                                    shape(21, {64}) + HloOperands({160})});
  const std::string gemm_config =
      R"({"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],)"
      R"("rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}})";
  const std::string entry = HloComputation(
      1,
      {param(1, 16, {8, 32}), param(2, 16, {32, 16}),
       HloInstr(3, "gemm_fusion_dot.1", "fusion", "", {10}),
       HloInstr(4, "loop_slice_fusion.2", "fusion", "", {11}),
       HloInstr(5, "input_gather_fusion.3", "fusion", "", {12}),
       HloInstr(6, "input_scatter_fusion.4", "fusion", "", {13}),
       HloInstr(7, "dynamic_update_slice_fusion.5", "fusion", "", {14}),
       HloInstr(8, "loop_add_fusion.6", "fusion", "", {15}),
       HloInstr(9, "cublas", "custom-call", "") +
           LenField(3, HloTupleShape({HloArrayShape(16, {8, 16}), HloArrayShape(2, {33554432})})) +
           HloOperands({1, 2}) + HloCustomCall("__cublas$lt$matmul", gemm_config),
       HloInstr(20, "all-reduce.1", "all-reduce", "") + shape(16, {8, 32}) + HloOperands({1}),
       HloInstr(21, "loop_negate_fusion.7", "fusion", "", {16})});
  auto m = DecodeHloProto(testing::HloModule("jit_f", 1,
                                             {dot, slice, gather, scatter, dus, mixed, s4, entry},
                                             HloSequence(1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 20, 21})));
  ASSERT_TRUE(m) << m.error().ToString();
  ASSERT_EQ(m->launches.size(), 9u);
  auto bytes = [&](size_t i) { return m->launches[i].bytes.value_or(-1); };
  EXPECT_EQ(bytes(0), (8 * 32 + 32 * 16 + 8 * 16) * 2);    // dot operands + result
  EXPECT_EQ(bytes(1), 128 * 1024 * 2 * 2);                 // the slice read, the result
  EXPECT_EQ(bytes(2), 16384 * 4 + 16384 * 4 + 16384 * 4);  // gathered, indices, result
  // Updates read as the buffer's touched part, indices, updates, written.
  EXPECT_EQ(bytes(3), 1024 * 4 + 1024 * 4 + 1024 * 4 + 1024 * 4);
  EXPECT_EQ(bytes(4), 16 * 256 * 4 * 3 + 4);  // touched, update, written; the index
  EXPECT_EQ(bytes(5), 64 * 64 * 4 + 8 * 64 * 4 + 64 * 64 * 4);
  EXPECT_EQ(bytes(6), (8 * 32 + 32 * 16 + 8 * 16) * 2);  // without the s8 workspace
  EXPECT_EQ(bytes(7), -1);                               // a collective: none here
  EXPECT_EQ(bytes(8), -1);                               // s4
}

// What each collective instruction moves, by name (a JAX kernel's hlo_op):
// operand bytes summed, an all-gather-start's outputs apart from its
// operands, replica groups as lists or the iota form; unknown (-1) where the
// module does not say (sub-byte elements, groups of unequal size).
TEST(HloScheduleTest, CollectiveBytesAndGroups) {
  auto m = DecodeHloProto(testing::CollectivesHlo());
  ASSERT_TRUE(m) << m.error().ToString();
  auto at = [&](std::string_view name) {
    auto it = m->collectives.find(name);
    EXPECT_NE(it, m->collectives.end()) << name;
    return it == m->collectives.end() ? HloCollective{} : it->second;
  };
  const HloCollective ag = at("all-gather-start.1");
  EXPECT_EQ(ag.in_bytes, 1024 * 8 * 2);
  EXPECT_EQ(ag.out_bytes, 4096 * 8 * 2);
  EXPECT_EQ(ag.group_size, 4);
  EXPECT_EQ(ag.groups, 1);
  const HloCollective ar = at("all-reduce.2");
  EXPECT_EQ(ar.in_bytes, 1024 * 8 * 2 + 256 * 4);
  EXPECT_EQ(ar.out_bytes, 1024 * 8 * 2 + 256 * 4);
  EXPECT_EQ(ar.group_size, 4);
  EXPECT_EQ(ar.groups, 2);
  const HloCollective rs = at("reduce-scatter.3");
  EXPECT_EQ(rs.in_bytes, 4096 * 8 * 2);
  EXPECT_EQ(rs.group_size, -1);  // groups of 2 and 1
  EXPECT_EQ(rs.groups, -1);
  EXPECT_EQ(at("all-to-all.4").in_bytes, -1);  // s4: no whole-byte size
  EXPECT_EQ(at("all-to-all.4").group_size, 2);
  const HloCollective wrapped = at("reduce-scatter-start.5");
  EXPECT_EQ(wrapped.in_bytes, 4096 * 8 * 2);
  EXPECT_EQ(wrapped.out_bytes, 1024 * 8 * 2);
  EXPECT_EQ(wrapped.group_size, 4);
  EXPECT_EQ(m->collectives.count("all-gather-done.1"), 0u);
  EXPECT_EQ(m->collectives.count("x"), 0u);
}

TEST(HloScheduleTest, KernelBasesAndCommonScope) {
  EXPECT_EQ(KernelBaseOfKernel("loop_add_fusion_12"), "loop_add_fusion");
  EXPECT_EQ(KernelBaseOfKernel("wrapped_convert"), "wrapped_convert");
  EXPECT_EQ(KernelBaseOfKernel("gemm_fusion_dot_36"), "gemm_fusion_dot");
  EXPECT_EQ(KernelBaseOfKernel("_7"), "_7");
  EXPECT_EQ(KernelBaseOfInstruction("loop_add_fusion.12"), "loop_add_fusion");
  EXPECT_EQ(KernelBaseOfInstruction("wrapped_convert"), "wrapped_convert");
  EXPECT_EQ(KernelBaseOfInstruction("input-reduce.fusion.3"), "input_reduce_fusion");
  EXPECT_EQ(CommonScope({"jit(f)/jvp(a/b)/x/mul", "jit(f)/jvp(a/b)/x/add"}), "jit(f)/jvp(a/b)/x");
  EXPECT_EQ(CommonScope({"jit(f)/jvp(a/b)/x", "jit(f)/jvp(a/c)/x"}), "jit(f)");
  EXPECT_EQ(CommonScope({"a/b", "c/d"}), "");
  EXPECT_EQ(CommonScope({}), "");
}

// Crafted modules (issue #37): each read ends in bounded work, as a module
// skipped with the reason, never a hang. RunWithin fails the binary fast
// should a bound regress.
constexpr std::chrono::seconds kHangGuard{60};

TEST(HloScheduleTest, FusionWhoseComputationCallsItselfIsTooComplex) {
  testing::RunWithin(kHangGuard, [] {
    auto m = DecodeHloProto(testing::SelfCallingFusionHlo());
    ASSERT_TRUE(m) << m.error().ToString();
    EXPECT_EQ(m->name, "jit_hostile");
    EXPECT_EQ(m->too_complex, "too_complex: computation 10 calls itself");
    EXPECT_TRUE(m->launches.empty());
    EXPECT_TRUE(m->scopes.empty());
    EXPECT_EQ(m->cost.fused_computations, 1u);  // found on the first way back into 10
  });
}

TEST(HloScheduleTest, CycleThroughTwoComputationsIsTooComplex) {
  testing::RunWithin(kHangGuard, [] {
    auto fused = DecodeHloProto(testing::TwoComputationCycleHlo(/*calls=*/false));
    ASSERT_TRUE(fused) << fused.error().ToString();
    EXPECT_EQ(fused->too_complex, "too_complex: computation 2 calls itself");
    auto called = DecodeHloProto(testing::TwoComputationCycleHlo(/*calls=*/true));
    ASSERT_TRUE(called) << called.error().ToString();
    EXPECT_EQ(called->too_complex, "too_complex: computation 2 calls itself");
    EXPECT_TRUE(called->launches.empty());
  });
}

// 12 nested calls, 12 wide: 12^12 launches inlined. The read stops at the
// expansion bound, having visited no more entries than it allows.
TEST(HloScheduleTest, NestedCallsBeyondTheExpansionBoundAreTooComplex) {
  testing::RunWithin(kHangGuard, [] {
    auto m = DecodeHloProto(testing::NestedCallsHlo());
    ASSERT_TRUE(m) << m.error().ToString();
    EXPECT_EQ(m->too_complex, "too_complex: more than 262144 schedule entries with calls inlined");
    EXPECT_EQ(m->cost.expanded, HloLimits{}.max_expanded + 1);
    EXPECT_TRUE(m->launches.empty());
    // Under the bound the same shape is read whole: 3 levels of 4 calls.
    auto small = DecodeHloProto(testing::NestedCallsHlo("m", 3, 4));
    ASSERT_TRUE(small) << small.error().ToString();
    EXPECT_TRUE(small->too_complex.empty());
    EXPECT_EQ(small->launches.size(), 64u);
    EXPECT_EQ(small->cost.expanded, 4u + 16u + 64u + 64u);
    EXPECT_EQ(small->cost.derived, 1u);  // one fusion, inlined 64 times, derived once
    EXPECT_EQ(small->scopes[small->launches[63].scope], "jit(f)/add");
  });
}

TEST(HloScheduleTest, EachLimitSkipsTheModuleWithItsReason) {
  const std::string module = SampleModule();
  HloLimits few_instructions;
  few_instructions.max_instructions = 5;
  auto a = DecodeHloProto(module, false, few_instructions);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->too_complex, "too_complex: more than 5 instructions");
  HloLimits shallow;
  shallow.max_depth = 0;  // the entry alone: the inlined call is one level deeper
  auto b = DecodeHloProto(module, false, shallow);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->too_complex, "too_complex: computations nested more than 0 deep");
  HloLimits short_schedule;
  short_schedule.max_expanded = 6;  // 6 entries in the entry, 1 in the called computation
  auto c = DecodeHloProto(module, false, short_schedule);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->too_complex, "too_complex: more than 6 schedule entries with calls inlined");
  short_schedule.max_expanded = 7;
  auto d = DecodeHloProto(module, false, short_schedule);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->too_complex.empty());
  EXPECT_EQ(d->launches.size(), 4u);
  EXPECT_EQ(d->cost.instructions, 11u);
  EXPECT_EQ(d->cost.computations, 4u);
  EXPECT_EQ(d->cost.depth, 2);  // call -> its fusion's computation
}

// A fusion computing a DAG 12 deep, each level calling the next 12 times
// (12^12 paths), is no cycle: each computation is summarised once, and the
// dots count once per call: the leaf dot runs 12^12 times per execution.
TEST(HloScheduleTest, WideDeepFusionIsSummarisedOncePerComputation) {
  using testing::HloOperands;
  using testing::HloShape;
  testing::RunWithin(kHangGuard, [] {
    const std::string dot_dims = LenField(30, VarintField(1, 1) + VarintField(2, 0));
    std::vector<std::string> comps;
    comps.push_back(
        HloComputation(100, {HloInstr(90000, "a", "parameter", "") + HloShape({2, 2}),
                             HloInstr(90001, "b", "parameter", "") + HloShape({2, 2}),
                             HloInstr(90002, "dot", "dot", "jit(f)/jvp(mlp)/dot_general") +
                                 HloShape({2, 2}) + HloOperands({90000, 90001}) + dot_dims}));
    for (int k = 11; k >= 0; --k) {  // computation 10+k calls the next level 12 times
      std::vector<std::string> instrs;
      for (int i = 0; i < 12; ++i) {
        const int64_t callee = k == 11 ? 100 : 10 + k + 1;
        instrs.push_back(
            HloInstr((10 + k) * 100 + i, "f", "fusion", "jit(f)/jvp(mlp)/mul", {callee}));
      }
      comps.push_back(HloComputation(10 + k, instrs));
    }
    comps.push_back(
        HloComputation(1, {HloInstr(1, "loop_dot_fusion.1", "fusion", "jit(f)/x", {10})}));
    auto m = DecodeHloProto(HloModule("m", 1, comps, HloSequence(1, {1})));
    ASSERT_TRUE(m) << m.error().ToString();
    EXPECT_TRUE(m->too_complex.empty()) << m->too_complex;
    ASSERT_EQ(m->launches.size(), 1u);
    EXPECT_EQ(m->scopes[m->launches[0].scope], "jit(f)/jvp(mlp)");
    EXPECT_EQ(m->launches[0].flop_kind, HloLaunch::Flops::kMatmul);
    int64_t paths = 1;
    for (int i = 0; i < 12; ++i) paths *= 12;
    ASSERT_EQ(m->launches[0].dots.size(), 1u);  // one dot, run once per path
    EXPECT_EQ(m->launches[0].dots[0].count, paths);
    EXPECT_EQ(m->launches[0].dots[0].shape, (DotShape{{2, 2}, {2, 2}, {1}, {0}, {}, {}}));
    EXPECT_FALSE(m->launches[0].shapes_unusable);
    EXPECT_EQ(m->cost.fused_computations, 13u);
    EXPECT_EQ(m->cost.depth, 13);
  });
}

// The fuzz corpus keeps these modules, so fuzz_xplane_parser (and its
// ctest replay) runs them under its time and memory limits.
TEST(HloScheduleTest, FuzzCorpusHoldsTheHostileModules) {
  for (const auto& [name, bytes] : testing::HostileHloCorpus()) {
    const std::string path =
        std::string(PROFWATCH_SOURCE_DIR) + "/tests/fuzz/corpus/xplane_parser/" + name;
    EXPECT_EQ(testing::ReadFile(path), bytes) << path;
  }
}

TEST(HloScheduleTest, ComputationIdGivenTwiceIsCorrupt) {
  const std::string a =
      HloComputation(1, {HloInstr(1, "f.1", "fusion", "a"), HloInstr(2, "f.2", "fusion", "a")});
  const std::string b = HloComputation(1, {HloInstr(3, "f.3", "fusion", "a")});
  auto m = DecodeHloProto(HloModule("m", 1, {a, b}, HloSequence(1, {1, 2})));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::kCorrupt);
  EXPECT_NE(m.error().context.find("computation id 1 given twice"), std::string::npos);
}

using testing::MetadataPlane;

Result<HloIndex> ReadIndex(const std::string& xspace) {
  read::MemorySource source(xspace);
  return ReadXPlaneHloModules(source, 64);
}

TEST(HloScheduleTest, XSpaceMetadataPlaneAfterADevicePlane) {
  const std::string device =
      LenField(1, VarintField(1, 1) + LenField(2, "/device:GPU:0") + LenField(3, "line bytes"));
  auto index = ReadIndex(device + MetadataPlane({SampleModule()}));
  ASSERT_TRUE(index) << index.error().ToString();
  ASSERT_NE(index->Find("jit_step"), nullptr);
  EXPECT_EQ(index->Find("jit_step")->launches.size(), 4u);
  EXPECT_TRUE(index->ambiguous.empty());
}

TEST(HloScheduleTest, TwoModulesOfOneNameAreAmbiguous) {
  auto index = ReadIndex(MetadataPlane({SampleModule(), SampleModule()}));
  ASSERT_TRUE(index) << index.error().ToString();
  EXPECT_EQ(index->Find("jit_step"), nullptr);
  EXPECT_EQ(index->ambiguous, std::vector<std::string>{"jit_step"});
}

// A module skipped as too complex is listed with its reason; the others of
// the plane are kept.
TEST(HloScheduleTest, XSpaceListsTooComplexModulesAndKeepsTheRest) {
  testing::RunWithin(kHangGuard, [] {
    auto index = ReadIndex(MetadataPlane({testing::NestedCallsHlo("jit_calls"), SampleModule(),
                                          testing::SelfCallingFusionHlo("jit_self")}));
    ASSERT_TRUE(index) << index.error().ToString();
    ASSERT_NE(index->Find("jit_step"), nullptr);
    EXPECT_EQ(index->Find("jit_self"), nullptr);
    EXPECT_EQ(index->too_complex.size(), 2u);
    EXPECT_EQ(index->too_complex.at("jit_self"), "too_complex: computation 10 calls itself");
    EXPECT_NE(index->too_complex.at("jit_calls").find("schedule entries"), std::string::npos);
    // Alone, a too-complex module still makes an index (its kernels get the reason).
    auto alone = ReadIndex(MetadataPlane({testing::SelfCallingFusionHlo()}));
    ASSERT_TRUE(alone) << alone.error().ToString();
    EXPECT_TRUE(alone->modules.empty());
    EXPECT_EQ(alone->too_complex.count("jit_hostile"), 1u);
  });
}

// Many modules each just within their bound (2 levels of 361 calls:
// 261,003 entries, 130,321 launches kept) share the file's budget: the
// first four fit its 1,048,576 entries, the fifth is skipped, so the
// launches a file keeps stay bounded however many modules it holds.
TEST(HloScheduleTest, ModulesOfOneFileShareTheFilesExpansionBudget) {
  testing::RunWithin(kHangGuard, [] {
    std::vector<std::string> modules;
    for (int i = 1; i <= 5; ++i)
      modules.push_back(testing::NestedCallsHlo("m" + std::to_string(i), 2, 361));
    auto index = ReadIndex(MetadataPlane(modules));
    ASSERT_TRUE(index) << index.error().ToString();
    ASSERT_EQ(index->modules.size(), 4u);
    for (const auto& [name, m] : index->modules) {
      EXPECT_EQ(m.cost.expanded, 261'003u) << name;
      EXPECT_EQ(m.launches.size(), 130'321u) << name;
    }
    ASSERT_EQ(index->too_complex.size(), 1u);
    EXPECT_EQ(index->too_complex.begin()->second,
              "too_complex: the file's modules together have more than 1048576 schedule entries "
              "with calls inlined");
  });
}

TEST(HloScheduleTest, XSpaceWithoutModulesIsNotFound) {
  const std::string device = LenField(1, VarintField(1, 1) + LenField(2, "/device:GPU:0"));
  auto index = ReadIndex(device);
  ASSERT_FALSE(index);
  EXPECT_EQ(index.error().code, ErrorCode::kNotFound);
  auto broken = ReadIndex(MetadataPlane({"\x0a\x05jit"}));  // a module cut short
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, ErrorCode::kCorrupt);
  auto truncated = ReadIndex(MetadataPlane({SampleModule()}).substr(0, 40));
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().code, ErrorCode::kTruncated);
}

// Repeated fields have no count of their own in the wire format: a few
// bytes per value. Empty tuple shapes (each a leaf), dimensions, operand ids
// and replica group members are counted as they are decoded and the module
// is skipped at the first value past HloLimits, before it is held.
TEST(HloScheduleTest, ShapeLeavesAndRepeatedValuesPastTheirBoundsAreTooComplex) {
  using testing::HloArrayShape;
  using testing::HloReplicaGroups;
  using testing::HloTupleShape;
  auto module = [](const std::string& collective) {
    const std::string entry = HloComputation(
        1, {HloInstr(1, "p", "parameter", "") + LenField(3, HloArrayShape(11, {8})), collective});
    return HloModule("m", 1, {entry}, HloSequence(1, {1, 2}));
  };
  std::string empties;
  for (int i = 0; i < 1000; ++i) empties += LenField(4, "");
  const std::string tuples =
      HloInstr(2, "all-reduce.1", "all-reduce", "x") + LenField(3, HloTupleShape({}) + empties);
  std::vector<int64_t> dims(1000, 1);
  const std::string many_dims =
      HloInstr(2, "all-reduce.1", "all-reduce", "x") + LenField(3, HloArrayShape(11, dims));
  const std::string members = HloInstr(2, "all-reduce.1", "all-reduce", "x") +
                              LenField(3, HloArrayShape(11, {8})) +
                              HloReplicaGroups({std::vector<int64_t>(1000, 0)});
  HloLimits limits;
  limits.max_shape_leaves = 500;
  limits.max_repeated = 500;
  auto leaves = DecodeHloProto(module(tuples), false, limits);
  ASSERT_TRUE(leaves) << leaves.error().ToString();
  EXPECT_EQ(leaves->too_complex, "too_complex: more than 500 shape leaves");
  EXPECT_EQ(leaves->cost.shape_leaves, 500u) << "stopped at the bound";
  for (const std::string& in : {many_dims, members}) {
    auto m = DecodeHloProto(module(in), false, limits);
    ASSERT_TRUE(m) << m.error().ToString();
    EXPECT_EQ(m->too_complex, "too_complex: more than 500 values of repeated fields");
    EXPECT_EQ(m->cost.repeated, 500u);
  }
  // Under the bounds the same modules are read, and counted.
  for (const std::string& in : {tuples, many_dims, members}) {
    auto m = DecodeHloProto(module(in));
    ASSERT_TRUE(m) << m.error().ToString();
    EXPECT_TRUE(m->too_complex.empty()) << m->too_complex;
  }
  auto read = DecodeHloProto(module(tuples));
  EXPECT_EQ(read->cost.shape_leaves, 1001u);  // the parameter's and 1,000 empty ones
  auto group = DecodeHloProto(module(members));
  EXPECT_EQ(group->collectives.at("all-reduce.1").group_size, 1000);
}

// The real command-buffer capture: jit_train_step's entry schedule holds 155
// fusions and 51 custom-calls (counted by an independent Python decoder of
// the same bytes), in this order.
TEST(HloScheduleTest, RealJaxCommandBufferCapture) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, testing::kRealCommandBufferXplane);
  auto index = testing::ReadHloModulesOf(path);
  ASSERT_TRUE(index) << index.error().ToString();
  EXPECT_TRUE(index->errors.empty());
  const HloModuleSchedule* m = index->Find("jit_train_step");
  ASSERT_NE(m, nullptr);
  size_t fusions = 0, library = 0;
  for (const HloLaunch& l : m->launches) {
    fusions += l.kind == HloLaunch::Kind::kFusion;
    library += l.kind == HloLaunch::Kind::kLibrary;
  }
  EXPECT_EQ(fusions, 155u);
  EXPECT_EQ(library, 51u);
  ASSERT_EQ(m->launches.size(), 206u);
  EXPECT_EQ(m->launches[0].kernel_base, "input_convert_reduce_fusion");
  EXPECT_EQ(m->launches[1].kernel_base, "loop_rsqrt_fusion");
  // The scope XLA itself wrote for this kernel (args.name) in the run
  // without command buffers: what the fused rsqrt and its inputs share.
  EXPECT_EQ(m->scopes[m->launches[1].scope], "jit(train_step)/jvp(decoder/layer_0)/attention");
  EXPECT_EQ(m->launches[205].kernel_base, "loop_multiply_fusion");
  EXPECT_TRUE(m->too_complex.empty());
  // What reading it took (docs/security.md chose the HloLimits from these:
  // each bound is 30 to 500 times the real figure).
  EXPECT_EQ(m->cost.instructions, 2881u);
  EXPECT_EQ(m->cost.computations, 185u);
  EXPECT_EQ(m->cost.expanded, 524u);
  EXPECT_EQ(m->cost.fused_computations, 184u);
  EXPECT_EQ(m->cost.derived, 206u);
  EXPECT_EQ(m->cost.depth, 2);
  EXPECT_EQ(m->cost.shape_leaves, 3169u);
  EXPECT_EQ(m->cost.repeated, 9947u);
  const HloLimits limits;
  EXPECT_LT(m->cost.instructions * 90, limits.max_instructions);
  EXPECT_LT(m->cost.expanded * 500, limits.max_expanded);
  EXPECT_LT(m->cost.depth * 30, limits.max_depth);
  EXPECT_LT(m->cost.shape_leaves * 150, limits.max_shape_leaves);
  EXPECT_LT(m->cost.repeated * 400, limits.max_repeated);
  // Every counted launch has usable shapes (FlopsTest.RealJaxModuleFlops
  // checks what they count).
  for (const HloLaunch& l : m->launches) EXPECT_FALSE(l.shapes_unusable);
}

}  // namespace
}  // namespace profwatch::parse
