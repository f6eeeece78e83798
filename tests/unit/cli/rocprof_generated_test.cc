// rocprofv3 JSON outputs written by tools/tracegen (`rocprof`), read by
// `profwatch analyze` and `compare`: every figure equals the generator's
// manifest (exact integer-ps truth computed from its own intervals).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "testing/test_util.h"

namespace profwatch {
// Named for this file: the unity build compiles it with its neighbours.
namespace rocprof_generated_test {

using nlohmann::json;

std::string Bin(const std::string& name) { return "'" + testing::BinaryPath(name) + "' "; }

json Generate(const std::string& dir, const std::string& manifest, const std::string& args) {
  auto gen = testing::RunCommand(Bin("profwatch-tracegen") + "rocprof --out '" + dir +
                                 "' --manifest '" + manifest + "' " + args);
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
  return json::parse(testing::ReadFile(manifest));
}

json RunJson(const std::string& args) {
  auto r = testing::RunCommand(Bin("profwatch") + args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.out.empty() ? json() : json::parse(r.out.substr(0, r.out.find('\n')));
}

// Σ over the manifest's files of `key`, per GPU per step, in seconds.
double PerGpuStep(const json& m, const std::string& key) {
  int64_t ps = 0;
  for (const auto& f : m["files"]) ps += f[key].get<int64_t>();
  return static_cast<double>(ps) * 1e-12 /
         (m["gpus"].get<double>() * m["params"]["steps"].get<double>());
}

void ExpectDevicesMatch(const json& report, const json& m, bool markers) {
  ASSERT_EQ(report["devices"].size(), m["files"].size()) << report["devices"].dump();
  for (const auto& f : m["files"]) {
    bool found = false;
    for (const auto& d : report["devices"]) {
      if (d["file"] != f["path"]) continue;
      found = true;
      SCOPED_TRACE(f["path"].get<std::string>());
      EXPECT_EQ(d["device"], f["device"]);
      EXPECT_EQ(d["pid"], f["pid"]);
      EXPECT_EQ(d["device_id"], f["gpu"]);
      EXPECT_EQ(d["rank"], markers ? f["rank"] : json(nullptr));
      EXPECT_EQ(d["kernels"], f["kernel_launches"]);
      EXPECT_NEAR(d["kernel_seconds"].get<double>(), f["kernel_ps"].get<int64_t>() * 1e-12, 1e-15);
      EXPECT_NEAR(d["busy_seconds"].get<double>(), f["busy_ps"].get<int64_t>() * 1e-12, 1e-15);
      EXPECT_NEAR(d["span_seconds"].get<double>(), f["span_ps"].get<int64_t>() * 1e-12, 1e-15);
      EXPECT_NEAR(d["idle_seconds"].get<double>(),
                  (f["span_ps"].get<int64_t>() - f["busy_ps"].get<int64_t>()) * 1e-12, 1e-15);
      EXPECT_NEAR(d["comm_seconds"].get<double>(), f["comm_ps"].get<int64_t>() * 1e-12, 1e-15);
      EXPECT_NEAR(d["exposed_comm_seconds"].get<double>(),
                  f["exposed_comm_ps"].get<int64_t>() * 1e-12, 1e-15);
      EXPECT_EQ(d["streams"], f["streams"]);
      EXPECT_EQ(d["memops"], f["memops"]);
      EXPECT_NEAR(d["memop_seconds"].get<double>(), f["memop_ps"].get<int64_t>() * 1e-12, 1e-15);
    }
    EXPECT_TRUE(found) << f["path"];
  }
}

void ExpectWindowMatches(const json& j, const json& m, bool markers) {
  EXPECT_EQ(j["format"], "rocprof");
  EXPECT_EQ(j["gpus"], m["gpus"]);
  EXPECT_EQ(j["launcher_mode"], m["launcher_mode"]);
  EXPECT_EQ(j["rule_set"], "amd");
  EXPECT_EQ(j["errors"].size(), 0u) << j["errors"].dump();
  if (markers) {
    EXPECT_EQ(j["profile_steps"], m["params"]["steps"]);
    EXPECT_EQ(j["profile_steps_source"], "nvtx");  // roctx "step K" ranges
  }
  ExpectDevicesMatch(j, m, markers);
  // The device as its agents name it (the GPU agents that dispatched).
  EXPECT_EQ(j["flops"]["device"], m["files"][0]["device_name"]);
  if (!markers) return;
  EXPECT_NEAR(j["total_kernel_seconds_per_gpu_step"].get<double>(), PerGpuStep(m, "kernel_ps"),
              1e-15);
  EXPECT_NEAR(j["exposed_comm_seconds_per_gpu_step"].get<double>(),
              PerGpuStep(m, "exposed_comm_ps"), 1e-15);
  // RCCL's generic kernels are the nccl family (communication); copies are
  // memory operations with their bytes, never kernels.
  int64_t rccl = 0, bytes = 0;
  for (const auto& f : m["files"]) {
    rccl += f["rccl_kernels"].get<int64_t>();
    bytes += f["memop_bytes"].get<int64_t>();
  }
  const double gpu_steps = m["gpus"].get<double>() * m["params"]["steps"].get<double>();
  bool nccl = false;
  for (const auto& f : j["families"]) {
    if (f["family"] != "nccl") continue;
    nccl = true;
    EXPECT_EQ(f["kind"], "comm");
    EXPECT_EQ(f["launches"], rccl);
    EXPECT_NEAR(f["seconds_per_gpu_step"].get<double>(), PerGpuStep(m, "comm_ps"), 1e-15);
  }
  EXPECT_TRUE(nccl);
  EXPECT_NEAR(j["bytes"]["memop_bytes_per_gpu_step"].get<double>(), bytes / gpu_steps, 1e-6);
}

TEST(RocprofGeneratedTest, AnalyzeOfARunMatchesTheManifest) {
  testing::TempDir tmp;
  const json m = Generate(tmp.Sub("jobs/j/r/rocprof"), tmp.Sub("m.json"),
                          "--gpus 8 --ranks 4 --first-gpu 2 --steps 3 --kernels-per-step 40");
  ASSERT_EQ(m["files"].size(), 4u);
  ExpectWindowMatches(RunJson("analyze --format json '" + tmp.Sub("jobs/j/r") + "'"), m, true);
  // The directory itself and the files given one by one read alike.
  ExpectWindowMatches(RunJson("analyze --format json '" + tmp.Sub("jobs/j/r/rocprof") + "'"), m,
                      true);
}

TEST(RocprofGeneratedTest, GzippedOutputsWithoutMarkersMatchTheManifest) {
  testing::TempDir tmp;
  const json m =
      Generate(tmp.Sub("jobs/j/r/rocprof"), tmp.Sub("m.json"),
               "--gpus 4 --ranks 4 --steps 2 --kernels-per-step 24 --gzip --no-markers --seed 9");
  const json j = RunJson("analyze --format json '" + tmp.Sub("jobs/j/r") + "'");
  ExpectWindowMatches(j, m, false);
  EXPECT_NE(j["profile_steps_source"], "nvtx");  // no roctx ranges: the usual order
}

TEST(RocprofGeneratedTest, CompareOfTwoRunsMatchesTheManifests) {
  testing::TempDir tmp;
  const json a = Generate(tmp.Sub("jobs/j/a/rocprof"), tmp.Sub("a.json"),
                          "--gpus 8 --ranks 8 --steps 3 --kernels-per-step 20 --seed 3");
  const json b = Generate(tmp.Sub("jobs/j/b/rocprof"), tmp.Sub("b.json"),
                          "--gpus 8 --ranks 8 --steps 3 --kernels-per-step 32 --seed 4");
  auto r = testing::RunCommand(Bin("profwatch") + "compare --format json '" + tmp.Sub("jobs/j/a") +
                               "' '" + tmp.Sub("jobs/j/b") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out);
  EXPECT_EQ(c["mismatches"].size(), 0u) << c["mismatches"].dump();
  ASSERT_EQ(c["variants"].size(), 2u);
  const json* manifests[] = {&a, &b};
  for (size_t i = 0; i < 2; ++i) {
    const json& v = c["variants"][i];
    const json& m = *manifests[i];
    SCOPED_TRACE(v["label"].get<std::string>());
    EXPECT_EQ(v["GPUs"].get<double>(), m["gpus"].get<double>());
    EXPECT_EQ(v["launcher mode"], m["launcher_mode"]);
    EXPECT_EQ(v["profile steps"].get<double>(), m["params"]["steps"].get<double>());
    EXPECT_NEAR(v["total kernel"].get<double>(), PerGpuStep(m, "kernel_ps"), 1e-15);
    EXPECT_NEAR(v["busy"].get<double>(), PerGpuStep(m, "busy_ps"), 1e-15);
    EXPECT_NEAR(v["exposed comm"].get<double>(), PerGpuStep(m, "exposed_comm_ps"), 1e-15);
    EXPECT_NEAR(v["nccl"].get<double>(), PerGpuStep(m, "comm_ps"), 1e-15);
    EXPECT_NEAR(v["step"].get<double>(), 0.01, 1e-15);  // the roctx step ranges
  }
}

TEST(RocprofGeneratedTest, DrillFormatRefusesRocprofOutput) {
  testing::TempDir tmp;
  Generate(tmp.Sub("r"), tmp.Sub("m.json"), "--gpus 2 --ranks 1 --steps 1 --kernels-per-step 4");
  auto r = testing::RunCommand(Bin("profwatch") + "analyze --format drill '" +
                               tmp.Sub("r/4000_results.json") + "'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("rocprofv3 JSON output"), std::string::npos) << r.err;
}

}  // namespace rocprof_generated_test
}  // namespace profwatch
