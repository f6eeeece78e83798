// `profwatch analyze` on windows written by the project's own generator
// (tools/tracegen), checked against the generator's manifest: exact per-device
// launches, summed kernel time and busy (union) time computed by the
// generator from its own integer-picosecond intervals.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "testing/test_util.h"

namespace profwatch {
// Named for this file: the unity build compiles it with its neighbours.
namespace generated_windows_test {

using nlohmann::json;

json RunJson(const std::string& cmd, int expected_exit = 0) {
  auto r = testing::RunCommand(cmd);
  EXPECT_EQ(r.exit_code, expected_exit) << cmd << "\n" << r.err;
  return r.out.empty() ? json() : json::parse(r.out.substr(0, r.out.find('\n')));
}

std::vector<json> RunJsonLines(const std::string& cmd) {
  auto r = testing::RunCommand(cmd);
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
  std::vector<json> out;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    out.push_back(json::parse(r.out.substr(pos, nl - pos)));
    pos = nl == std::string::npos ? r.out.size() : nl + 1;
  }
  return out;
}

std::string Tracegen(const std::string& args) {
  return "'" + testing::BinaryPath("profwatch-tracegen") + "' " + args;
}
std::string Analyze(const std::string& args) {
  return "'" + testing::BinaryPath("profwatch") + "' analyze --format json " + args;
}

std::string Basename(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

// Every device of the report equals the manifest's device of the same file.
void ExpectDevicesMatchManifest(const json& report, const json& manifest) {
  size_t manifest_devices = 0;
  for (const auto& f : manifest["files"]) {
    for (const auto& md : f["devices"]) {
      if (md["kernel_launches"].get<int64_t>() == 0) continue;
      ++manifest_devices;
      bool found = false;
      for (const auto& d : report["devices"]) {
        if (Basename(d["file"]) != Basename(f["path"]) || d["device"] != md["device"]) continue;
        found = true;
        SCOPED_TRACE(f["path"].get<std::string>() + " " + md["device"].get<std::string>());
        EXPECT_EQ(d["kernels"].get<int64_t>(), md["kernel_launches"].get<int64_t>());
        EXPECT_NEAR(d["kernel_seconds"].get<double>(), md["kernel_ps"].get<int64_t>() * 1e-12,
                    1e-12);
        EXPECT_NEAR(d["busy_seconds"].get<double>(), md["busy_ps"].get<int64_t>() * 1e-12, 1e-12);
        EXPECT_NEAR(d["span_seconds"].get<double>(), md["span_ps"].get<int64_t>() * 1e-12, 1e-12);
        EXPECT_EQ(d["streams"].get<int>(), md["streams_with_events"].get<int>());
      }
      EXPECT_TRUE(found) << f["path"] << " " << md["device"];
    }
  }
  EXPECT_EQ(report["devices"].size(), manifest_devices);
}

TEST(GeneratedWindowsTest, OneNodePerProcessWindowMatchesManifest) {
  testing::TempDir tmp;
  auto gen = testing::RunCommand(Tracegen("job --out " + tmp.Sub("jobs") +
                                          " --job j1 --run r1 --mode 1node --hosts 2 "
                                          "--gpus-per-host 8 --kernels-per-step 60 --seed 3 "
                                          "--manifest " +
                                          tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
  json j = RunJson(Analyze(tmp.Sub("jobs/j1/r1")));
  EXPECT_EQ(j["gpus"], 16);
  EXPECT_EQ(j["launcher_mode"], "1-node/proc");
  EXPECT_EQ(j["files"].size(), 2u);
  EXPECT_EQ(j["truncated"], false);
  EXPECT_EQ(j["rule_set"], "amd");
  ExpectDevicesMatchManifest(j, manifest);
  // Overlapping comm and compute streams: the union is below the sum.
  EXPECT_LT(j["busy_seconds_per_gpu_step"].get<double>(),
            j["total_kernel_seconds_per_gpu_step"].get<double>());
  EXPECT_GT(j["overlap_seconds_per_gpu_step"].get<double>(), 0.0);
}

// Every thread budget gives the same, manifest-exact report (byte for byte:
// it has no timings): one thread;
// read-ahead that decodes while it is ahead; read-ahead plus decode helper
// threads; several workers. Traces large enough for many decode batches
// (256 KiB reads).
TEST(GeneratedWindowsTest, EveryThreadBudgetGivesTheSameExactReport) {
  testing::TempDir tmp;
  auto gen = testing::RunCommand(Tracegen("job --out " + tmp.Sub("jobs") +
                                          " --job j1 --run r1 --mode 1node --hosts 2 "
                                          "--gpus-per-host 4 --kernels-per-step 3000 --seed 5 "
                                          "--manifest " +
                                          tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
  const std::string run = tmp.Sub("jobs/j1/r1");
  const std::string one_file = tmp.Sub("jobs/" + manifest["files"][0]["path"].get<std::string>());
  for (const std::string& target : {run, one_file}) {
    json reference = RunJson(Analyze("--threads 1 '" + target + "'"));
    ASSERT_FALSE(reference.is_null());
    if (target == run) ExpectDevicesMatchManifest(reference, manifest);
    EXPECT_GT(reference["devices"].size(), 3u);
    std::vector<std::string> variants = {"--threads 2", "--threads 3", "--threads 4"};
#ifdef PROFWATCH_HAVE_ISAL
    variants.push_back("--threads 2 --inflate isal");
#endif
    for (const std::string& variant : variants) {
      SCOPED_TRACE(target + " " + variant);
      json j = RunJson(Analyze(variant + " '" + target + "'"));
      EXPECT_EQ(j.dump(), reference.dump());
    }
  }
}

TEST(GeneratedWindowsTest, OneGpuPerProcessWindowSplitOverThreeDirsIsOneWindow) {
  testing::TempDir tmp;
  auto gen = testing::RunCommand(Tracegen("job --out " + tmp.Sub("jobs") +
                                          " --job j1 --run r1 --mode 1gpu --hosts 2 "
                                          "--gpus-per-host 4 --split-dirs 3 --split-gap 2 "
                                          "--kernels-per-step 40 --seed 4 --manifest " +
                                          tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
  ASSERT_EQ(manifest["windows"][0]["ts_dirs"].size(), 3u);
  auto reports = RunJsonLines(Analyze(tmp.Sub("jobs/j1/r1")));
  ASSERT_EQ(reports.size(), 1u) << "three adjacent <ts> dirs form one window";
  const json& j = reports[0];
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["files"].size(), 8u);
  EXPECT_EQ(j["timestamp_dirs"].size(), 3u);
  EXPECT_EQ(j["launcher_mode"], "1-GPU/proc");
  ExpectDevicesMatchManifest(j, manifest);
}

TEST(GeneratedWindowsTest, StaleWindowTenMinutesOlderIsNotMerged) {
  testing::TempDir tmp;
  auto gen = testing::RunCommand(Tracegen("job --out " + tmp.Sub("jobs") +
                                          " --job j1 --run r1 --mode 1node --hosts 2 "
                                          "--gpus-per-host 2 --split-dirs 2 --stale "
                                          "--kernels-per-step 20 --seed 5"));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  auto reports = RunJsonLines(Analyze(tmp.Sub("jobs/j1/r1")));
  ASSERT_EQ(reports.size(), 2u) << "the stale window is reported on its own";
  EXPECT_EQ(reports[1]["gpus"], 4) << "the newest window holds exactly its own GPUs";
  EXPECT_EQ(reports[1]["timestamp_dirs"].size(), 2u);
  auto latest = RunJsonLines(Analyze("--window latest " + tmp.Sub("jobs/j1/r1")));
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0]["window"], reports[1]["window"]);
}

TEST(GeneratedWindowsTest, ExactlyOneMillionEventsIsFlaggedTruncated) {
  testing::TempDir tmp;
  auto gen = testing::RunCommand(Tracegen("file --out " + tmp.Sub("h.trace.json.gz") +
                                          " --gpus 1 --events 1000100 --cap --gzip-level 1"));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  json j = RunJson(Analyze(tmp.Sub("h.trace.json.gz")));
  // 1,000,000 trace events plus the process/thread metadata written apart.
  EXPECT_GT(j["events"].get<int64_t>(), 1000000);
  EXPECT_LT(j["events"].get<int64_t>(), 1000100);
  EXPECT_EQ(j["truncated"], true);
  auto table = testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze " +
                                   tmp.Sub("h.trace.json.gz"));
  EXPECT_NE(table.out.find("WARNING: truncated"), std::string::npos) << table.out;
}

TEST(GeneratedWindowsTest, NvidiaKernelNamesAreCountedAndClassified) {
  testing::TempDir tmp;
  auto gen = testing::RunCommand(Tracegen("file --out " + tmp.Sub("n.trace.json.gz") +
                                          " --vendor nvidia --gpus 2 --streams 2 --seed 9 "
                                          "--manifest " +
                                          tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
  json j = RunJson(Analyze(tmp.Sub("n.trace.json.gz")));
  EXPECT_EQ(j["rule_set"], "nvidia");
  EXPECT_EQ(j["gpus"], 2);
  ExpectDevicesMatchManifest(j, manifest);
  std::optional<double> other;
  const double total = j["total_kernel_seconds_per_gpu_step"].get<double>();
  for (const auto& f : j["families"]) {
    // null when no kernel landed in other (issue #65: absent, never 0).
    if (f["family"] == "other" && f["seconds_per_gpu_step"].is_number()) {
      other = f["seconds_per_gpu_step"].get<double>();
    }
  }
  EXPECT_GT(total, 0.0);
  EXPECT_LT(other.value_or(0), 0.5 * total) << "most NVIDIA kernels land in named families";
  // profile_drill's name test only knows NCCL among NVIDIA kernels (it misses
  // cutlass/nvjet/sm90 GEMMs): drill mode reports a smaller total.
  auto drill = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                                   "' analyze --format drill " + tmp.Sub("n.trace.json.gz"));
  ASSERT_EQ(drill.exit_code, 0) << drill.err;
  const std::string key = "Total kernel time: ";
  const size_t at = drill.out.find(key);
  ASSERT_NE(at, std::string::npos) << drill.out;
  const double drill_total = std::stod(drill.out.substr(at + key.size()));
  EXPECT_LT(drill_total, 0.5 * total);
}

// Source selection between a host's .trace.json.gz and .xplane.pb
// (tests/fixtures/xplane: the same two-GPU window in both forms; expected
// values in expected.txt).
class SourceSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    xplane_ = testing::ReadFile(testing::ProjectFixture("xplane/two_gpus_steps.xplane.pb"));
    json_gz_ = testing::ReadFile(testing::ProjectFixture("xplane/two_gpus_steps.trace.json.gz"));
    ASSERT_FALSE(xplane_.empty());
    ASSERT_FALSE(json_gz_.empty());
  }
  std::string xplane_, json_gz_;
};

TEST_F(SourceSelectionTest, JsonAndXplaneGiveTheSameDevices) {
  testing::TempDir tmp;
  const std::string dir = tmp.Sub("2025_01_15_10_00_00");
  testing::WriteFile(dir + "/h0.xplane.pb", xplane_);
  testing::WriteFile(dir + "/h0.trace.json.gz", json_gz_);
  json from_json = RunJson(Analyze("--source json " + dir));
  json from_xplane = RunJson(Analyze("--source xplane " + dir));
  EXPECT_EQ(from_json["format"], "json");
  EXPECT_EQ(from_xplane["format"], "xplane");
  ASSERT_EQ(from_json["devices"].size(), 2u);
  ASSERT_EQ(from_xplane["devices"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(from_json["devices"][i]["device"], from_xplane["devices"][i]["device"]);
    EXPECT_EQ(from_json["devices"][i]["kernels"], from_xplane["devices"][i]["kernels"]);
    EXPECT_EQ(from_json["devices"][i]["busy_seconds"], from_xplane["devices"][i]["busy_seconds"]);
  }
  // expected.txt: GPU:0 busy 15751500 ps; GPU:1 5000500 ps of stream events,
  // of which a 250000 ps MemcpyD2D is a memory op, not a kernel.
  EXPECT_NEAR(from_xplane["devices"][0]["busy_seconds"].get<double>(), 15751500e-12, 1e-15);
  EXPECT_NEAR(from_xplane["devices"][1]["busy_seconds"].get<double>(), 4750500e-12, 1e-15);
  EXPECT_EQ(from_xplane["devices"][1]["memops"], 1);
  // auto with an intact JSON reads the JSON.
  EXPECT_EQ(RunJson(Analyze(dir))["format"], "json");
}

TEST_F(SourceSelectionTest, AutoReadsTheXplaneWhenTheJsonIsCutShort) {
  testing::TempDir tmp;
  const std::string dir = tmp.Sub("2025_01_15_10_00_00");
  testing::WriteFile(dir + "/h0.xplane.pb", xplane_);
  testing::WriteFile(dir + "/h0.trace.json.gz", json_gz_.substr(0, json_gz_.size() / 2));
  json j = RunJson(Analyze(dir));
  EXPECT_EQ(j["format"], "xplane");
  EXPECT_EQ(j["gpus"], 2);
  EXPECT_EQ(j["truncated"], false);
  // --source json insists on the cut JSON: its error is reported (exit 3).
  auto r = testing::RunCommand(Analyze("--source json " + dir));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("h0.trace.json.gz"), std::string::npos) << r.err;
}

// Issue #40: collectives of generated JAX windows, every kind the generator
// writes, against its manifest (calls, summed kernel time, and exposed time
// computed by the generator from its own intervals). AMD: RCCL's generic
// kernel is the all-reduce its hlo_op names, RaggedAllToAll an all-to-all,
// DeepEP's custom calls other; NVIDIA: NCCL's kernel names and hlo_ops;
// both: the all-to-all blocker on the compute stream. JAX traces carry no
// sizes: bytes and bandwidths are null with a note, never 0.
TEST(GeneratedWindowsTest, CollectivesOfEveryGeneratedKindMatchTheManifest) {
  for (const char* vendor : {"amd", "nvidia"}) {
    SCOPED_TRACE(vendor);
    testing::TempDir tmp;
    const std::string file = tmp.Sub(std::string(vendor) + ".trace.json.gz");
    auto gen =
        testing::RunCommand(Tracegen(std::string("file --vendor ") + vendor + " --out " + file +
                                     " --gpus 2 --streams 3 --kernels-per-step 80 "
                                     "--seed 5 --blocker-us 3000 --manifest " +
                                     tmp.Sub("m.json")));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
    const json& truth = manifest["files"][0]["collectives"];
    const json j = RunJson(Analyze("'" + file + "'"));
    const double divisor = j["divisor"].get<double>();
    ASSERT_EQ(divisor, 6);
    ASSERT_EQ(j["collectives"].size(), truth.size()) << j["collectives"].dump();
    EXPECT_GE(truth.size(), 2u);
    for (const auto& c : j["collectives"]) {
      const std::string kind = c["collective"];
      SCOPED_TRACE(kind);
      ASSERT_TRUE(truth.contains(kind));
      const json& t = truth[kind];
      EXPECT_EQ(c["calls"].get<int64_t>(), t["calls"].get<int64_t>());
      EXPECT_NEAR(c["kernel_seconds_per_gpu_step"].get<double>(),
                  t["ps"].get<int64_t>() * 1e-12 / divisor, 1e-15);
      EXPECT_NEAR(c["exposed_seconds_per_gpu_step"].get<double>(),
                  t["exposed_ps"].get<int64_t>() * 1e-12 / divisor, 1e-15);
      EXPECT_GT(t["exposed_ps"].get<int64_t>(), 0);
      EXPECT_LT(t["exposed_ps"].get<int64_t>(), t["ps"].get<int64_t>() + 1);
      EXPECT_TRUE(c["bytes_per_gpu_step"].is_null());
      EXPECT_TRUE(c["busbw_bytes_per_second"].is_null());
      EXPECT_FALSE(c["note"].is_null());
    }
  }
}

// The diagnosis names the dominant exposed collective's process group where
// the trace does (Process Group Description), and is silent about it where
// the description is torch's "undefined" or absent. The generator's
// all_gather runs in the group it describes as "fsdp".
TEST(GeneratedWindowsTest, DiagnosisNamesTheProcessGroupOnlyWhereTheTraceDoes) {
  for (const char* pg : {"named", "undefined", "absent"}) {
    SCOPED_TRACE(pg);
    testing::TempDir tmp;
    const std::string file = tmp.Sub("n0.pt.trace.json.gz");
    auto gen = testing::RunCommand(Tracegen(std::string("kineto --pg-desc ") + pg + " --out " +
                                            file + " --manifest " + tmp.Sub("m.json")));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
    std::map<std::string, std::set<std::string>> groups;  // kind -> descriptions
    for (const json& c : manifest["files"][0]["calls"]) {
      const json& d = c["process_group_description"];
      if (d.is_string() && d != "undefined") groups[c["kind"]].insert(d.get<std::string>());
    }
    const bool named = std::string(pg) == "named";
    EXPECT_EQ(groups.empty(), !named);
    const json j = RunJson(Analyze("'" + file + "'"));
    const json& dominant = j["diagnosis"]["exposed_collective"];
    ASSERT_EQ(dominant["collective"], "all_gather");
    for (const json& c : j["collectives"]) {
      std::set<std::string> got;
      for (const json& g : c["process_groups"]) got.insert(g["description"].get<std::string>());
      EXPECT_EQ(got, groups[c["collective"]]) << c["collective"];
    }
    std::set<std::string> got;
    for (const json& g : dominant["process_groups"]) {
      got.insert(g["description"].get<std::string>());
      EXPECT_EQ(g["ranks"], "[0, 1, 2, 3, 4, 5, 6, 7]");
    }
    EXPECT_EQ(got, groups["all_gather"]);
    auto table =
        testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze '" + file + "'");
    ASSERT_EQ(table.exit_code, 0) << table.err;
    const size_t line = table.out.find("exposed collective");
    ASSERT_NE(line, std::string::npos) << table.out;
    const std::string text = table.out.substr(line, table.out.find('\n', line) - line);
    EXPECT_EQ(text.find("process group") != std::string::npos, named) << text;
    if (named) {
      EXPECT_NE(text.find(", process group 'fsdp'"), std::string::npos) << text;
    }
  }
}

// Issue #40: a generated PyTorch Kineto window with collectives of every
// kind (profwatch-tracegen kineto), in each form the generator writes.
// Every figure is computed here from the generator's parameters in its
// manifest (elements, dtype, group size per call kind; calls, kernel and
// exposed time by construction): bytes by the element sizes below, algbw
// and busbw by nccl-tests' PERFORMANCE.md factors.
struct ExpectedCollective {
  int64_t calls = 0, ps = 0, exposed_ps = 0, sized_calls = 0, sized_ps = 0, bus_ps = 0;
  double bytes = 0, bus_bytes = 0;
  bool sized = false;
  std::set<int64_t> group_sizes;
};

int64_t ElementBytes(const std::string& dtype) {
  if (dtype == "BFloat16") return 2;
  if (dtype == "Float") return 4;
  if (dtype == "bf16") return 2;  // HLO's names
  if (dtype == "f32") return 4;
  ADD_FAILURE() << "no element size for " << dtype;
  return 0;
}

double BusFactor(const std::string& kind, int64_t n) {
  const double r = static_cast<double>(n);
  if (kind == "all_reduce") return 2 * (r - 1) / r;
  if (kind == "all_gather" || kind == "reduce_scatter" || kind == "all_to_all") return (r - 1) / r;
  return 1;  // broadcast, reduce, send_recv
}

// Adds a manifest call's count and times to its kind's entry.
ExpectedCollective& AddTimes(std::map<std::string, ExpectedCollective>* out, const json& c) {
  ExpectedCollective& e = (*out)[c["kind"].get<std::string>()];
  e.calls += c["calls"].get<int64_t>();
  e.ps += c["ps"].get<int64_t>();
  e.exposed_ps += c["exposed_ps"].get<int64_t>();
  return e;
}

std::map<std::string, ExpectedCollective> ExpectedFromManifest(const json& file) {
  std::map<std::string, ExpectedCollective> out;
  for (const json& c : file["calls"]) {
    const std::string kind = c["kind"];
    const int64_t calls = c["calls"], ps = c["ps"];
    ExpectedCollective& e = AddTimes(&out, c);
    if (!c["group_size"].is_null()) e.group_sizes.insert(c["group_size"].get<int64_t>());
    if (kind == "other" || c["dtype"].is_null()) continue;
    const int64_t elements = kind == "all_gather" ? c["out_nelems"] : c["in_nelems"];
    const double bytes = static_cast<double>(calls * elements * ElementBytes(c["dtype"]));
    e.sized = true;
    e.sized_calls += calls;
    e.sized_ps += ps;
    e.bytes += bytes;
    if (c["group_size"].is_null()) continue;  // no bus factor without a group size
    e.bus_ps += ps;
    e.bus_bytes += bytes * BusFactor(kind, c["group_size"]);
  }
  return out;
}

// The same from a `jax-collectives` manifest: per HLO instruction its
// operand and output arrays (dtype, dims) and replica groups. Bytes are the
// operands' (the outputs' for an all-gather); an instruction without a
// group size (collective-permute) has no bus bandwidth.
std::map<std::string, ExpectedCollective> ExpectedFromJaxManifest(const json& file) {
  std::map<std::string, ExpectedCollective> out;
  for (const json& c : file["calls"]) {
    const std::string kind = c["kind"];
    const int64_t calls = c["calls"], ps = c["ps"];
    ExpectedCollective& e = AddTimes(&out, c);
    int64_t call_bytes = 0;
    for (const json& a : c[kind == "all_gather" ? "outputs" : "operands"]) {
      int64_t elements = 1;
      for (const json& d : a["dims"]) elements *= d.get<int64_t>();
      call_bytes += elements * ElementBytes(a["dtype"]);
    }
    const double bytes = static_cast<double>(calls * call_bytes);
    e.sized = true;
    e.sized_calls += calls;
    e.sized_ps += ps;
    e.bytes += bytes;
    if (c["group_size"].is_null()) continue;
    e.group_sizes.insert(c["group_size"].get<int64_t>());
    e.bus_ps += ps;
    e.bus_bytes += bytes * BusFactor(kind, c["group_size"]);
  }
  return out;
}

void ExpectCollectivesMatch(const json& report, const json& file,
                            const std::map<std::string, ExpectedCollective>& expected) {
  const double divisor = file["gpus"].get<double>() * file["steps"].get<double>();
  ASSERT_EQ(report["divisor"].get<double>(), divisor);
  ASSERT_EQ(report["collectives"].size(), expected.size()) << report["collectives"].dump();
  std::string most_exposed;
  for (const auto& [kind, e] : expected) {
    if (most_exposed.empty() || e.exposed_ps > expected.at(most_exposed).exposed_ps) {
      most_exposed = kind;
    }
  }
  auto near = [](const json& got, double want) {
    ASSERT_TRUE(got.is_number()) << got;
    EXPECT_NEAR(got.get<double>(), want, std::abs(want) * 1e-12 + 1e-15);
  };
  for (const json& c : report["collectives"]) {
    const std::string kind = c["collective"];
    SCOPED_TRACE(kind);
    ASSERT_TRUE(expected.contains(kind));
    const ExpectedCollective& e = expected.at(kind);
    EXPECT_EQ(c["calls"].get<int64_t>(), e.calls);
    near(c["calls_per_gpu_step"], static_cast<double>(e.calls) / divisor);
    near(c["kernel_seconds_per_gpu_step"], static_cast<double>(e.ps) * 1e-12 / divisor);
    near(c["exposed_seconds_per_gpu_step"], static_cast<double>(e.exposed_ps) * 1e-12 / divisor);
    EXPECT_EQ(c["group_sizes"].get<std::set<int64_t>>(), e.group_sizes);
    if (!e.sized) {
      EXPECT_TRUE(c["bytes_per_gpu_step"].is_null());
      EXPECT_TRUE(c["algbw_bytes_per_second"].is_null());
      EXPECT_TRUE(c["busbw_bytes_per_second"].is_null());
      EXPECT_FALSE(c["note"].is_null());
      continue;
    }
    EXPECT_EQ(c["sized_calls"].get<int64_t>(), e.sized_calls);
    near(c["bytes_per_gpu_step"], e.bytes / divisor);
    near(c["algbw_bytes_per_second"], e.bytes / (static_cast<double>(e.sized_ps) * 1e-12));
    if (e.bus_ps == 0) {
      EXPECT_TRUE(c["busbw_bytes_per_second"].is_null());
      EXPECT_FALSE(c["note"].is_null());
      continue;
    }
    near(c["busbw_bytes_per_second"], e.bus_bytes / (static_cast<double>(e.bus_ps) * 1e-12));
  }
  EXPECT_EQ(report["diagnosis"]["exposed_collective"]["collective"], most_exposed);
}

TEST(GeneratedWindowsTest, KinetoCollectivesOfEveryKindMatchTheGeneratorsParameters) {
  // nccl: NCCL kernel names with the args; rccl: RCCL's generic kernel with
  // the args (the kinds come from them alone); rccl-bare: the generic kernel
  // without args, so every call is `other` with no size; cpu-op: the args
  // only on the record_param_comms operator, joined by External id (the
  // all_to_allv's kernel says SendRecv: only the operator says all_to_all).
  for (const char* form : {"nccl", "rccl", "rccl-bare", "cpu-op"}) {
    SCOPED_TRACE(form);
    testing::TempDir tmp;
    const std::string file = tmp.Sub("n0.pt.trace.json.gz");
    auto gen = testing::RunCommand(Tracegen(std::string("kineto --form ") + form + " --out " +
                                            file + " --gpus 2 --steps 3 --seed 7 --manifest " +
                                            tmp.Sub("m.json")));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
    const json j = RunJson(Analyze("'" + file + "'"));
    ExpectCollectivesMatch(j, manifest["files"][0], ExpectedFromManifest(manifest["files"][0]));
    EXPECT_EQ(j["collectives"].size(), std::string(form) == "rccl-bare" ? 1u : 8u);
  }
}

// A generated JAX window (profwatch-tracegen jax-collectives): the trace
// names each call's HLO instruction, the sibling .xplane.pb's module gives
// its shapes and replica groups (explicit lists and the iota form). Every
// figure is computed here from the manifest's arrays and groups;
// collective-permute has no replica groups, so its bus bandwidth is absent.
// Without the .xplane.pb the same calls are counted but carry no size.
TEST(GeneratedWindowsTest, JaxCollectivesOfEveryKindAreSizedFromTheXplanesHlo) {
  testing::TempDir tmp;
  auto gen = testing::RunCommand(Tracegen("jax-collectives --out " + tmp.Sub("jobs") +
                                          " --gpus 2 --steps 4 --seed 9 --start "
                                          "2026_11_27_04_00_00 --manifest " +
                                          tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
  const json& file = manifest["files"][0];
  const std::string dir = tmp.Sub("jobs/2026_11_27_04_00_00");
  const json j = RunJson(Analyze("--profile-steps 4 '" + dir + "'"));
  EXPECT_EQ(j["format"], "json");
  EXPECT_EQ(j["rule_set"], "nvidia");
  EXPECT_EQ(j["gpus"], 2);
  ExpectCollectivesMatch(j, file, ExpectedFromJaxManifest(file));
  EXPECT_EQ(j["collectives"].size(), 5u);
  std::set<std::string> forms;
  for (const json& c : file["calls"]) {
    if (!c["replica_groups"].is_null()) forms.insert(c["replica_groups"].get<std::string>());
  }
  EXPECT_EQ(forms, (std::set<std::string>{"iota", "list"}));
  for (const json& c : j["collectives"]) {
    if (c["collective"] != "send_recv") continue;
    EXPECT_FALSE(c["bytes_per_gpu_step"].is_null());
    EXPECT_TRUE(c["busbw_bytes_per_second"].is_null());
    EXPECT_TRUE(c["group_sizes"].empty());
  }

  ASSERT_TRUE(std::filesystem::remove(file["xplane"].get<std::string>()));
  const json bare = RunJson(Analyze("--profile-steps 4 '" + dir + "'"));
  ASSERT_EQ(bare["collectives"].size(), 5u);
  for (const json& c : bare["collectives"]) {
    SCOPED_TRACE(c["collective"].get<std::string>());
    EXPECT_EQ(c["sized_calls"], 0);
    EXPECT_TRUE(c["bytes_per_gpu_step"].is_null());
    EXPECT_TRUE(c["algbw_bytes_per_second"].is_null());
    ASSERT_TRUE(c["note"].is_string());
    EXPECT_NE(c["note"].get<std::string>().find(".xplane.pb"), std::string::npos) << c["note"];
  }
}

// Issue #48: a Kineto window holds as many steps as its ProfilerStep#N
// markers, whatever the schedule (1, 2, 5 and 6 active steps are common):
// every per-step figure divides by them, not by the default 3; an explicit
// --profile-steps still wins.
TEST(GeneratedWindowsTest, KinetoSchedulesOfOneTwoFiveAndSixStepsDivideByTheirMarkers) {
  for (int steps : {1, 2, 5, 6}) {
    SCOPED_TRACE(steps);
    testing::TempDir tmp;
    const std::string file = tmp.Sub("n0.pt.trace.json.gz");
    auto gen = testing::RunCommand(Tracegen("kineto --out " + file + " --gpus 2 --steps " +
                                            std::to_string(steps) + " --seed 3 --manifest " +
                                            tmp.Sub("m.json")));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
    const json j = RunJson(Analyze("'" + file + "'"));
    EXPECT_EQ(j["profile_steps"], steps);
    EXPECT_EQ(j["profile_steps_source"], "trace");
    EXPECT_TRUE(j["profile_steps_disagreement"].is_null());
    ExpectCollectivesMatch(j, manifest["files"][0], ExpectedFromManifest(manifest["files"][0]));
    // Launches per GPU per step: every kernel over the GPUs and the marked steps.
    double launches = 0;
    for (const json& f : j["families"]) launches += f["launches_per_gpu_step"].get<double>();
    EXPECT_NEAR(launches, manifest["files"][0]["kernel_launches"].get<double>() / (2.0 * steps),
                1e-9);
    const json flag = RunJson(Analyze("--profile-steps 3 '" + file + "'"));
    EXPECT_EQ(flag["profile_steps"], 3);
    EXPECT_EQ(flag["profile_steps_source"], "flag");
  }
}

// Ranks whose Kineto files mark different step counts: flagged, the most
// common count (of equals, the larger) divides.
TEST(GeneratedWindowsTest, KinetoRanksThatDisagreeOnTheirStepsAreFlagged) {
  testing::TempDir tmp;
  const std::string dir = tmp.Sub("2025_01_15_10_00_00");
  for (const auto& [rank, steps] : {std::pair{0, 2}, std::pair{1, 5}, std::pair{2, 5}}) {
    auto gen = testing::RunCommand(Tracegen("kineto --out " + dir + "/r" + std::to_string(rank) +
                                            ".pt.trace.json.gz --gpus 1 --steps " +
                                            std::to_string(steps)));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
  }
  const json j = RunJson(Analyze("'" + dir + "'"));
  EXPECT_EQ(j["profile_steps"], 5);
  EXPECT_EQ(j["profile_steps_source"], "trace");
  ASSERT_TRUE(j["profile_steps_disagreement"].is_string()) << j.dump();
  EXPECT_NE(j["profile_steps_disagreement"].get<std::string>().find("2 files mark 5 steps"),
            std::string::npos)
      << j["profile_steps_disagreement"];
  auto table =
      testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze '" + dir + "'");
  EXPECT_NE(table.out.find("!!! WARNING: Kineto files disagree"), std::string::npos) << table.out;
}

// Issue #48: NCCL before ncclDevKernel_* launches every collective as
// ncclKernel_SendRecv_*; the trace has no Collective name args and no
// record_param_comms, and a kernel's External id is its correlation id.
// Kind and size come from the nccl:* operator that launched each kernel
// (an _all_gather_base's and _reduce_scatter_base's group size from the
// c10d:: operator around it; the others have none: no bus bandwidth); a
// kernel whose launch is not in the window keeps the kind its name says,
// unsized. The compute kernels' aten::mm FLOPs are counted exactly though
// every External id names an unrelated operator.
TEST(GeneratedWindowsTest, OldNcclCollectivesTakeKindAndSizeFromTheirLaunchingOperators) {
  testing::TempDir tmp;
  const std::string file = tmp.Sub("n0.pt.trace.json.gz");
  auto gen =
      testing::RunCommand(Tracegen("kineto --form old-nccl --out " + file +
                                   " --gpus 2 --steps 3 --seed 5 --manifest " + tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
  const json& truth = manifest["files"][0];
  const json j = RunJson(Analyze("'" + file + "'"));
  ExpectCollectivesMatch(j, truth, ExpectedFromManifest(truth));
  EXPECT_EQ(j["collectives"].size(), 8u);
  const json& f = j["flops"];
  ASSERT_TRUE(f["matmul_per_gpu_step"].is_number()) << f.dump();
  EXPECT_EQ(f["matmul_per_gpu_step"].get<double>(),
            truth["matmul_flops"].get<double>() / j["divisor"].get<double>());
  EXPECT_EQ(f["unknown_ops"], 0);
  EXPECT_EQ(f["coverage"], 1.0);
}

// Issue #48: PyTorch's symmetric-memory all-reduces and vLLM's custom one
// are all-reduces sized by their operators' shapes (no group size in the
// trace: no bus bandwidth, and the note says why), not `other`.
TEST(GeneratedWindowsTest, SymmetricMemoryAllReducesAreSizedByTheirOperators) {
  testing::TempDir tmp;
  const std::string file = tmp.Sub("n0.pt.trace.json.gz");
  auto gen =
      testing::RunCommand(Tracegen("kineto --form symm-mem --out " + file +
                                   " --gpus 2 --steps 2 --seed 8 --manifest " + tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
  const json& truth = manifest["files"][0];
  const json j = RunJson(Analyze("'" + file + "'"));
  ExpectCollectivesMatch(j, truth, ExpectedFromManifest(truth));
  ASSERT_EQ(j["collectives"].size(), 1u);
  const json& c = j["collectives"][0];
  EXPECT_EQ(c["collective"], "all_reduce");
  ASSERT_TRUE(c["note"].is_string());
  EXPECT_NE(c["note"].get<std::string>().find("group size"), std::string::npos) << c["note"];
}

// Issue #61: DeepEP's expert-parallel exchange (deep_ep::, DeepSeek's
// dpsk::ep::) is communication: dispatch and combine are all-to-alls, the
// notify kernel a collective of no modelled kind; every call's kernel and
// exposed time equal the manifest's, unsized (nothing in the trace gives
// their bytes), in the comm_other family.
TEST(GeneratedWindowsTest, DeepEpKernelsAreAllToAllCommunication) {
  testing::TempDir tmp;
  const std::string file = tmp.Sub("n0.pt.trace.json.gz");
  auto gen =
      testing::RunCommand(Tracegen("kineto --form deepep --out " + file +
                                   " --gpus 2 --steps 2 --seed 6 --manifest " + tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const json truth = json::parse(testing::ReadFile(tmp.Sub("m.json")))["files"][0];
  const json j = RunJson(Analyze("'" + file + "'"));
  ExpectCollectivesMatch(j, truth, ExpectedFromManifest(truth));
  ASSERT_EQ(j["collectives"].size(), 2u) << j["collectives"].dump();
  for (const json& c : j["collectives"]) {
    EXPECT_EQ(c["sized_calls"], 0) << c.dump();
    EXPECT_TRUE(c["bytes_per_gpu_step"].is_null()) << c.dump();
  }
  int64_t comm_ps = 0;
  for (const json& c : truth["calls"]) comm_ps += c["ps"].get<int64_t>();
  double comm_other = -1;
  for (const json& f : j["families"]) {
    if (f["family"] == "comm_other") comm_other = f["seconds_per_gpu_step"].get<double>();
    if (f["family"] == "other") {
      EXPECT_EQ(f["launches"], 0) << f.dump();
    }
  }
  EXPECT_NEAR(comm_other, static_cast<double>(comm_ps) * 1e-12 / 4, 1e-15);
}

// Issue #61: the attention kernels of AOTriton (PyTorch's SDPA on ROCm),
// SageAttention and CK are attention, and the FLOPs of the SDPA operators
// that launched them are counted there: equal to the manifest.
TEST(GeneratedWindowsTest, AttentionKernelsOfEveryLibraryCarryTheirSdpaFlops) {
  for (const char* kernel : {"aotriton", "sage", "ck"}) {
    SCOPED_TRACE(kernel);
    testing::TempDir tmp;
    const std::string file = tmp.Sub("m0.pt.trace.json.gz");
    auto gen = testing::RunCommand(
        Tracegen(std::string("kineto-math --attention-kernel ") + kernel + " --out " + file +
                 " --gpus 2 --steps 2 --seed 4 --manifest " + tmp.Sub("m.json")));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const json truth = json::parse(testing::ReadFile(tmp.Sub("m.json")))["files"][0];
    const json j = RunJson(Analyze("--rules nvidia '" + file + "'"));
    const double divisor = j["divisor"].get<double>();
    ASSERT_EQ(divisor, 4);
    double attention_seconds = -1;
    for (const json& f : j["families"]) {
      if (f["family"] == "attention") attention_seconds = f["seconds_per_gpu_step"].get<double>();
    }
    EXPECT_NEAR(attention_seconds, truth["families"]["attention"].get<double>() * 1e-12 / divisor,
                1e-15);
    const json& f = j["flops"];
    ASSERT_TRUE(f["attention_per_gpu_step"].is_number()) << f.dump();
    EXPECT_GT(f["attention_per_gpu_step"].get<double>(), 0);
    EXPECT_EQ(f["attention_per_gpu_step"].get<double>(),
              truth["attention_flops"].get<double>() / divisor);
    std::map<std::string, double> by_family;
    for (const json& fam : f["families"]) by_family[fam["family"]] = fam["flops_per_gpu_step"];
    EXPECT_EQ(by_family["attention"], truth["attention_flops"].get<double>() / divisor);
  }
}

// Issue #48: every second of math-kernel time is counted or named. A GEMM
// and a flash attention launched by operators with shapes are counted (the
// flash kernel through the SDPA operator around its launcher), in the
// family of the kernel that ran them; an addmm without shapes, vLLM's
// unified_attention (no formula) and a GEMM no operator launched are
// uncounted, named by their operator where the trace says which, else by
// the kernel; FBGEMM's kernels are no GEMM though their parameters name
// fbgemm_gpu::; coverage below 95% makes MFU a marked lower bound. The same
// with External ids that are correlation ids (older Kineto).
TEST(GeneratedWindowsTest, MathTimeIsCountedOrNamedAndFbgemmKernelsAreNoGemm) {
  for (const char* ext : {"own", "correlation"}) {
    SCOPED_TRACE(ext);
    testing::TempDir tmp;
    const std::string file = tmp.Sub("m0.pt.trace.json.gz");
    auto gen = testing::RunCommand(
        Tracegen(std::string("kineto-math --external-id ") + ext + " --out " + file +
                 " --gpus 2 --steps 2 --seed 4 --manifest " + tmp.Sub("m.json")));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
    const json& truth = manifest["files"][0];
    const json j = RunJson(Analyze("'" + file + "'"));
    EXPECT_EQ(j["rule_set"], "nvidia");
    EXPECT_EQ(j["profile_steps"], 2);
    const double divisor = j["divisor"].get<double>();
    ASSERT_EQ(divisor, 4);
    auto per = [&](int64_t ps) { return static_cast<double>(ps) * 1e-12 / divisor; };
    std::map<std::string, double> families;
    for (const json& f : j["families"]) {
      if (f["launches"].get<int64_t>() > 0) families[f["family"]] = f["seconds_per_gpu_step"];
    }
    ASSERT_EQ(families.size(), truth["families"].size()) << j["families"].dump();
    for (const auto& [family, ps] : truth["families"].items()) {
      EXPECT_NEAR(families[family], per(ps.get<int64_t>()), 1e-15) << family;
    }
    const json& f = j["flops"];
    ASSERT_TRUE(f["total_per_gpu_step"].is_number()) << f.dump();
    const double matmul = truth["matmul_flops"].get<double>() / divisor;
    const double attention = truth["attention_flops"].get<double>() / divisor;
    EXPECT_EQ(f["matmul_per_gpu_step"].get<double>(), matmul);
    EXPECT_EQ(f["attention_per_gpu_step"].get<double>(), attention);
    std::map<std::string, double> by_family;
    for (const json& fam : f["families"]) by_family[fam["family"]] = fam["flops_per_gpu_step"];
    EXPECT_EQ(by_family,
              (std::map<std::string, double>{{"attention", attention}, {"gemm", matmul}}));
    EXPECT_EQ(f["unknown_ops"], truth["unknown_ops"]);
    EXPECT_NEAR(f["math_kernel_seconds_per_gpu_step"].get<double>(), per(truth["math_ps"]), 1e-15);
    const int64_t uncounted_ps =
        truth["math_ps"].get<int64_t>() - truth["counted_math_ps"].get<int64_t>();
    EXPECT_NEAR(f["unknown_kernel_seconds_per_gpu_step"].get<double>(), per(uncounted_ps), 1e-15);
    EXPECT_NEAR(f["coverage"].get<double>(),
                truth["counted_math_ps"].get<double>() / truth["math_ps"].get<double>(), 1e-12);
    std::map<std::pair<std::string, std::string>, double> want, got;
    for (const json& u : truth["uncounted"]) want[{u["name"], u["by"]}] = per(u["ps"]);
    for (const json& u : f["uncounted"]) got[{u["name"], u["by"]}] = u["seconds_per_gpu_step"];
    ASSERT_EQ(got.size(), want.size()) << f["uncounted"].dump();
    for (const auto& [key, seconds] : want) EXPECT_NEAR(got[key], seconds, 1e-15) << key.first;
    EXPECT_EQ(f["mfu_lower_bound"], true);
    ASSERT_TRUE(f["mfu"].is_number()) << f.dump();
    EXPECT_NE(f["mfu_note"].get<std::string>().find("lower bound"), std::string::npos);
  }
}

// Issue #51: a generated trace with known shapes (kineto-math --bytes) has
// per-family bytes equal to its manifest: the GEMM's operands and result,
// the attention operator's query, key, value and output, the elementwise
// add's inputs and output, each once through the kernels its operator
// launched (also when External ids are correlation ids); memcpy/memset
// from CUPTI's byte count, apart from the families.
TEST(GeneratedWindowsTest, BytesPerFamilyEqualTheManifest) {
  for (const char* ext : {"own", "correlation"}) {
    SCOPED_TRACE(ext);
    testing::TempDir tmp;
    const std::string file = tmp.Sub("m0.pt.trace.json.gz");
    auto gen = testing::RunCommand(
        Tracegen(std::string("kineto-math --bytes --external-id ") + ext + " --out " + file +
                 " --gpus 2 --steps 2 --seed 4 --manifest " + tmp.Sub("m.json")));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const json manifest = json::parse(testing::ReadFile(tmp.Sub("m.json")));
    const json& truth = manifest["files"][0];
    const json j = RunJson(Analyze("'" + file + "'"));
    const double divisor = j["divisor"].get<double>();
    ASSERT_EQ(divisor, 4);
    std::map<std::string, double> got, want;
    for (const json& f : j["families"]) {
      if (f["bytes_per_gpu_step"].is_number()) got[f["family"]] = f["bytes_per_gpu_step"];
    }
    for (const auto& [family, bytes] : truth["bytes_by_family"].items()) {
      want[family] = bytes.get<double>() / divisor;
    }
    EXPECT_EQ(got, want) << j["families"].dump();
    const json& b = j["bytes"];
    EXPECT_EQ(b["memop_bytes_per_gpu_step"].get<double>(),
              truth["memop_bytes"].get<double>() / divisor);
    EXPECT_TRUE(b["bytes_coverage"].is_number()) << b.dump();
    EXPECT_EQ(b["peak_hbm_source"].is_string(), true) << b.dump();
  }
}

// Issue #61: the elementwise family (aten::add's kernels, a memory-bound
// kind) has bytes and no FLOPs: on the memory roof, its fraction exactly its
// manifest bytes over its kernels' manifest time over the H100 80GB's HBM
// peak; no intensity (no FLOPs). gemm and attention keep their place by
// intensity.
TEST(GeneratedWindowsTest, MemoryBoundFamilyIsOnTheMemoryRoof) {
  testing::TempDir tmp;
  const std::string file = tmp.Sub("m0.pt.trace.json.gz");
  auto gen =
      testing::RunCommand(Tracegen("kineto-math --bytes --out " + file +
                                   " --gpus 2 --steps 2 --seed 4 --manifest " + tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const json truth = json::parse(testing::ReadFile(tmp.Sub("m.json")))["files"][0];
  int64_t elementwise_ps = 0;
  for (const json& k : truth["kernels"]) {
    if (k["family"] == "elementwise") elementwise_ps += k["ps"].get<int64_t>();
  }
  ASSERT_GT(elementwise_ps, 0);
  const double bytes = truth["bytes_by_family"]["elementwise"].get<double>();
  const json j = RunJson(Analyze("'" + file + "'"));
  const double peak = j["bytes"]["peak_hbm_bytes_per_second"].get<double>();
  EXPECT_EQ(peak, 3.35e12);  // "NVIDIA H100 80GB HBM3", the datasheet's
  std::map<std::string, json> by_family;
  for (const json& f : j["families"]) by_family[f["family"]] = f;
  const json& e = by_family["elementwise"];
  EXPECT_EQ(e["roofline_bound"], "memory") << e.dump();
  EXPECT_TRUE(e["arithmetic_intensity"].is_null()) << e.dump();
  ASSERT_TRUE(e["roofline_fraction"].is_number()) << e.dump();
  EXPECT_EQ(e["roofline_fraction"].get<double>(),
            bytes / (static_cast<double>(elementwise_ps) * 1e-12) / peak);
  EXPECT_EQ(e["bytes_modeled_seconds_per_gpu_step"].get<double>(),
            static_cast<double>(elementwise_ps) * 1e-12 / 4);
  for (const char* math : {"gemm", "attention"}) {
    const json& f = by_family[math];
    EXPECT_TRUE(f["arithmetic_intensity"].is_number()) << f.dump();
    EXPECT_TRUE(f["roofline_bound"].is_string()) << f.dump();
  }
  // No family's modeled time above its own kernel time.
  for (const json& f : j["families"]) {
    if (!f["bytes_modeled_seconds_per_gpu_step"].is_number()) continue;
    EXPECT_LE(f["bytes_modeled_seconds_per_gpu_step"].get<double>(),
              f["seconds_per_gpu_step"].get<double>())
        << f.dump();
  }
}

}  // namespace generated_windows_test
}  // namespace profwatch
