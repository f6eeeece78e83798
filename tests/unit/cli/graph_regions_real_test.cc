// Issue #32: regions of the real JAX run whose train step ran as one CUDA
// graph (../shared/fixtures/real/h200/jobs/4242-llama-h200/base: every kernel
// carries hlo_op command_buffer_1 and no scope), through `profwatch analyze`.
// The ground truth is the same model compiled without command buffers (nocb),
// where XLA wrote every kernel's scope itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/test_util.h"

namespace profwatch {
// Named for this file: the unity build compiles it with its neighbours.
namespace graph_regions_real_test {

using nlohmann::json;

constexpr const char* kBase =
    "real/h200/jobs/4242-llama-h200/base/tensorboard/plugins/profile/2026_11_26_00_29_00";
constexpr const char* kNocb =
    "real/h200/jobs/4242-llama-h200/nocb/tensorboard/plugins/profile/2026_11_26_01_03_00";

json AnalyzeJson(const std::string& args) {
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                               "' analyze --format json --top-regions 100 " + args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return json::parse(r.out.substr(0, r.out.find('\n')));
}

std::map<std::string, double> Regions(const json& j) {
  std::map<std::string, double> out;
  for (const json& r : j["regions"]) out[r["region"]] = r["kernel_seconds_per_gpu_step"];
  return out;
}

double Logits(const std::map<std::string, double>& regions) {
  double sum = 0;
  for (const auto& [name, s] : regions) sum += name.starts_with("logits/") ? s : 0;
  return sum;
}

void ExpectLikeNocb(const json& base, const json& nocb) {
  ASSERT_TRUE(base["regions"].is_array()) << base.dump();
  EXPECT_GE(base["region_coverage"].get<double>(), 0.75);
  const auto b = Regions(base), n = Regions(nocb);
  for (int layer = 0; layer < 4; ++layer) {
    for (const char* part : {"attention", "mlp"}) {
      const std::string region = "decoder/layer_" + std::to_string(layer) + "/" + part;
      ASSERT_TRUE(n.count(region)) << region;
      ASSERT_TRUE(b.count(region)) << region;
      EXPECT_NEAR(b.at(region) / n.at(region), 1.0, 0.25) << region;
    }
  }
  EXPECT_NEAR(Logits(b) / Logits(n), 1.0, 0.25);
  // The regions listed are region_coverage of the kernel time.
  double listed = 0;
  for (const auto& [name, s] : b) listed += s;
  EXPECT_NEAR(listed,
              base["region_coverage"].get<double>() *
                  base["total_kernel_seconds_per_gpu_step"].get<double>(),
              1e-9);
  const json& g = base["unscoped_kernels"];
  ASSERT_TRUE(g.is_object());
  EXPECT_TRUE(g["unplaced_reason"].is_null()) << g.dump();
  EXPECT_NEAR(g["kernel_seconds_per_gpu_step"].get<double>(),
              base["total_kernel_seconds_per_gpu_step"].get<double>(), 1e-9);
}

TEST(GraphRegionsRealTest, CommandBufferRunHasTheRegionsOfTheRunWithout) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(base, kBase);
  const std::string nocb = testing::SharedFixture(kNocb);
  const json n = AnalyzeJson("'" + nocb + "'");
  // Without command buffers XLA's own scopes cover 87% of the kernel time.
  EXPECT_NEAR(n["region_coverage"].get<double>(), 0.87, 0.01);
  // A few fusions XLA gave no scope (what they fuse shares none): the
  // schedule places them, with the same empty scope.
  EXPECT_LT(n["unscoped_kernels"]["kernel_seconds_per_gpu_step"].get<double>(),
            0.1 * n["total_kernel_seconds_per_gpu_step"].get<double>());
  {
    SCOPED_TRACE("json");  // the trace.json.gz, HLO from the xplane beside it
    const json b = AnalyzeJson("'" + base + "'");
    EXPECT_EQ(b["format"], "json");
    ExpectLikeNocb(b, n);
  }
  {
    SCOPED_TRACE("xplane");
    const json b = AnalyzeJson("--source xplane '" + base + "'");
    EXPECT_EQ(b["format"], "xplane");
    ExpectLikeNocb(b, n);
  }
}

TEST(GraphRegionsRealTest, WithoutTheXplaneTheTableSaysWhy) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(base, kBase);
  testing::TempDir dir;
  const std::string ts = dir.Sub("2026_11_26_00_29_00");
  std::filesystem::create_directories(ts);
  std::filesystem::copy_file(base + "/vm.trace.json.gz", ts + "/vm.trace.json.gz");
  const json j = AnalyzeJson("'" + ts + "'");
  EXPECT_EQ(j["region_coverage"].get<double>(), 0.0);
  EXPECT_NE(j["unscoped_kernels"]["unplaced_reason"].get<std::string>().find("no .xplane.pb"),
            std::string::npos);
  auto table =
      testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze '" + ts + "'");
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("region coverage        0.0% of kernel time has a region"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("not placed: no .xplane.pb of this process beside vm.trace.json.gz"),
            std::string::npos)
      << table.out;
}

}  // namespace graph_regions_real_test
}  // namespace profwatch
