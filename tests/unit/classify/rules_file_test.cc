#include <gtest/gtest.h>

#include "classify/classifier.h"
#include "testing/test_util.h"

namespace profwatch::classify {
// Named for this file: the unity build compiles it with its neighbours.
namespace rules_file_test {

RuleSet Drill() { return *BuiltinRuleSet("drill"); }
RuleSet Nvidia() { return *BuiltinRuleSet("nvidia"); }

std::shared_ptr<const Classifier> Compile(const Result<RuleSet>& set) {
  EXPECT_TRUE(set.has_value()) << set.error().ToString();
  auto c = Classifier::Create(*set);
  EXPECT_TRUE(c.has_value()) << c.error().ToString();
  return *c;
}

std::string FamilyOf(const Classifier& c, std::string_view name) {
  return c.FamilyNames()[c.Classify(name)];
}

std::string ErrorOf(std::string_view text, RuleSet base = Drill()) {
  auto r = ParseRulesText(text, "rules.yaml", std::move(base));
  if (r.has_value()) return "<ok>";
  EXPECT_EQ(r.error().code, ErrorCode::kConfig);
  return r.error().context;
}

TEST(RulesFileTest, UserRulesComeBeforeTheBaseSet) {
  auto c = Compile(ParseRulesText(R"(rules:
  - family: my_gemm
    match: {contains: Cijk_}
)",
                                  "rules.yaml", Drill()));
  EXPECT_EQ(FamilyOf(*c, "Cijk_Ailk_Bljk"), "my_gemm");
  EXPECT_EQ(FamilyOf(*c, "void ck_tile::kentry<>"), "CK+primus GEMM (non-DeepEP)");
  EXPECT_EQ(c->FamilyNames().front(), "my_gemm");
  EXPECT_EQ(c->FamilyNames().back(), "Other kernels");
  EXPECT_EQ(c->FamilyNames().size(), 15u);
  EXPECT_EQ(c->RuleSetName(), "drill+custom");
}

TEST(RulesFileTest, ExtendingABuiltinFamilyKeepsItsOtherRules) {
  auto c = Compile(ParseRulesText(R"(rules:
  - family: flash_attn (fmha)
    match: {prefix: fmha_}
)",
                                  "r.yaml", Drill()));
  EXPECT_EQ(FamilyOf(*c, "fmha_fwd_only"), "flash_attn (fmha)");
  EXPECT_EQ(FamilyOf(*c, "aiter::xfmha"), "flash_attn (fmha)");
  EXPECT_EQ(c->FamilyNames().size(), 14u);  // no duplicate family
}

TEST(RulesFileTest, ReplaceDropsTheBuiltinRulesOfThatFamily) {
  auto c = Compile(ParseRulesText(R"(rules:
  - family: CK+primus GEMM (non-DeepEP)
    replace: true
    match:
      prefix: Cijk_
)",
                                  "r.yaml", Drill()));
  EXPECT_EQ(FamilyOf(*c, "Cijk_Ailk"), "CK+primus GEMM (non-DeepEP)");
  EXPECT_EQ(FamilyOf(*c, "void ck_tile::kentry<>"), "Other kernels");
  EXPECT_EQ(FamilyOf(*c, "primus_turbo::grouped_gemm_kernel"), "Other kernels");
}

TEST(RulesFileTest, ReplaceOfAFamilyTheBaseLacksIsAnError) {
  EXPECT_EQ(
      ErrorOf("rules:\n  - family: gemmm\n    replace: true\n    match: {contains: x}\n", Nvidia()),
      "rules.yaml:2: replace: true but base set 'nvidia' has no family 'gemmm'");
}

TEST(RulesFileTest, AllConditionsOfARuleMustHold) {
  auto c = Compile(ParseRulesText(R"(rules:
  - family: triton_gemm
    kind: compute
    match:
      prefix: triton_
      regex: 'gemm_[0-9]+'
      not_contains: [epilogue, bias]
)",
                                  "r.yaml", Nvidia()));
  EXPECT_EQ(FamilyOf(*c, "triton_gemm_12"), "triton_gemm");
  EXPECT_EQ(FamilyOf(*c, "triton_gemm_12_epilogue"), "gemm");
  EXPECT_EQ(FamilyOf(*c, "triton_gemm_x"), "gemm");
  EXPECT_EQ(FamilyOf(*c, "xtriton_gemm_1"), "gemm");
}

// A rule without a kind extends a base family with the base's kind (gemm
// stays math, nccl comm); a new family is compute; `kind: math` is read.
TEST(RulesFileTest, AKindlessRuleKeepsTheBaseFamilysKind) {
  auto c = Compile(ParseRulesText(R"(rules:
  - {family: gemm, match: {prefix: my_mm_}}
  - {family: nccl, match: {prefix: my_coll_}}
  - {family: my_attn, kind: math, match: {prefix: my_attn_}}
  - {family: my_misc, match: {prefix: my_misc_}}
)",
                                  "r.yaml", Nvidia()));
  EXPECT_EQ(c->KindOf(c->Classify("my_mm_1")), FamilyKind::kMath);
  EXPECT_EQ(c->KindOf(c->Classify("my_coll_1")), FamilyKind::kComm);
  EXPECT_EQ(c->KindOf(c->Classify("my_attn_1")), FamilyKind::kMath);
  EXPECT_EQ(c->KindOf(c->Classify("my_misc_1")), FamilyKind::kCompute);
  EXPECT_EQ(FamilyOf(*c, "my_mm_1"), "gemm");
}

