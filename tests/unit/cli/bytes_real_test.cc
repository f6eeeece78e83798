// Issue #51 on the real PyTorch run profiled with record_shapes
// (../shared/fixtures/real/h200/jobs/4545-gpt-h200-flops): the gemm
// family's bytes equal a count made here, independently, over the aten::mm
// operators that launched kernels ((M*K + K*N + M*N) bf16 elements each,
// once); no family moves bytes faster than the H200's HBM; at least 80% of
// the compute kernel time has a bytes model.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "testing/test_util.h"

namespace profwatch {
// Named for this file: the unity build compiles it with its neighbours.
namespace bytes_real_test {

using nlohmann::json;

constexpr const char* kRun = "real/h200/jobs/4545-gpt-h200-flops/flops";
constexpr const char* kCycles[] = {"vm_442.1795655713837382813.pt.trace.json.gz",
                                   "vm_442.1795655714547247741.pt.trace.json.gz"};
constexpr double kH200HbmBytesPerSecond = 4.8e12;

// Independent of profwatch: nlohmann over the decompressed trace. Bytes of
// the aten::mm operators some kernel names by External id.
double MmBytes(const std::string& path) {
  auto text = testing::RunCommand("zcat '" + path + "'");
  const json trace = json::parse(text.out);
  std::map<int64_t, double> mm;  // External id -> bytes
  for (const json& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "cpu_op" || e.value("name", "") != "aten::mm") continue;
    const json& a = e["args"];
    // A and B, and in this run a third input: the [M, N] product (the
    // out= variant), written once like any product, not read.
    const json& d = a["Input Dims"];
    EXPECT_TRUE(d.size() == 2 || d.size() == 3) << a.dump();
    for (const json& t : a["Input type"]) EXPECT_EQ(t, "c10::BFloat16") << a.dump();
    const double m = d[0][0].get<double>(), k = d[0][1].get<double>(), n = d[1][1].get<double>();
    EXPECT_EQ(d[1][0].get<double>(), k);
    if (d.size() == 3) {
      EXPECT_EQ(d[2], json({m, n})) << a.dump();
    }
    mm[a["External id"].get<int64_t>()] = 2.0 * (m * k + k * n + m * n);
  }
  double bytes = 0;
  std::set<int64_t> seen;
  for (const json& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    const int64_t id = e["args"].value("External id", int64_t{-1});
    auto it = mm.find(id);
    if (it != mm.end() && seen.insert(id).second) bytes += it->second;
  }
  return bytes;
}

json AnalyzeJson(const std::string& args) {
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze --format json " +
                               args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out.substr(0, r.out.find('\n')));
}

TEST(BytesRealTest, PyTorchGemmBytesEqualTheFormulaOverItsShapes) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, kRun);
  for (const char* cycle : kCycles) {
    SCOPED_TRACE(cycle);
    const std::string path = run + "/profiler/" + cycle;
    const json j = AnalyzeJson("--log '" + run + "/log.txt' '" + path + "'");
    const double divisor = j["divisor"].get<double>();
    ASSERT_GT(divisor, 0);
    double gemm = -1;
    int with_bytes = 0;
    for (const json& f : j["families"]) {
      if (!f["bytes_per_gpu_step"].is_number()) continue;
      ++with_bytes;
      if (f["family"] == "gemm") gemm = f["bytes_per_gpu_step"].get<double>();
      // No family above the device's HBM peak.
      ASSERT_TRUE(f["achieved_bytes_per_second"].is_number()) << f.dump();
      EXPECT_LT(f["achieved_bytes_per_second"].get<double>(), kH200HbmBytesPerSecond)
          << f["family"];
      EXPECT_GT(f["bytes_modeled_seconds_per_gpu_step"].get<double>(), 0) << f["family"];
    }
    EXPECT_EQ(gemm * divisor, MmBytes(path));
    // The reference: 17.8 GB per step.
    EXPECT_NEAR(gemm, 17.8e9, 0.1e9);
    EXPECT_GE(with_bytes, 4) << j["families"].dump();
    const json& b = j["bytes"];
    ASSERT_TRUE(b["bytes_coverage"].is_number()) << b.dump();
    EXPECT_GE(b["bytes_coverage"].get<double>(), 0.8) << b.dump();
    EXPECT_EQ(b["peak_hbm_bytes_per_second"].get<double>(), kH200HbmBytesPerSecond);
    EXPECT_TRUE(b["memop_bytes_per_gpu_step"].is_number()) << b.dump();
  }
}

