#include "aggregate/region.h"

#include <gtest/gtest.h>

namespace profwatch::aggregate {
namespace {

TEST(RegionOfScopeTest, DropsJitFramesUnwrapsTransformsAndCutsToDepth) {
  EXPECT_EQ(
      RegionOfScope("jit(train_step)/jit(main)/transpose(jvp(decoder))/layers/mlp/dot_general"),
      "decoder/layers/mlp");
  EXPECT_EQ(
      RegionOfScope("jit(train_step)/jit(main)/transpose(jvp(decoder))/layers/mlp/dot_general", 5),
      "decoder/layers/mlp/dot_general");
  EXPECT_EQ(RegionOfScope("jit(train_step)/jit(main)/vmap(remat(encoder))/attn", 1), "encoder");
  EXPECT_EQ(RegionOfScope("pjit(step)/while/body/decoder/mlp"), "while/body/decoder");
}

TEST(RegionOfScopeTest, ShortAndEmptyScopes) {
  EXPECT_EQ(RegionOfScope("jit(dot)/dot_general"), "dot_general");
  EXPECT_EQ(RegionOfScope("jit(dot)"), "");
  EXPECT_EQ(RegionOfScope(""), "");
  EXPECT_EQ(RegionOfScope("//"), "");
}

// A wrapper around a path: its components count one by one.
TEST(RegionOfScopeTest, WrapperAroundAPathAndUnbalancedParentheses) {
  EXPECT_EQ(RegionOfScope("jit(f)/jvp(decoder/layers)/mlp/x"), "decoder/layers/mlp");
  EXPECT_EQ(RegionOfScope("jit(f)/odd(name/x"), "odd(name/x");
  EXPECT_EQ(RegionOfScope("a)b/c"), "a)b/c");
}

// Kernels in start order: the innermost containing range wins, a kernel
// straddling a range's end is not in it, and ranges on no kernel's way are
// passed over.
TEST(AnnotationMatcherTest, InnermostContainingRange) {
  AnnotationMatcher m({{0, 100, 1},     // step body
                       {10, 50, 2},     // forward, nested
                       {20, 30, 3},     // attention, nested deeper
                       {20, 30, 4},     // the same bounds, later in the input
                       {60, 80, 5},     // optimizer
                       {75, 120, 6}});  // overlaps optimizer, not nested
  EXPECT_EQ(m.RegionOf(5, 8), 1u);
  EXPECT_EQ(m.RegionOf(12, 15), 2u);
  EXPECT_EQ(m.RegionOf(20, 30), 4u);  // equal ranges: the later one
  EXPECT_EQ(m.RegionOf(25, 40), 2u);  // leaves attention: forward holds it
  EXPECT_EQ(m.RegionOf(45, 55), 1u);  // straddles forward's end
  EXPECT_EQ(m.RegionOf(61, 70), 5u);
  EXPECT_EQ(m.RegionOf(76, 79), 6u);  // both contain it: the later start
  EXPECT_EQ(m.RegionOf(79, 110), 6u);
  EXPECT_EQ(m.RegionOf(101, 110), 6u);
  EXPECT_EQ(m.RegionOf(121, 130), std::nullopt);
}

TEST(AnnotationMatcherTest, NoAnnotationsNoRegion) {
  AnnotationMatcher m({});
  EXPECT_EQ(m.RegionOf(0, 10), std::nullopt);
}

}  // namespace
}  // namespace profwatch::aggregate