TEST(RulesFileTest, BaseKeySelectsOrDropsTheBuiltinSet) {
  auto none = Compile(ParseRulesText(
      "base: none\nother: misc\nrules:\n  - {family: a, kind: comm, match: {suffix: .kd}}\n",
      "r.yaml", Drill()));
  EXPECT_EQ(none->FamilyNames(), (std::vector<std::string>{"a", "misc"}));
  EXPECT_EQ(none->KindOf(0), FamilyKind::kComm);
  EXPECT_EQ(none->RuleSetName(), "custom");
  EXPECT_EQ(FamilyOf(*none, "Cijk_x"), "misc");
  auto nv = Compile(ParseRulesText("base: nvidia\nrules: []\n", "r.yaml", Drill()));
  EXPECT_EQ(nv->RuleSetName(), "nvidia+custom");
  EXPECT_EQ(FamilyOf(*nv, "nvjet_x"), "gemm");
}

TEST(RulesFileTest, JsonExampleFixtureIsAccepted) {
  const std::string path = testing::ProjectFixture("classify/example_rules.json");
  auto c = Compile(LoadRulesFile(path, Drill()));
  EXPECT_EQ(c->RuleSetName(), "nvidia+custom");
  EXPECT_EQ(FamilyOf(*c, "void moe::dev::routing::routingIndicesHistogramKernel<>"), "moe_routing");
  EXPECT_EQ(FamilyOf(*c, "volta_sgemm_64x64_nt"), "gemm");
  EXPECT_EQ(FamilyOf(*c, "void at::native::matmul_x"), "other");  // replaced gemm rule
}

TEST(RulesFileTest, YamlExampleFixtureIsAccepted) {
  const std::string path = testing::ProjectFixture("classify/example_rules.yaml");
  auto c = Compile(LoadRulesFile(path, Nvidia()));
  EXPECT_EQ(c->RuleSetName(), "drill+custom");
  EXPECT_EQ(FamilyOf(*c, "moe_combine_kernel"), "moe_dispatch");
  EXPECT_EQ(c->KindOf(c->Classify("moe_combine_kernel")), FamilyKind::kComm);
  EXPECT_EQ(FamilyOf(*c, "fmha_fwd_only"), "flash_attn (fmha)");
  EXPECT_EQ(FamilyOf(*c, "triton_gemm_3"), "triton_gemm");
  EXPECT_EQ(FamilyOf(*c, "triton_gemm_3_epilogue"), "Other kernels");
}

TEST(RulesFileTest, OriginOfRulesIsFileAndLine) {
  auto set =
      ParseRulesText("rules:\n\n  - family: a\n    match: {contains: x}\n", "my.yaml", RuleSet{});
  ASSERT_TRUE(set.has_value());
  ASSERT_EQ(set->rules.size(), 1u);
  EXPECT_EQ(set->rules[0].origin, "my.yaml:3");
}

TEST(RulesFileTest, ErrorsNameFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "rules.yaml: empty rules file (expected a mapping with 'rules')"},
      {"- a\n- b\n", "rules.yaml:1: top level must be a mapping with 'rules'"},
      {"base: drill\n", "rules.yaml:1: missing 'rules'"},
      {"rules: []\nrulez: []\n",
       "rules.yaml:2: unknown top-level key 'rulez' (expected base, "
       "other, rules)"},
      {"base: intel\nrules: []\n",
       "rules.yaml:1: base must be drill, nvidia, amd or none, got 'intel'"},
      {"rules: {family: a}\n", "rules.yaml:1: rules must be a list"},
      {"rules:\n  - family: a\n    match: {contains: x}\n    kind: network\n",
       "rules.yaml:4: kind must be compute, math, comm or memory, got 'network'"},
      {"rules:\n  - family: a\n    match: {contains: x}\n    colour: red\n",
       "rules.yaml:4: unknown rule key 'colour' (expected family, kind, match, replace)"},
      {"rules:\n  - match: {contains: x}\n", "rules.yaml:2: rule has no 'family'"},
      {"rules:\n  - family: a\n", "rules.yaml:2: rule for family 'a' has no 'match'"},
      {"rules:\n  - family: a\n    match:\n      startswith: x\n",
       "rules.yaml:4: unknown match condition 'startswith' (expected contains, prefix, suffix, "
       "regex, not_contains)"},
      {"rules:\n  - family: a\n    match: {}\n",
       "rules.yaml:3: match needs at least one condition"},
      {"rules:\n  - family: a\n    match: {contains: []}\n",
       "rules.yaml:3: 'contains' needs at least one pattern"},
      {"rules:\n  - family: a\n    match: {contains: ''}\n",
       "rules.yaml:3: 'contains' pattern is empty"},
      {"rules:\n  - family: a\n    match: {contains: {x: 1}}\n",
       "rules.yaml:3: 'contains' must be a string or a list of strings"},
      {"rules:\n  - family: a\n    match: {contains: [x, [y]]}\n",
       "rules.yaml:3: 'contains' patterns must be strings"},
      {"rules:\n  - family: [a]\n    match: {contains: x}\n",
       "rules.yaml:2: family must be a string"},
      {"rules:\n  - family: a\n    replace: yes please\n    match: {contains: x}\n",
       "rules.yaml:3: replace must be true or false, got 'yes please'"},
      {"rules:\n  - family: a\n    family: b\n    match: {contains: x}\n",
       "rules.yaml:3: duplicate key 'family' in a rule"},
      {"rules:\n  - just a string\n", "rules.yaml:2: each rule must be a mapping"},
      {"rules:\n  - family: a\n    match:\n      regex: 'gemm(['\n",
       "<prefix>rules.yaml:4: bad regex 'gemm([': "},
      {"rules: [\n", "<prefix>rules.yaml:2: invalid YAML: "},
      {"rules:\n  - family: a\n   match: x\n", "<prefix>rules.yaml:3: invalid YAML: "},
  };
  for (const auto& [text, expected] : cases) {
    const std::string got = ErrorOf(text);
    if (expected.starts_with("<prefix>")) {
      EXPECT_TRUE(got.starts_with(expected.substr(8))) << text << "\n got: " << got;
    } else {
      EXPECT_EQ(got, expected) << text;
    }
  }
}

