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
// Named for this file: the unity build compiles it with its neighbours.
namespace flops_real_test {

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
      // The xplane names the device, also when the JSON beside it is read.
      EXPECT_EQ(f["device"], "NVIDIA H200");
      EXPECT_NEAR(f["mfu"].get<double>(), f["model_per_second"].get<double>() / 989.4e12, 1e-12);
    }
  }
}

json AnalyzeJson(const std::string& args) {
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze --format json " +
                               args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out.substr(0, r.out.find('\n')));
}

std::string AnalyzeTable(const std::string& args) {
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(FlopsRealTest, RunsWithoutShapesHaveNoFlops) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(trace,
                                   "real/h200/jobs/4444-gpt-h200-cudagraphs/graphs/profiler/"
                                   "vm_956.1795655007791927762.pt.trace.json.gz");
  const json f = AnalyzeJson("'" + trace + "'")["flops"];
  ASSERT_TRUE(f.is_object());
  EXPECT_TRUE(f["total_per_gpu_step"].is_null());
  EXPECT_TRUE(f["mfu"].is_null());
  EXPECT_NE(f["note"].get<std::string>().find("record_shapes=True"), std::string::npos);
}

// Issue #38: the PyTorch run profiled without record_shapes has 177
// operators of counted kinds and no shapes. Nothing counted is not zero:
// every FLOP figure is null with a note in JSON, "n/a: why" in the table and
// compare; before, it reported 0 FLOP, 0 TFLOP/s and "MFU 0.0%".
TEST(FlopsRealTest, NothingCountedIsAbsentNotZero) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, "real/h200/jobs/4343-gpt-h200-torch/stall20");
  const json f = AnalyzeJson("'" + run + "'")["flops"];
  ASSERT_TRUE(f.is_object());
  for (const char* key :
       {"matmul_per_gpu_step", "attention_per_gpu_step", "conv_per_gpu_step", "total_per_gpu_step",
        "achieved_per_second", "model_per_second", "mfu", "counted_kernel_seconds_per_gpu_step"}) {
    EXPECT_TRUE(f[key].is_null()) << key << ": " << f.dump();
  }
  EXPECT_TRUE(f["families"].empty()) << f.dump();
  EXPECT_EQ(f["unknown_ops"], 177);
  EXPECT_NE(f["note"].get<std::string>().find("no operator shapes"), std::string::npos);
  EXPECT_NE(f["note"].get<std::string>().find("record_shapes=True"), std::string::npos);
  EXPECT_NE(f["mfu_note"].get<std::string>().find("record_shapes=True"), std::string::npos);

  const std::string table = AnalyzeTable("'" + run + "'");
  EXPECT_NE(table.find("counted                n/a: no operator shapes"), std::string::npos)
      << table;
  EXPECT_NE(table.find("MFU                    n/a: "), std::string::npos) << table;
  EXPECT_EQ(table.find("MFU                    0.0%"), std::string::npos) << table;
  EXPECT_EQ(table.find("0 matmul + 0 attention"), std::string::npos) << table;

  // compare: the run beside the record_shapes run of the same model.
  PROFWATCH_REQUIRE_SHARED_FIXTURE(flops, kRun);
  auto r =
      testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                          "' compare --label stall --label shapes '" + run + "' '" + flops + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string mfu_row;
  for (size_t at = 0; at < r.out.size();) {
    const size_t end = r.out.find('\n', at);
    const std::string line = r.out.substr(at, end - at);
    if (line.starts_with("MFU ")) mfu_row = line;
    at = end == std::string::npos ? r.out.size() : end + 1;
  }
  ASSERT_FALSE(mfu_row.empty()) << r.out;
  EXPECT_NE(mfu_row.find("n/a"), std::string::npos) << mfu_row;
  EXPECT_EQ(mfu_row.find("0.0000"), std::string::npos) << mfu_row;
  EXPECT_NE(r.out.find("FLOPs of stall n/a: no operator shapes"), std::string::npos) << r.out;
  auto rj = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                                "' compare --format json --label stall --label shapes '" + run +
                                "' '" + flops + "'");
  ASSERT_EQ(rj.exit_code, 0) << rj.err;
  const json cj = json::parse(rj.out);
  EXPECT_TRUE(cj["variants"][0]["MFU"].is_null()) << cj.dump();
  EXPECT_TRUE(cj["variants"][0]["TFLOP per GPU step"].is_null()) << cj.dump();
  EXPECT_NEAR(cj["variants"][1]["MFU"].get<double>(), 0.46, 0.01) << cj.dump();
}

// Issue #38: a JAX trace.json.gz names no device, its xplane does. The run
// directory analysed by default (the JSON is read) gets the H200's peak and
// MFU, the figure --source xplane gives: 53.7%.
TEST(FlopsRealTest, JaxRunHasMfuByDefault) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, "real/h200/jobs/4242-llama-h200/base");
  const json j = AnalyzeJson("'" + run + "'");
  EXPECT_EQ(j["format"], "json");
  const json& f = j["flops"];
  EXPECT_EQ(f["device"], "NVIDIA H200");
  EXPECT_EQ(f["peak_per_second"].get<double>(), 989.4e12);
  ASSERT_TRUE(f["mfu"].is_number()) << f.dump();
  EXPECT_NEAR(f["mfu"].get<double>(), 0.537, 0.0005);
  const json x = AnalyzeJson("--source xplane '" + run + "'");
  EXPECT_NEAR(f["mfu"].get<double>(), x["flops"]["mfu"].get<double>(), 1e-12);
  EXPECT_NE(AnalyzeTable("'" + run + "'")
                .find("MFU                    53.7% of 989.4 TFLOP/s "
                      "(NVIDIA H200, datasheet)"),
            std::string::npos);
}