// Issue #61 on the same run: elementwise, norm and triton (Inductor's
// pointwise kernels) have bytes and no FLOPs, every modeled kernel of a
// memory-bound kind: on the memory roof at their achieved bandwidth over the
// H200's HBM peak, no intensity. Every family's modeled time is at most its
// kernel time (an operator's kernels of other families are theirs; norm and
// attention claimed more than their own kernel time before).
// gemm and attention move and compute what they did before (the numbers
// measured before this change).
TEST(BytesRealTest, MemoryFamiliesOnTheMemoryRoofAndModeledWithinTheirTime) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, kRun);
  for (const char* cycle : kCycles) {
    SCOPED_TRACE(cycle);
    const json j = AnalyzeJson("--log '" + run + "/log.txt' '" + run + "/profiler/" + cycle + "'");
    std::map<std::string, json> by_family;
    for (const json& f : j["families"]) {
      by_family[f["family"]] = f;
      if (!f["bytes_per_gpu_step"].is_number()) continue;
      EXPECT_LE(f["bytes_modeled_seconds_per_gpu_step"].get<double>(),
                f["seconds_per_gpu_step"].get<double>())
          << f.dump();
    }
    for (const char* memory : {"elementwise", "norm", "triton"}) {
      const json& f = by_family[memory];
      EXPECT_EQ(f["roofline_bound"], "memory") << f.dump();
      EXPECT_TRUE(f["arithmetic_intensity"].is_null()) << f.dump();
      ASSERT_TRUE(f["roofline_fraction"].is_number()) << f.dump();
      const double fraction = f["roofline_fraction"].get<double>();
      EXPECT_GT(fraction, 0) << memory;
      EXPECT_LE(fraction, 1) << memory;
      EXPECT_EQ(fraction, f["achieved_bytes_per_second"].get<double>() / kH200HbmBytesPerSecond);
    }
    EXPECT_EQ(by_family["gemm"]["bytes_per_gpu_step"], 17'833'132'032.0);
    EXPECT_EQ(by_family["attention"]["bytes_per_gpu_step"], 3'225'419'840.0);
    EXPECT_EQ(by_family["attention"]["arithmetic_intensity"], 596.5565551329901);
    EXPECT_EQ(by_family["gemm"]["arithmetic_intensity"], 1471.0629740695008);
    // gemm's kernels are its operators' only kernels: its modeled time is
    // its time, as before.
    EXPECT_EQ(by_family["gemm"]["bytes_modeled_seconds_per_gpu_step"],
              by_family["gemm"]["seconds_per_gpu_step"]);
    const json& f = j["flops"];
    EXPECT_EQ(f["matmul_per_gpu_step"], 26'233'660'243'968.0);
    EXPECT_EQ(f["attention_per_gpu_step"], 1'924'145'348'608.0);
    EXPECT_EQ(f["conv_per_gpu_step"], 0.0);  // no convolution kernel ran
    std::map<std::string, double> flops;
    for (const json& fam : f["families"]) flops[fam["family"]] = fam["flops_per_gpu_step"];
    EXPECT_EQ(flops, (std::map<std::string, double>{{"attention", 1'924'145'348'608.0},
                                                    {"gemm", 26'233'660'243'968.0}}));
  }
}

// The JAX runs (4242 base, with command buffers, and nocb): the trace.json
// names no device, the xplane does; both sources give the same bytes per
// family, the H200's HBM peak, at least 80% of the compute time modeled and
// no family above the peak. The gemm family moves exactly its 51 launches'
// dots' operands and results per step, 17,833,132,032 B (the issue's
// independent count over the HLO; BytesTest.RealJaxGemmBytesAre... counts
// it from the dot shapes): a cuBLAS GEMM that runs in one execution with
// cuDNN attention's backward keeps its bytes in gemm (they went to
// attention, the longer kernel, before: 4 x 142,606,336 B per step short).
TEST(BytesRealTest, JaxJsonAndXplaneAgreeAndNameThePeak) {
  for (const char* name : {"base", "nocb"}) {
    SCOPED_TRACE(name);
    PROFWATCH_REQUIRE_SHARED_FIXTURE(run, std::string("real/h200/jobs/4242-llama-h200/") + name);
    std::map<std::string, std::map<std::string, double>> by_source;
    for (const char* source : {"json", "xplane"}) {
      SCOPED_TRACE(source);
      const json j = AnalyzeJson(std::string("--source ") + source + " '" + run + "'");
      const json& b = j["bytes"];
      ASSERT_TRUE(b["bytes_coverage"].is_number()) << b.dump();
      EXPECT_GE(b["bytes_coverage"].get<double>(), 0.8) << b.dump();
      ASSERT_TRUE(b["peak_hbm_bytes_per_second"].is_number()) << b.dump();
      EXPECT_EQ(b["peak_hbm_bytes_per_second"].get<double>(), kH200HbmBytesPerSecond);
      double sum = 0;
      for (const json& f : j["families"]) {
        if (!f["bytes_per_gpu_step"].is_number()) continue;
        by_source[source][f["family"]] = f["bytes_per_gpu_step"].get<double>();
        sum += f["bytes_per_gpu_step"].get<double>();
        EXPECT_LT(f["achieved_bytes_per_second"].get<double>(), kH200HbmBytesPerSecond)
            << f["family"];
      }
      EXPECT_EQ(sum, b["bytes_per_gpu_step"].get<double>());
    }
    EXPECT_GE(by_source["xplane"].size(), 4u);
    EXPECT_EQ(by_source["json"], by_source["xplane"]);
    EXPECT_EQ(by_source["xplane"]["gemm"], 17'833'132'032.0);
  }
}

// Nsight exports and PyTorch traces without shapes have no bytes: null,
// with the reason, never 0.
TEST(BytesRealTest, RunsWithoutShapesHaveNoBytes) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, "real/h200/jobs/4343-gpt-h200-torch/stall20");
  const json j = AnalyzeJson("'" + run + "'");
  for (const json& f : j["families"]) {
    EXPECT_TRUE(f["bytes_per_gpu_step"].is_null()) << f.dump();
    EXPECT_TRUE(f["achieved_bytes_per_second"].is_null()) << f.dump();
  }
  const json& b = j["bytes"];
  EXPECT_TRUE(b["bytes_per_gpu_step"].is_null()) << b.dump();
  EXPECT_TRUE(b["bytes_coverage"].is_null()) << b.dump();
  EXPECT_NE(b["note"].get<std::string>().find("record_shapes=True"), std::string::npos) << b.dump();
}

}  // namespace bytes_real_test
}  // namespace profwatch
