#include "steplog/step_line_parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

namespace profwatch::steplog {
namespace {

constexpr std::string_view kPlain =
    "completed step: 12, seconds: 5.789, TFLOP/s/device: 216.055, Tokens/s/device: 5660.303, "
    "total_weights: 1048576, loss: 12.450";

TEST(StepLineParserTest, ParsesPlainMaxTextLine) {
  std::optional<StepLine> s = ParseStepLine(kPlain);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, 12);
  EXPECT_DOUBLE_EQ(s->seconds, 5.789);
  EXPECT_DOUBLE_EQ(*s->tflops_per_device, 216.055);
  EXPECT_DOUBLE_EQ(*s->tokens_per_second_per_device, 5660.303);
  EXPECT_DOUBLE_EQ(*s->total_weights, 1048576.0);
  EXPECT_DOUBLE_EQ(*s->loss, 12.45);
  EXPECT_FALSE(s->mfu_ratio.has_value());
}

TEST(StepLineParserTest, ParsesMfuInsertedAfterTflops) {
  std::optional<StepLine> s = ParseStepLine(
      "completed step: 7, seconds: 5.789, TFLOP/s/device: 216.055, MFU: 8.64%, "
      "Tokens/s/device: 5660.303, total_weights: 1048576, loss: 12.450");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, 7);
  EXPECT_DOUBLE_EQ(*s->mfu_ratio, 0.0864);
  EXPECT_DOUBLE_EQ(*s->tokens_per_second_per_device, 5660.303);
  EXPECT_DOUBLE_EQ(*s->loss, 12.45);
}

TEST(StepLineParserTest, MfuWithoutPercentSignIsRatioOrPercentByMagnitude) {
  auto ratio = ParseStepLine("completed step: 1, seconds: 2, MFU: 0.41");
  auto percent = ParseStepLine("completed step: 1, seconds: 2, MFU: 41.5");
  ASSERT_TRUE(ratio && percent);
  EXPECT_DOUBLE_EQ(*ratio->mfu_ratio, 0.41);
  EXPECT_DOUBLE_EQ(*percent->mfu_ratio, 0.415);
}

TEST(StepLineParserTest, IgnoresExtraKeysAppendedByNewerMaxText) {
  std::optional<StepLine> s = ParseStepLine(
      "completed step: 300, seconds: 1.250, TFLOP/s/device: 400.5, Tokens/s/device: 9000.0, "
      "total_weights: 524288, loss: 2.031, lm_loss: 2.001, perplexity: 7.396, moe_lb_loss: 0.030, "
      "z_loss: 1e-4");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, 300);
  EXPECT_DOUBLE_EQ(s->seconds, 1.25);
  EXPECT_DOUBLE_EQ(*s->loss, 2.031);  // not lm_loss
}

TEST(StepLineParserTest, AcceptsKeysInAnyOrder) {
  std::optional<StepLine> s =
      ParseStepLine("completed step: 3, loss: 9.5, seconds: 4.25, Tokens/s/device: 100");
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->seconds, 4.25);
  EXPECT_DOUBLE_EQ(*s->loss, 9.5);
  EXPECT_DOUBLE_EQ(*s->tokens_per_second_per_device, 100);
  EXPECT_FALSE(s->tflops_per_device.has_value());
}

TEST(StepLineParserTest, SkipsPrefixes) {
  const std::string body = std::string(kPlain);
  for (const std::string prefix :
       {"srun: ", "[node3] ", "0: ", "2026-11-22 10:00:00,123 INFO ",
        "I1122 10:00:00.123456 140000 train.py:1234] ", "\x1b[32m[rank7]\x1b[0m "}) {
    std::optional<StepLine> s = ParseStepLine(prefix + body);
    ASSERT_TRUE(s.has_value()) << prefix;
    EXPECT_EQ(s->step, 12) << prefix;
    EXPECT_DOUBLE_EQ(s->seconds, 5.789) << prefix;
  }
}

TEST(StepLineParserTest, ParsesIntegersScientificLossAndCrLf) {
  std::optional<StepLine> s =
      ParseStepLine("completed step: 0, seconds: 61, TFLOP/s/device: 20, loss: 1.0432e+01\r\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, 0);
  EXPECT_DOUBLE_EQ(s->seconds, 61.0);
  EXPECT_DOUBLE_EQ(*s->tflops_per_device, 20.0);
  EXPECT_DOUBLE_EQ(*s->loss, 10.432);
}

TEST(StepLineParserTest, KeepsNanLoss) {
  std::optional<StepLine> s = ParseStepLine("completed step: 9, seconds: 1.5, loss: nan");
  ASSERT_TRUE(s.has_value());
  ASSERT_TRUE(s->loss.has_value());
  EXPECT_TRUE(std::isnan(*s->loss));
}

TEST(StepLineParserTest, MalformedOptionalFieldIsLeftUnset) {
  std::optional<StepLine> s =
      ParseStepLine("completed step: 4, seconds: 1.5, TFLOP/s/device: n/a, loss: 3.0x");
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->tflops_per_device.has_value());
  EXPECT_FALSE(s->loss.has_value());
}