// Issue #38: the JAX JSON given by path reads the xplane beside it as the
// run directory does: the same HLO FLOPs, region coverage and device.
TEST(FlopsRealTest, JaxJsonFileGetsItsSiblingXplane) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, "real/h200/jobs/4242-llama-h200/base");
  const std::string ts = run + "/tensorboard/plugins/profile/2026_11_26_00_29_00";
  const json dir = AnalyzeJson("'" + run + "'");
  const json file = AnalyzeJson("--log '" + run + "/log.txt' '" + ts + "/vm.trace.json.gz'");
  EXPECT_EQ(file["files"].size(), 1u);
  ASSERT_TRUE(file["flops"]["total_per_gpu_step"].is_number()) << file["flops"].dump();
  EXPECT_EQ(file["flops"]["total_per_gpu_step"], dir["flops"]["total_per_gpu_step"]);
  EXPECT_EQ(file["flops"]["device"], "NVIDIA H200");
  EXPECT_EQ(file["flops"]["mfu"], dir["flops"]["mfu"]);
  ASSERT_TRUE(file["region_coverage"].is_number());
  EXPECT_EQ(file["region_coverage"], dir["region_coverage"]);
  EXPECT_GT(file["region_coverage"].get<double>(), 0.8);
}

// Issue #38: the per-family FLOP lines add up to the total above them (an
// execution of several kinds of FLOPs is in the family of its longest
// kernel), JSON and table, for both JAX runs and both sources.
TEST(FlopsRealTest, FamilyFlopsSumToTheTotal) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(job, "real/h200/jobs/4242-llama-h200");
  for (const char* run : {"base", "nocb"}) {
    for (const char* source : {"json", "xplane"}) {
      SCOPED_TRACE(std::string(run) + " " + source);
      const json f =
          AnalyzeJson("--source " + std::string(source) + " '" + job + "/" + run + "'")["flops"];
      double sum = 0;
      for (const json& fam : f["families"]) sum += fam["flops_per_gpu_step"].get<double>();
      const double total = f["total_per_gpu_step"].get<double>();
      EXPECT_NEAR(sum, total, total * 1e-12);
    }
  }
}

// Issue #48: per-family FLOPs follow the family of the kernel that ran
// them. In both JAX runs a cuBLAS GEMM (gemm family) and cuDNN's attention
// backward run between the same two fusions; the GEMM's FLOPs were credited
// to attention with them. An independent count of the HLO dots gives the
// model's matmul work, 26,233,660,243,968 FLOP per step, all of it in gemm
// kernels; cuDNN's causal flash attention 1,924,145,348,608, all of it in
// attention kernels. The FLOP kinds and the kernel families then agree.
TEST(FlopsRealTest, JaxFamilyFlopsFollowTheKernelThatRanThem) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(job, "real/h200/jobs/4242-llama-h200");
  for (const char* run : {"base", "nocb"}) {
    for (const char* source : {"json", "xplane"}) {
      SCOPED_TRACE(std::string(run) + " " + source);
      const json f =
          AnalyzeJson("--source " + std::string(source) + " '" + job + "/" + run + "'")["flops"];
      std::map<std::string, double> families;
      for (const json& fam : f["families"]) families[fam["family"]] = fam["flops_per_gpu_step"];
      EXPECT_EQ(families, (std::map<std::string, double>{{"attention", 1924145348608.0},
                                                         {"gemm", 26233660243968.0}}));
      EXPECT_EQ(f["matmul_per_gpu_step"].get<double>(), 26233660243968.0);
      EXPECT_EQ(f["attention_per_gpu_step"].get<double>(), 1924145348608.0);
      // Every math kernel's FLOPs were counted.
      EXPECT_EQ(f["coverage"], 1.0);
      EXPECT_EQ(f["unknown_kernel_seconds_per_gpu_step"], 0.0);
      EXPECT_EQ(f["mfu_lower_bound"], false);
    }
  }
}

// torch.compile names its regions `## Call CompiledFxGraph <cache key> ##`;
// the key changes on every recompile, the region label does not.
TEST(FlopsRealTest, CompiledGraphRegionHasNoCacheKey) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, kRun);
  const json j = AnalyzeJson("'" + run + "'");
  ASSERT_TRUE(j["regions"].is_array()) << j.dump();
  bool compiled = false;
  for (const json& r : j["regions"]) {
    const std::string region = r["region"];
    EXPECT_EQ(region.find("CompiledFxGraph f"), std::string::npos) << region;
    compiled = compiled || region == "## Call CompiledFxGraph ##";
  }
  EXPECT_TRUE(compiled) << j["regions"].dump();
}

// Regions of a PyTorch run are record_function ranges: its report does not
// explain unregioned time with JAX's jit frames; the JAX report does.
TEST(FlopsRealTest, PyTorchReportHasNoJaxOnlyRegionLine) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(torch, "real/h200/jobs/4343-gpt-h200-torch/stall20");
  PROFWATCH_REQUIRE_SHARED_FIXTURE(jax, "real/h200/jobs/4242-llama-h200/base");
  const std::string t = AnalyzeTable("'" + torch + "'");
  EXPECT_EQ(t.find("only jit frames"), std::string::npos) << t;
  EXPECT_NE(t.find("outside every record_function range"), std::string::npos) << t;
  EXPECT_NE(AnalyzeTable("'" + jax + "'").find("only jit frames"), std::string::npos);
}

}  // namespace flops_real_test
}  // namespace profwatch
