// RunReportToJson: the window report of a run in the context the run
// carries (what a --history line's "report" holds).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expose/report.h"

namespace profwatch::expose {
namespace {

TEST(RunReportToJsonTest, RendersTheRunsWindowWithItsFormatGpusAndStepTime) {
  snapshot::RunState rs;
  rs.key = {"jobA", "run1"};
  rs.window_id = "2024_01_01_00_00_00";
  rs.has_window = true;
  rs.format = "xplane";
  rs.expected_gpus = 4;
  aggregate::WindowStats& st = rs.MutableStats();
  st.profile_steps = 2;
  st.total_kernel_ps = 1'000'000'000'000;
  aggregate::DeviceSummary d;
  d.file = "h0.xplane.pb";
  d.device = "0";
  d.kernel_ps = d.busy_ps = d.span_ps = st.total_kernel_ps;
  st.devices.push_back(d);
  st.launcher_mode = aggregate::LauncherMode::kOneGpuPerProcess;
  rs.step_seconds = 0.8;
  rs.step_source = "log";
  snapshot::RefreshFigures(rs);

  const nlohmann::ordered_json j = RunReportToJson(rs);
  EXPECT_EQ(j["schema"], "profwatch.window.v1");
  EXPECT_EQ(j["window"], "2024_01_01_00_00_00");
  EXPECT_EQ(j["format"], "xplane");
  EXPECT_EQ(j["expected_gpus"], 4);
  EXPECT_EQ(j["total_kernel_seconds_per_gpu_step"], 0.5);  // 1 s / (1 GPU x 2 steps)
  EXPECT_EQ(j["step"]["seconds"], 0.8);
  EXPECT_EQ(j["step"]["source"], "log");
}

}  // namespace
}  // namespace profwatch::expose
