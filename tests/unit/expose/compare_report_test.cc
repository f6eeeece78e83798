// compare's report (expose/compare_report.h): the rows rendered from each
// variant's figures, the deltas against the baseline, and why variants do
// not compare.
#include "expose/compare_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace profwatch::expose {
namespace {

// A variant of `gpus` devices of one file, `kernel_s` seconds of kernels per
// device over 2 profiled steps, with step time `step_s` from the log.
CompareVariant MakeVariant(const std::string& label, int gpus, double kernel_s, double step_s,
                           aggregate::LauncherMode mode) {
  auto st = std::make_shared<aggregate::WindowStats>();
  st->profile_steps = 2;
  st->profile_steps_source = aggregate::ProfileStepsSource::kTrace;
  st->launcher_mode = mode;
  const auto ps = static_cast<int64_t>(kernel_s * 1e12);
  for (int g = 0; g < gpus; ++g) {
    aggregate::DeviceSummary d;
    d.file = "h0.pt.trace.json";
    d.device = std::to_string(g);
    d.kernel_ps = d.busy_ps = d.span_ps = ps;
    st->devices.push_back(d);
    st->total_kernel_ps += ps;
  }
  CompareVariant v;
  v.label = label;
  v.window = "job/run/" + label;
  v.step_log = "train.log";
  v.figures = std::make_shared<const figures::WindowFigures>(
      figures::FiguresOf(st, figures::StepTime{step_s, "log"}));
  return v;
}

TEST(CompareReportTest, JsonHasEachVariantsFiguresAndItsStepSource) {
  const auto mode = aggregate::LauncherMode::kOneGpuPerProcess;
  const std::vector<CompareVariant> vs{MakeVariant("base", 2, 1.0, 0.8, mode),
                                       MakeVariant("new", 2, 0.6, 0.5, mode)};
  ASSERT_TRUE(CompareMismatches(vs).empty());
  const std::string text = RenderCompare(vs, {}, CompareFormat::kJson);
  ASSERT_TRUE(text.ends_with("}\n"));
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema"], "profwatch.compare.v1");
  EXPECT_EQ(j["baseline"], "base");
  ASSERT_EQ(j["variants"].size(), 2u);
  // 1 s per GPU over 2 steps: 0.5 s per GPU per step.
  EXPECT_DOUBLE_EQ(j["variants"][0]["total kernel"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["variants"][1]["total kernel"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(j["variants"][1]["step"].get<double>(), 0.5);
  EXPECT_EQ(j["variants"][1]["step_source"], "log");
  EXPECT_EQ(j["variants"][1]["step_log"], "train.log");
  EXPECT_EQ(j["variants"][1]["GPUs"], 2);
}

TEST(CompareReportTest, TextAndMarkdownShowTheDeltaAgainstTheBaseline) {
  const auto mode = aggregate::LauncherMode::kOneGpuPerProcess;
  const std::vector<CompareVariant> vs{MakeVariant("base", 2, 1.0, 0.8, mode),
                                       MakeVariant("new", 2, 0.6, 0.5, mode)};
  const std::string text = RenderCompare(vs, {}, CompareFormat::kText);
  EXPECT_NE(text.find("delta new"), std::string::npos) << text;
  EXPECT_NE(text.find("\ntotal kernel                     0.5000         0.3000    -0.2000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("step source"), std::string::npos) << text;
  const std::string md = RenderCompare(vs, {}, CompareFormat::kMarkdown);
  EXPECT_TRUE(md.starts_with("| seconds per GPU per step")) << md;
  EXPECT_NE(md.find("\n| total kernel             |        0.5000 |        0.3000 |   -0.2000 |\n"),
            std::string::npos)
      << md;
}

TEST(CompareReportTest, MismatchesNameLauncherModeAndGpuCount) {
  const std::vector<CompareVariant> vs{
      MakeVariant("base", 2, 1.0, 0.8, aggregate::LauncherMode::kOneGpuPerProcess),
      MakeVariant("new", 4, 1.0, 0.8, aggregate::LauncherMode::kOneNodePerProcess)};
  const std::vector<std::string> m = CompareMismatches(vs);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].rfind("launcher mode differs: base is ", 0), 0u) << m[0];
  EXPECT_EQ(m[1], "GPUs per window differ: 2 vs 4 (new)");
  const auto j = nlohmann::json::parse(RenderCompare(vs, m, CompareFormat::kJson));
  EXPECT_EQ(j["mismatches"].size(), 2u);
}

}  // namespace
}  // namespace profwatch::expose