TEST(StepLineParserTest, RejectsStepLinesMissingRequiredFields) {
  EXPECT_FALSE(ParseStepLine("completed step: 12").has_value());
  EXPECT_FALSE(ParseStepLine("completed step: , seconds: 1.0").has_value());
  EXPECT_FALSE(ParseStepLine("completed step: 12.5, seconds: 1.0").has_value());
  EXPECT_FALSE(ParseStepLine("completed step: -1, seconds: 1.0").has_value());
  EXPECT_FALSE(ParseStepLine("completed step: 3, seconds: -1.0").has_value());
  EXPECT_FALSE(ParseStepLine("completed step: 3, seconds: inf").has_value());
  EXPECT_FALSE(ParseStepLine("completed step: 3, seconds: 5.7s").has_value());
  EXPECT_FALSE(ParseStepLine("completed step: 99999999999999999999999, seconds: 1").has_value());
  EXPECT_TRUE(ParseStepLine("completed step: 12, seconds: 5.78").has_value());
}

TEST(StepLineParserTest, IgnoresLinesWithoutMarker) {
  EXPECT_FALSE(ParseStepLine("").has_value());
  EXPECT_FALSE(ParseStepLine("step: 12, seconds: 5.789").has_value());
  EXPECT_FALSE(ParseStepLine("Completed Step: 12, seconds: 5.789").has_value());
  EXPECT_FALSE(LooksLikeStepLine("Config param steps: 100"));
  EXPECT_TRUE(LooksLikeStepLine("xx completed step: garbage"));
}

TEST(StepLineParserTest, InterleavedRecordsParseTheFirst) {
  std::optional<StepLine> s = ParseStepLine(
      "completed step: 5, seconds: 2.5, loss: 3.0completed step: 5, seconds: 2.75, loss: 3.0");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, 5);
  EXPECT_DOUBLE_EQ(s->seconds, 2.5);
  EXPECT_DOUBLE_EQ(*s->loss, 3.0);
}

TEST(StepLineParserTest, SurvivesBinaryGarbageAndHugeLines) {
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::string line(rng() % 300, '\0');
    for (char& c : line) c = static_cast<char>(rng());
    if (i % 3 == 0) line.insert(line.size() / 2, "completed step: ");
    if (i % 5 == 0) line.insert(0, "Config param ");
    (void)ParseStepLine(line);
    (void)ParseConfigParamLine(line);
  }
  std::string huge = "completed step: 1, seconds: 2.0, " + std::string(4 << 20, ',') + "loss: 1.0";
  std::optional<StepLine> s = ParseStepLine(huge);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(*s->loss, 1.0);
}

TEST(ConfigParamParserTest, ParsesNameAndValue) {
  EXPECT_EQ(ParseConfigParamLine("Config param profiler: xplane"),
            (ConfigParam{"profiler", "xplane"}));
  EXPECT_EQ(ParseConfigParamLine("Config param profiler_steps: 3"),
            (ConfigParam{"profiler_steps", "3"}));
  EXPECT_EQ(ParseConfigParamLine("[node1] Config param skip_first_n_steps_for_profiler: 5\r"),
            (ConfigParam{"skip_first_n_steps_for_profiler", "5"}));
  EXPECT_EQ(ParseConfigParamLine("Config param profiler: "), (ConfigParam{"profiler", ""}));
  EXPECT_EQ(ParseConfigParamLine("Config param logical_axis_rules: [['a', 'b'], ['c', None]]"),
            (ConfigParam{"logical_axis_rules", "[['a', 'b'], ['c', None]]"}));
  EXPECT_EQ(ParseConfigParamLine("Config param base_output_directory: gs://bucket/x"),
            (ConfigParam{"base_output_directory", "gs://bucket/x"}));
}

TEST(ConfigParamParserTest, RejectsMalformedConfigLines) {
  EXPECT_FALSE(ParseConfigParamLine("Config param profiler xplane").has_value());
  EXPECT_FALSE(ParseConfigParamLine("Config param : xplane").has_value());
  EXPECT_FALSE(ParseConfigParamLine("Config param two words: x").has_value());
  EXPECT_FALSE(ParseConfigParamLine("config param profiler: xplane").has_value());
  EXPECT_FALSE(ParseConfigParamLine("").has_value());
}

}  // namespace
}  // namespace profwatch::steplog