TEST(RulesFileTest, ConflictingKindWithTheBaseIsReportedAtCompile) {
  auto set = ParseRulesText("rules:\n  - {family: gemm, kind: comm, match: {contains: x}}\n",
                            "r.yaml", Nvidia());
  ASSERT_TRUE(set.has_value());
  auto c = Classifier::Create(*set);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kConfig);
  EXPECT_EQ(c.error().context,
            "builtin:nvidia: family 'gemm' declared as math but as comm at r.yaml:2");
}

TEST(RulesFileTest, OverlongRegexIsRejected) {
  const std::string text =
      "rules:\n  - family: a\n    match: {regex: '" + std::string(2000, 'a') + "'}\n";
  EXPECT_EQ(ErrorOf(text), "rules.yaml:3: regex longer than 1024 bytes");
}

// libstdc++ parses these numbers into a long without an overflow check: the
// fuzzer's crash was a count of 7777777777777777777.
TEST(RulesFileTest, OverlongRegexNumbersAreRejected) {
  auto rule = [](const std::string& re) {
    return "rules:\n  - family: a\n    match: {regex: '" + re + "'}\n";
  };
  const std::string want = "rules.yaml:3: regex count or back-reference longer than 6 digits";
  EXPECT_EQ(ErrorOf(rule("a{7777777777777777777}")), want);
  EXPECT_EQ(ErrorOf(rule("a{2,99999999999999999999}")), want);
  EXPECT_EQ(ErrorOf(rule("(a)\\77777777777777777777")), want);
  // Counts of six digits or fewer, and digits elsewhere, are ordinary.
  EXPECT_EQ(ErrorOf(rule("gemm_{2,4}x")), "<ok>");
  EXPECT_EQ(ErrorOf(rule("(a)\\1")), "<ok>");
  EXPECT_EQ(ErrorOf(rule("kernel_12345678901234567890")), "<ok>");
  EXPECT_EQ(ErrorOf(rule("\\{12345678901")), "<ok>");  // an escaped brace is literal
}

TEST(RulesFileTest, GarbageBytesGiveAConfigErrorNotACrash) {
  const std::string garbage("\x1f\x8b\x08\x00\xff\xfe{[:&*!%\x00\x01", 15);
  const std::string got = ErrorOf(garbage);
  EXPECT_NE(got, "<ok>");
  EXPECT_TRUE(got.starts_with("rules.yaml")) << got;
  EXPECT_NE(ErrorOf(std::string(5000, '[')), "<ok>");
  EXPECT_NE(ErrorOf("&a [*a]"), "<ok>");
}

TEST(RulesFileTest, MissingFileIsAConfigError) {
  testing::TempDir dir;
  auto r = LoadRulesFile(dir.Sub("nope.yaml"), Drill());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kConfig);
  EXPECT_EQ(r.error().context, dir.Sub("nope.yaml") + ": cannot open rules file");
}

TEST(RulesFileTest, LoadRulesFileReportsThePathInErrors) {
  testing::TempDir dir;
  const std::string path = dir.Sub("bad.yaml");
  testing::WriteFile(path, "rules:\n  - family: a\n    match: {contains: x}\n    foo: 1\n");
  auto r = LoadRulesFile(path, Drill());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().context,
            path + ":4: unknown rule key 'foo' (expected family, kind, match, replace)");
}

}  // namespace rules_file_test
}  // namespace profwatch::classify
