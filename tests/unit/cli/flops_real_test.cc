// Issue #33 on the real PyTorch run profiled with record_shapes
// (../shared/fixtures/real/h200/jobs/4545-gpt-h200-flops): the aten::mm
// operators of each profiled step are the model's 6*B*S*(L*(4D^2+2DF)+D*V)
// = 26,233,660,243,968 FLOP; the GEMM family's achieved FLOP/s equals a
// count made here, independently, over the kernels linked to the mm
// operators by External id; MFU is against the H200's 989.4 TFLOP/s.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace profwatch {
namespace {

using nlohmann::json;

constexpr const char* kRun = "real/h200/jobs/4545-gpt-h200-flops/flops";
constexpr const char* kCycles[] = {"vm_442.1795655713837382813.pt.trace.json.gz",
                                   "vm_442.1795655714547247741.pt.trace.json.gz"};

// Independent of profwatch: nlohmann over the decompressed trace.
double MmAchievedFlopsPerSecond(const std::string& path) {
  auto text = testing::RunCommand("zcat '" + path + "'");
  const json trace = json::parse(text.out);
  std::map<int64_t, double> mm;  // External id -> FLOPs
  for (const json& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "cpu_op" && e.value("name", "") == "aten::mm") {
      const json& d = e["args"]["Input Dims"];
      mm[e["args"]["External id"].get<int64_t>()] =
          2.0 * d[0][0].get<double>() * d[0][1].get<double>() * d[1][1].get<double>();
    }
  }
  double flops = 0, seconds = 0;
  std::map<int64_t, bool> seen;
  for (const json& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    const int64_t id = e["args"].value("External id", int64_t{-1});
    auto it = mm.find(id);
    if (it == mm.end()) continue;
    seconds += e["dur"].get<double>() * 1e-6;
    if (!seen[id]) flops += it->second;
    seen[id] = true;
  }
  return flops / seconds;
}

TEST(FlopsRealTest, MatmulFlopsAchievedAndMfuOfBothCycles) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, kRun);
  for (const char* cycle : kCycles) {
    SCOPED_TRACE(cycle);
    const std::string path = run + "/profiler/" + cycle;
    auto r =
        testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                            "' analyze --format json --log '" + run + "/log.txt' '" + path + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out.substr(0, r.out.find('\n')));
    const json& f = j["flops"];
    ASSERT_TRUE(f.is_object()) << j.dump();
    EXPECT_NEAR(f["matmul_per_gpu_step"].get<double>(), 26233660243968.0, 26233660243968.0 * 1e-3);
    EXPECT_EQ(f["unknown_ops"], 0);
    EXPECT_EQ(f["device"], "NVIDIA H200");
    EXPECT_EQ(f["peak_per_second"].get<double>(), 989.4e12);
    double gemm = 0;
    for (const json& fam : f["families"]) {
      if (fam["family"] == "gemm") gemm = fam["achieved_per_second"].get<double>();
    }
    EXPECT_NEAR(gemm / MmAchievedFlopsPerSecond(path), 1.0, 1e-9);
    // 770-780 TFLOP/s on the H200, below its peak.
    EXPECT_GT(gemm, 700e12);
    EXPECT_LT(gemm, 989.4e12);
    const double step = j["step"]["seconds"].get<double>();
    EXPECT_NEAR(f["model_per_second"].get<double>(), f["total_per_gpu_step"].get<double>() / step,
                1e-3);
    EXPECT_NEAR(f["mfu"].get<double>(), f["model_per_second"].get<double>() / 989.4e12, 1e-12);
  }
}

// The median TFLOP/s/device the training log prints after its first step.
double LogMedianTflops(const std::string& path) {
  std::ifstream in(path);
  std::vector<double> values;
  std::string line;
  const std::string key = "TFLOP/s/device: ";
  while (std::getline(in, line)) {
    const size_t at = line.find(key);
    if (at == std::string::npos || line.starts_with("completed step: 0,")) continue;
    values.push_back(std::stod(line.substr(at + key.size())));
  }
  EXPECT_FALSE(values.empty()) << path;
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// The same model in JAX (base: one CUDA graph per step; nocb: without), from
// the HLO modules in the xplane: the dots give exactly the matmul FLOPs, the
// cuDNN fused attention the causal attention FLOPs (4 layers x (1 + 2.5) x
// 2*B*H*S*S*(D+Dv)/2), whichever file is analysed. The log's TFLOP/s/device
// counts the dense matmuls only (6*B*S*params): the matmul FLOP rate over the
// window's log step is within 3% of it; model_per_second adds attention.
TEST(FlopsRealTest, JaxRunsCountTheirDotsAndAttentionFromTheHlo) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(job, "real/h200/jobs/4242-llama-h200");
  const double attention = 4 * 3.5 * 2.0 * 8 * 16 * 2048 * 2048 * 256 / 2;
  for (const char* run : {"base", "nocb"}) {
    for (const char* source : {"json", "xplane"}) {
      SCOPED_TRACE(std::string(run) + " " + source);
      auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                                   "' analyze --format json --source " + source + " '" + job + "/" +
                                   run + "'");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const json j = json::parse(r.out.substr(0, r.out.find('\n')));
      const json& f = j["flops"];
      ASSERT_TRUE(f.is_object()) << j.dump();
      EXPECT_NEAR(f["matmul_per_gpu_step"].get<double>(), 26233660243968.0,
                  26233660243968.0 * 0.01);
      EXPECT_NEAR(f["attention_per_gpu_step"].get<double>(), attention, attention * 0.01);
      EXPECT_EQ(f["unknown_ops"], 0);
      const double step = j["step"]["seconds"].get<double>();
      const double log_tflops = LogMedianTflops(job + "/" + run + "/log.txt");
      EXPECT_NEAR(f["matmul_per_gpu_step"].get<double>() / step / 1e12 / log_tflops, 1.0, 0.03);
      if (std::string(source) == "xplane") {  // the xplane names the device
        EXPECT_EQ(f["device"], "NVIDIA H200");
        EXPECT_NEAR(f["mfu"].get<double>(), f["model_per_second"].get<double>() / 989.4e12, 1e-12);
      } else {
        EXPECT_TRUE(f["mfu"].is_null());
        EXPECT_NE(f["mfu_note"].get<std::string>().find("--peak-flops"), std::string::npos);
      }
    }
  }
}

TEST(FlopsRealTest, RunsWithoutShapesHaveNoFlops) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(trace,
                                   "real/h200/jobs/4444-gpt-h200-cudagraphs/graphs/profiler/"
                                   "vm_956.1795655007791927762.pt.trace.json.gz");
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                               "' analyze --format json '" + trace + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_TRUE(j["flops"].is_null());
}

}  // namespace
}  // namespace profwatch
