// rocprofv3 JSON outputs written by tools/tracegen (`rocprof`), read by
// `profwatch analyze` and `compare`: every figure equals the generator's
// manifest (exact integer-ps truth computed from its own intervals).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/analyze_inputs.h"
#include "pipeline/window_policy.h"
#include "testing/test_util.h"
#include "watch/layout.h"
#include "watch/scanner.h"
#include "window/assembler.h"

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

// The GPU agents that dispatched nothing: counted and named (as the
// generator declares them: every GPU agent of a process but the one it
// dispatches on), never among the GPUs.
void ExpectIdleAgents(const json& j, const json& m) {
  int64_t idle = 0;
  std::vector<std::string> names;
  const int gpus = m["params"]["gpus"].get<int>();
  for (const auto& f : m["files"]) {
    idle += f["idle_gpu_agents"].get<int64_t>();
    for (int g = 0; g < gpus; ++g) {
      if (g == f["gpu"].get<int>() || names.size() == 64) continue;
      names.push_back("pid " + std::to_string(f["pid"].get<int64_t>()) + " GPU " +
                      std::to_string(g) + " (" + f["device_name"].get<std::string>() + ")");
    }
  }
  EXPECT_EQ(j["idle_gpu_agents"], idle);
  EXPECT_EQ(j["idle_gpu_agent_names"], json(names));
}

