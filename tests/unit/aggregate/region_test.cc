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

}  // namespace
}  // namespace profwatch::aggregate