void ExpectWindowMatches(const json& j, const json& m, bool markers) {
  EXPECT_EQ(j["format"], "rocprof");
  EXPECT_EQ(j["gpus"], m["gpus"]);
  ExpectIdleAgents(j, m);
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

// The collectives report: RCCL kernels by the collective of the RCCL API call
// that launched them (rccl_api records in JSON, regions in rocpd).
void ExpectCollectives(const json& j, const json& m) {
  int64_t all_reduce = 0, all_gather = 0, rccl = 0;
  for (const auto& f : m["files"]) {
    all_reduce += f["rccl_all_reduce"].get<int64_t>();
    all_gather += f["rccl_all_gather"].get<int64_t>();
    rccl += f["rccl_kernels"].get<int64_t>();
  }
  ASSERT_GT(all_reduce, 0);
  ASSERT_GT(all_gather, 0);
  ASSERT_EQ(all_reduce + all_gather, rccl);
  std::map<std::string, int64_t> calls;
  for (const auto& c : j["collectives"]) calls[c["collective"]] = c["calls"].get<int64_t>();
  EXPECT_EQ(calls, (std::map<std::string, int64_t>{{"all_gather", all_gather},
                                                   {"all_reduce", all_reduce}}))
      << j["collectives"].dump();
}

TEST(RocprofGeneratedTest, AnalyzeOfARunMatchesTheManifest) {
  testing::TempDir tmp;
  const json m = Generate(tmp.Sub("jobs/j/r/rocprof"), tmp.Sub("m.json"),
                          "--gpus 8 --ranks 4 --first-gpu 2 --steps 3 --kernels-per-step 40");
  ASSERT_EQ(m["files"].size(), 4u);
  const json j = RunJson("analyze --format json '" + tmp.Sub("jobs/j/r") + "'");
  ExpectWindowMatches(j, m, true);
  ExpectCollectives(j, m);
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
  ExpectCollectives(j, m);
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

// rocpd SQLite databases (ROCm 7's default output) of the same records read
// exactly as the JSON outputs: the run, the rocprof dir, one file.
TEST(RocprofGeneratedTest, RocpdDatabasesMatchTheManifest) {
  testing::TempDir tmp;
  const json m =
      Generate(tmp.Sub("jobs/j/r/rocprof"), tmp.Sub("m.json"),
               "--format rocpd --gpus 8 --ranks 4 --first-gpu 2 --steps 3 --kernels-per-step 40");
  ASSERT_EQ(m["files"].size(), 4u);
  EXPECT_TRUE(m["files"][0]["path"].get<std::string>().ends_with("_results.db"));
  const json run = RunJson("analyze --format json '" + tmp.Sub("jobs/j/r") + "'");
  ExpectWindowMatches(run, m, true);
  ExpectCollectives(run, m);
  ExpectWindowMatches(RunJson("analyze --format json '" + tmp.Sub("jobs/j/r/rocprof") + "'"), m,
                      true);
  json one = m;
  one["files"] = json::array({m["files"][1]});
  one["gpus"] = 1;
  const json j =
      RunJson("analyze --format json '" + m["files"][1]["path"].get<std::string>() + "'");
  ExpectDevicesMatch(j, one, true);
  EXPECT_EQ(j["flops"]["device"], m["files"][1]["device_name"]);
}

TEST(RocprofGeneratedTest, RocpdDatabasesWithoutMarkersMatchTheManifest) {
  testing::TempDir tmp;
  const json m = Generate(tmp.Sub("jobs/j/r/rocprof"), tmp.Sub("m.json"),
                          "--format rocpd --gpus 4 --ranks 4 --steps 2 --kernels-per-step 24 "
                          "--no-markers --seed 9");
  const json j = RunJson("analyze --format json '" + tmp.Sub("jobs/j/r") + "'");
  ExpectWindowMatches(j, m, false);
  EXPECT_NE(j["profile_steps_source"], "nvtx");
}

TEST(RocprofGeneratedTest, CompareOfRocpdAndJsonOfTheSameRunAgrees) {
  testing::TempDir tmp;
  const std::string args = "--gpus 8 --ranks 8 --steps 3 --kernels-per-step 20 --seed 3";
  const json a = Generate(tmp.Sub("jobs/j/a/rocprof"), tmp.Sub("a.json"), args);
  const json b = Generate(tmp.Sub("jobs/j/b/rocprof"), tmp.Sub("b.json"), args + " --format rocpd");
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
    EXPECT_EQ(v["profile steps"].get<double>(), m["params"]["steps"].get<double>());
    EXPECT_NEAR(v["total kernel"].get<double>(), PerGpuStep(m, "kernel_ps"), 1e-15);
    EXPECT_NEAR(v["busy"].get<double>(), PerGpuStep(m, "busy_ps"), 1e-15);
    EXPECT_NEAR(v["exposed comm"].get<double>(), PerGpuStep(m, "exposed_comm_ps"), 1e-15);
    EXPECT_NEAR(v["nccl"].get<double>(), PerGpuStep(m, "comm_ps"), 1e-15);
    EXPECT_NEAR(v["step"].get<double>(), 0.01, 1e-15);
  }
  // The same records in both forms: the same figures.
  EXPECT_EQ(PerGpuStep(a, "kernel_ps"), PerGpuStep(b, "kernel_ps"));
}

// The table report names the idle agents on one line; a format that does
// not list agents has neither the line nor the JSON keys (absent, not 0).
TEST(RocprofGeneratedTest, IdleGpuAgentsAreListedForRocprofAndAbsentElsewhere) {
  testing::TempDir tmp;
  const json m = Generate(tmp.Sub("jobs/j/r/rocprof"), tmp.Sub("m.json"),
                          "--format rocpd --gpus 3 --ranks 2 --steps 1 --kernels-per-step 8");
  auto table = testing::RunCommand(Bin("profwatch") + "analyze '" + tmp.Sub("jobs/j/r") + "'");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const std::string product = m["files"][0]["device_name"].get<std::string>();
  EXPECT_NE(table.out.find("  GPU agents seen without kernels: 4 (pid 4000 GPU 1 (" + product +
                           "), pid 4000 GPU 2 (" + product + "), pid 4001 GPU 0 (" + product +
                           "), pid 4001 GPU 2 (" + product + "))\n"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("  GPUs detected    2\n"), std::string::npos) << table.out;

  auto gen = testing::RunCommand(Bin("profwatch-tracegen") + "file --out '" +
                                 tmp.Sub("k/h0.pt.trace.json.gz") + "' --gpus 2 --steps 1");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const json k = RunJson("analyze --format json '" + tmp.Sub("k/h0.pt.trace.json.gz") + "'");
  EXPECT_FALSE(k.contains("idle_gpu_agents")) << k.dump().substr(0, 400);
  EXPECT_FALSE(k.contains("idle_gpu_agent_names"));
  auto ktable =
      testing::RunCommand(Bin("profwatch") + "analyze '" + tmp.Sub("k/h0.pt.trace.json.gz") + "'");
  ASSERT_EQ(ktable.exit_code, 0) << ktable.err;
  EXPECT_EQ(ktable.out.find("GPU agents seen"), std::string::npos) << ktable.out;
}

// Which files of a rocprof dir are read is one rule (watch::IsRocprofOutputName):
// `analyze` of the run dir or of the rocprof dir and the daemon's path (the
// scanner, then the assembler's window) take the same files: rocprofv3's
// outputs, never another SQLite or JSON file lying beside them.
TEST(RocprofGeneratedTest, AnalyzeAndTheDaemonReadTheSameFilesOfARocprofDir) {
  namespace fs = std::filesystem;
  testing::TempDir tmp;
  const std::string dir = tmp.Sub("jobs/j/r/rocprof");
  Generate(dir, tmp.Sub("m.json"),
           "--format rocpd --gpus 2 --ranks 2 --steps 1 --kernels-per-step 8");
  Generate(tmp.Sub("json"), tmp.Sub("m2.json"),
           "--gzip --gpus 2 --ranks 1 --first-gpu 1 --steps 1 --kernels-per-step 8 --seed 5");
  fs::copy_file(tmp.Sub("json/4000_results.json.gz"), dir + "/n1_4000_results.json.gz");
  // Not rocprofv3's names: a renamed database, a hidden one, an nsys name.
  fs::copy_file(dir + "/4000_results.db", dir + "/merged.db");
  fs::copy_file(dir + "/4000_results.db", dir + "/.4002_results.db");
  fs::copy_file(dir + "/4000_results.db", dir + "/other.sqlite");
  testing::WriteFile(dir + "/notes.json", "{}");
  const std::vector<std::string> expected = {dir + "/4000_results.db", dir + "/4001_results.db",
                                             dir + "/n1_4000_results.json.gz"};
  std::vector<std::string> listed;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (watch::IsRocprofOutputName(e.path().filename().string())) listed.push_back(e.path());
  }
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, expected);

  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  for (const std::string& arg : {tmp.Sub("jobs/j/r"), dir, tmp.Sub("jobs")}) {
    auto windows = cli::ResolveInputs({arg}, 10);
    ASSERT_TRUE(windows.has_value()) << arg;
    ASSERT_EQ(windows->size(), 1u) << arg;
    EXPECT_EQ(sorted(windows->front().files), expected) << arg;
  }

  // A rocprof dir holding none of them: nothing to analyse, as for the daemon.
  const std::string empty = tmp.Sub("jobs/j/r2/rocprof");
  fs::create_directories(empty);
  fs::copy_file(dir + "/4000_results.db", empty + "/other.sqlite");
  fs::copy_file(dir + "/4000_results.db", empty + "/merged.db");
  auto nothing = cli::ResolveInputs({empty}, 10);
  ASSERT_FALSE(nothing.has_value());
  EXPECT_EQ(nothing.error().code, ErrorCode::kNotFound) << nothing.error().ToString();

  watch::ScanOptions options;
  options.roots = {tmp.Sub("jobs")};
  const watch::ScanResult scan = watch::Scan(options);
  std::vector<std::string> scanned;
  int64_t newest_ns = 0;
  for (const watch::FileObservation& o : scan.files) {
    scanned.push_back(o.path);
    newest_ns = std::max(newest_ns, o.mtime_ns);
  }
  EXPECT_EQ(sorted(scanned), expected);
  window::AssemblerOptions assembler_options;
  assembler_options.retry_policy = &pipeline::DecideRetry;  // the daemon's
  window::Assembler assembler{assembler_options};
  const TimePoint later = TimePoint{} + std::chrono::nanoseconds(newest_ns) + std::chrono::hours(1);
  assembler.ObserveScan(scan.files, later);
  assembler.ObserveScan(scan.files, later + std::chrono::hours(1));
  const std::vector<window::WindowTask> tasks =
      assembler.TakeReady(later + std::chrono::hours(1), 10);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(sorted(tasks[0].files), expected);

  // And the window analysed reads all three (three GPUs).
  const json j = RunJson("analyze --format json '" + tmp.Sub("jobs/j/r") + "'");
  EXPECT_EQ(j["gpus"], 3);
  EXPECT_EQ(j["errors"].size(), 0u) << j["errors"].dump();
}

TEST(RocprofGeneratedTest, DrillFormatRefusesRocprofOutput) {
  testing::TempDir tmp;
  Generate(tmp.Sub("r"), tmp.Sub("m.json"), "--gpus 2 --ranks 1 --steps 1 --kernels-per-step 4");
  auto r = testing::RunCommand(Bin("profwatch") + "analyze --format drill '" +
                               tmp.Sub("r/4000_results.json") + "'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("rocprofv3 JSON output"), std::string::npos) << r.err;
}

// A real rocprofv3 output (AMD-AGI/TraceLens's tests/rocprof/908_results.json.gz:
// one PyTorch+RCCL training process on an 8x MI350X node, checked in under
// tests/fixtures/real/rocprofv3 with its origin and licence): every GPU's kernel count and kernel
// time equal an independent walk of its `kernel_dispatch` records (gzip -dc and a plain JSON parse,
// not profwatch's reader), the device as its agents name it.
TEST(RocprofRealTest, Mi350xRunEqualsAWalkOfItsKernelDispatchRecords) {
  const std::string file = testing::ProjectFixture(
      "real/rocprofv3/aorta-mi350x/run_20251209_070939/rocprof/908_results.json.gz");
  auto raw = testing::RunCommand("gzip -dc '" + file + "'");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  const json doc = json::parse(raw.out);
  raw.out.clear();
  struct Gpu {
    int64_t kernels = 0;
    int64_t ns = 0;
    int64_t rccl = 0;
    std::string product;
  };
  std::map<int, Gpu> gpus;  // by HIP ordinal: rank among GPU agents by node_id
  std::map<std::pair<int64_t, int>, std::string> agents;  // (pid, ordinal) -> product
  int64_t rccl_total = 0;
  for (const auto& tool : doc["rocprofiler-sdk-tool"]) {
    std::map<int64_t, int64_t> node_of;  // GPU agent handle -> node_id
    std::map<int64_t, std::string> product_of;
    for (const auto& a : tool["agents"]) {
      if (a["type"] != 2) continue;
      node_of[a["id"]["handle"].get<int64_t>()] = a["node_id"].get<int64_t>();
      product_of[a["id"]["handle"].get<int64_t>()] = a["product_name"].get<std::string>();
    }
    for (const auto& [h, node] : node_of) {
      int ordinal = 0;
      for (const auto& [h2, node2] : node_of) ordinal += node2 < node ? 1 : 0;
      agents[{tool["metadata"]["pid"].get<int64_t>(), ordinal}] = product_of[h];
    }
    std::map<int64_t, std::string> name_of;
    for (const auto& k : tool["kernel_symbols"])
      name_of[k["kernel_id"].get<int64_t>()] = k["demangled_kernel_name"].get<std::string>();
    for (const auto& d : tool["buffer_records"]["kernel_dispatch"]) {
      const int64_t agent = d["dispatch_info"]["agent_id"]["handle"].get<int64_t>();
      ASSERT_TRUE(node_of.count(agent)) << agent;
      int ordinal = 0;
      for (const auto& [h, node] : node_of) ordinal += node < node_of[agent] ? 1 : 0;
      Gpu& g = gpus[ordinal];
      g.product = product_of[agent];
      ++g.kernels;
      g.ns += d["end_timestamp"].get<int64_t>() - d["start_timestamp"].get<int64_t>();
      if (name_of[d["dispatch_info"]["kernel_id"].get<int64_t>()].rfind("ncclDevKernel", 0) == 0) {
        ++g.rccl;
        ++rccl_total;
      }
    }
  }
  // What that walk finds (and Python's json module finds the same): one GPU
  // of eight dispatched, 43,915 kernels, 4,441,741,378 ns, 1,310 of them RCCL.
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].kernels, 43915);
  EXPECT_EQ(gpus[0].ns, 4441741378);
  EXPECT_EQ(gpus[0].product, "AMD Instinct MI350X");

  const std::string run = file.substr(0, file.rfind("/rocprof/"));
  for (const std::string& arg : {file, run}) {
    SCOPED_TRACE(arg);
    const json j = RunJson("analyze --format json '" + arg + "'");
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["format"], "rocprof");
    EXPECT_EQ(j["errors"].size(), 0u) << j["errors"].dump();
    EXPECT_EQ(j["dropped_events"].size(), 0u) << j["dropped_events"].dump();
    EXPECT_EQ(j["gpus"], gpus.size());  // the seven idle GPU agents are not counted
    // ... but listed: the GPU agents of the walk that dispatched nothing.
    std::vector<std::string> idle;
    for (const auto& [key, product] : agents) {
      if (gpus.count(key.second) == 0) {
        idle.push_back("pid " + std::to_string(key.first) + " GPU " + std::to_string(key.second) +
                       " (" + product + ")");
      }
    }
    EXPECT_EQ(idle.size(), 7u);
    EXPECT_EQ(j["idle_gpu_agents"], idle.size());
    EXPECT_EQ(j["idle_gpu_agent_names"], json(idle));
    ASSERT_EQ(j["devices"].size(), gpus.size());
    for (const auto& d : j["devices"]) {
      const Gpu& g = gpus.at(d["device_id"].get<int>());
      EXPECT_EQ(d["pid"], 908);
      EXPECT_EQ(d["kernels"], g.kernels);
      EXPECT_NEAR(d["kernel_seconds"].get<double>(), static_cast<double>(g.ns) * 1e-9, 1e-12);
      EXPECT_EQ(j["flops"]["device"], g.product);
    }
    bool nccl = false;
    for (const auto& f : j["families"]) {
      if (f["family"] != "nccl") continue;
      nccl = true;
      EXPECT_EQ(f["launches"], rccl_total);  // RCCL's generic kernels: communication
      EXPECT_EQ(f["kind"], "comm");
    }
    EXPECT_TRUE(nccl);
  }
}

}  // namespace rocprof_generated_test
}  // namespace profwatch
