// End-to-end tests of `profwatch analyze` (the real binary) on the real
// Kineto samples, on garbage, and on windows written by the project's own
// generator (tools/tracegen).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/hostile_hlo.h"
#include "testing/test_util.h"

namespace profwatch {
// Named for this file: the unity build compiles it with its neighbours.
namespace analyze_cli_test {

using nlohmann::json;

testing::CommandResult Analyze(const std::string& args, const std::string& cwd = "") {
  return testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze " + args, cwd);
}

json AnalyzeJson(const std::string& args, int expected_exit = 0) {
  auto r = Analyze("--format json " + args);
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  if (r.out.empty()) return json();
  return json::parse(r.out.substr(0, r.out.find('\n')));
}

struct DeviceRef {
  int64_t kernels;
  int64_t kernel_ps;
  int64_t busy_ps;
};

// Reference values from tests/reference/kineto_reference.py (Python stdlib,
// Decimal picoseconds, sorted-interval union), run by hand on the samples:
//   python3 tests/reference/kineto_reference.py ../shared/fixtures/real/kineto/*.gz
const std::map<std::string, DeviceRef> kKinetoRefs = {
    {"a100_alexnet_trace.json.gz", {79, 10692000000, 10630000000}},
    {"a100x2_nccl_data.json.gz", {2700, 162532340000, 155215315000}},
    {"b200_eager_no_metadata.json.gz", {768, 10862916000, 10793638000}},
    {"h100_bert_small.json.gz", {60, 307197000, 307197000}},
    {"mi250_minitoy_train_ROCm6_2_kineto.json.gz", {14, 110881000, 110881000}},
    {"v100_resnet50_worker0.1623143089861.pt.trace.json.gz", {8772, 591532000000, 591532000000}},
};

TEST(AnalyzeCliTest, KinetoSamplesMatchIndependentReference) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(dir, "real/kineto");
  for (const auto& [file, ref] : kKinetoRefs) {
    SCOPED_TRACE(file);
    json j = AnalyzeJson("'" + dir + "/" + file + "'");
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["schema"], "profwatch.window.v1");
    EXPECT_EQ(j["gpus"], 1);
    ASSERT_EQ(j["devices"].size(), 1u);
    const json& d = j["devices"][0];
    EXPECT_EQ(d["kernels"].get<int64_t>(), ref.kernels);
    // Seconds in JSON are doubles: compare at 1 ps resolution.
    EXPECT_NEAR(d["kernel_seconds"].get<double>(), ref.kernel_ps * 1e-12, 1e-12);
    EXPECT_NEAR(d["busy_seconds"].get<double>(), ref.busy_ps * 1e-12, 1e-12);
  }
}

TEST(AnalyzeCliTest, CpuOnlyTraceReportsZeroGpusCleanly) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/kineto/cpu_only_rank-34.pt.trace.json.gz");
  json j = AnalyzeJson("'" + path + "'", /*expected_exit=*/1);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["gpus"], 0);
  EXPECT_EQ(j["devices"].size(), 0u);
  EXPECT_EQ(j["launcher_mode"], "unknown");
  auto table = Analyze("'" + path + "'");
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_NE(table.out.find("GPUs detected    0"), std::string::npos) << table.out;
}

// Issue #61: a Kineto trace of Meta's MTIA accelerator has no GPU kernels;
// the report says what its events are instead of only "no GPU kernels".
TEST(AnalyzeCliTest, MtiaTraceSaysWhatItHolds) {
  testing::TempDir tmp;
  const std::string file = tmp.Sub("mtia.pt.trace.json");
  testing::WriteFile(
      file,
      R"({"schemaVersion":1,"traceEvents":[)"
      R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":5,"args":{}},)"
      R"({"ph":"X","cat":"mtia_runtime","name":"mtiaLaunchKernel","pid":1,"tid":1,"ts":11,"dur":1,)"
      R"("args":{"correlation":7}},)"
      R"({"ph":"X","cat":"mtia_ccp_events","name":"matmul_kernel","pid":2,"tid":3,"ts":12,"dur":3,)"
      R"("args":{"correlation":7}},)"
      R"({"ph":"X","cat":"mtia_ccp_events","name":"add_kernel","pid":2,"tid":3,"ts":16,"dur":1,)"
      R"("args":{}}]})");
  auto table = Analyze("'" + file + "'");
  EXPECT_EQ(table.exit_code, 1) << table.err;
  EXPECT_NE(table.out.find("No GPU kernels found in this window.\nIts 3 events are of Meta's "
                           "MTIA accelerator"),
            std::string::npos)
      << table.out;
  json j = AnalyzeJson("'" + file + "'", /*expected_exit=*/1);
  EXPECT_EQ(j["gpus"], 0);
  EXPECT_EQ(j["dropped_events"]["mtia_event"], 3) << j["dropped_events"];
}

// Issue #63: rocprofv3's JSON output is read (issue #61 refused it naming
// it); one whose process dispatched nothing has no GPU kernels.
TEST(AnalyzeCliTest, RocprofilerSdkJsonWithoutDispatchesHasNoKernels) {
  testing::TempDir tmp;
  const std::string file = tmp.Sub("results.json");
  testing::WriteFile(file, R"({"rocprofiler-sdk-tool":[{"metadata":{"pid":1},"agents":[]}]})");
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze '" + file + "'");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("1 (rocprof)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No GPU kernels"), std::string::npos) << r.out;
}

TEST(AnalyzeCliTest, JsonSchemaHasEveryDocumentedField) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/kineto/h100_bert_small.json.gz");
  json j = AnalyzeJson("'" + path + "'");
  for (const char* key :
       {"files", "timestamp_dirs", "gpus", "profile_steps", "launcher_mode", "events", "truncated",
        "families", "total_kernel_seconds_per_gpu_step", "devices"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_FALSE(j["families"].empty());
  for (const char* key : {"family", "seconds_per_gpu_step", "launches_per_gpu_step", "kernels"}) {
    EXPECT_TRUE(j["families"][0].contains(key)) << key;
  }
  for (const char* key :
       {"file", "device", "kernels", "kernel_seconds", "busy_seconds", "span_seconds", "streams"}) {
    EXPECT_TRUE(j["devices"][0].contains(key)) << key;
  }
  // Per GPU per step: 60 kernels over 1 GPU x 1 step (the trace marks
  // ProfilerStep#6 alone: issue #48).
  EXPECT_EQ(j["profile_steps"], 1);
  EXPECT_EQ(j["profile_steps_source"], "trace");
  double launches = 0;
  for (const auto& f : j["families"]) launches += f["launches_per_gpu_step"].get<double>();
  EXPECT_NEAR(launches, 60.0, 1e-9);
  EXPECT_NEAR(j["total_kernel_seconds_per_gpu_step"].get<double>(), 307197000e-12, 1e-12);
}

// `collectives` in the JSON report: per kind, per GPU per step (1 GPU x 3
// profiled steps by default), reference values from
// tests/reference/collective_reference.py; the diagnosis names the
// collective with the most exposed time. A trace without collectives has an
// empty list, a trace without GPU kernels null.
TEST(AnalyzeCliTest, CollectivesInTheJsonReport) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/kineto/a100x2_nccl_data.json.gz");
  json j = AnalyzeJson("--profile-steps 3 '" + path + "'");
  ASSERT_TRUE(j["collectives"].is_array());
  ASSERT_EQ(j["collectives"].size(), 2u);
  const json& ar = j["collectives"][0];
  EXPECT_EQ(ar["collective"], "all_reduce");
  EXPECT_EQ(ar["calls"], 15);
  EXPECT_NEAR(ar["calls_per_gpu_step"].get<double>(), 5.0, 1e-12);
  EXPECT_NEAR(ar["kernel_seconds_per_gpu_step"].get<double>(), 46'762'159'000e-12 / 3, 1e-15);
  EXPECT_NEAR(ar["exposed_seconds_per_gpu_step"].get<double>(), 39'445'134'000e-12 / 3, 1e-15);
  EXPECT_NEAR(ar["bytes_per_gpu_step"].get<double>(), 306'684'384.0 / 3, 1e-6);
  EXPECT_NEAR(ar["algbw_bytes_per_second"].get<double>(), 6'558'388'033.366894, 1e-3);
  EXPECT_NEAR(ar["busbw_bytes_per_second"].get<double>(), 6'558'388'033.366894, 1e-3);
  EXPECT_EQ(ar["group_sizes"], json::array({2}));
  EXPECT_TRUE(ar["note"].is_null());
  const json& bc = j["collectives"][1];
  EXPECT_EQ(bc["collective"], "broadcast");
  EXPECT_EQ(bc["calls"], 6);
  EXPECT_NEAR(bc["bytes_per_gpu_step"].get<double>(), 638'712.0 / 3, 1e-6);
  const json& dc = j["diagnosis"]["exposed_collective"];
  EXPECT_EQ(dc["collective"], "all_reduce");
  EXPECT_NEAR(dc["exposed_seconds_per_gpu_step"].get<double>(), 39'445'134'000e-12 / 3, 1e-15);
  EXPECT_NEAR(dc["share_of_step"].get<double>(),
              39'445'134'000e-12 / 3 / j["diagnosis"]["step_seconds"].get<double>(), 1e-12);
  auto table = Analyze("--profile-steps 3 '" + path + "'");
  EXPECT_NE(table.out.find("exposed collective     all_reduce 0.013148 s exposed"),
            std::string::npos)
      << table.out;

  PROFWATCH_REQUIRE_SHARED_FIXTURE(bert, "real/kineto/h100_bert_small.json.gz");
  json none = AnalyzeJson("'" + bert + "'");
  EXPECT_TRUE(none["collectives"].is_array());
  EXPECT_TRUE(none["collectives"].empty());
  EXPECT_TRUE(none["diagnosis"]["exposed_collective"].is_null());
  PROFWATCH_REQUIRE_SHARED_FIXTURE(cpu, "real/kineto/cpu_only_rank-34.pt.trace.json.gz");
  EXPECT_TRUE(AnalyzeJson("'" + cpu + "'", 1)["collectives"].is_null());
}

// ProfilerStep#4..#6 span 222442.191, 219726.905 and 224936.243 us on the host
// (read by hand with python3 gzip+json+Decimal); the median is step #4's.
TEST(AnalyzeCliTest, KinetoProfilerStepsGiveInTraceStepTime) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/kineto/a100x2_nccl_data.json.gz");
  json j = AnalyzeJson("'" + path + "'");
  ASSERT_TRUE(j["trace_step_seconds"].is_number());
  EXPECT_NEAR(j["trace_step_seconds"].get<double>(), 0.222442191, 1e-12);
  // Without --step-time the trace is the step source and the gap follows.
  ASSERT_TRUE(j["step"].is_object());
  EXPECT_EQ(j["step"]["source"], "trace");
  const double total = 162532340000e-12 / 3;  // kernel ps / (1 GPU x 3 steps)
  EXPECT_NEAR(j["step"]["minus_kernel_seconds"].get<double>(), 0.222442191 - total, 1e-9);
}

// With no log and no in-trace markers, --step-time is the (config) source.
// (A trace with ProfilerStep markers wins over --step-time: log > trace > config.)
TEST(AnalyzeCliTest, ConfiguredStepTimeGivesTheGap) {
  testing::TempDir tmp;
  const std::string trace =
      R"J({"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)J"
      R"J({"ph":"M","pid":1,"tid":5,"name":"thread_name","args":{"name":"Stream #5"}},)J"
      R"J({"ph":"X","pid":1,"tid":5,"ts":0,"dur":300000,"name":"a.kd"},{}]})J";
  testing::WriteFile(tmp.Sub("h0.trace.json.gz"), testing::Gzip(trace));
  json j = AnalyzeJson("--step-time 0.5 --profile-steps 1 '" + tmp.Sub("h0.trace.json.gz") + "'");
  ASSERT_TRUE(j["step"].is_object());
  EXPECT_EQ(j["step"]["source"], "config");
  EXPECT_NEAR(j["step"]["minus_kernel_seconds"].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR(j["step"]["minus_kernel_ratio"].get<double>(), 0.4, 1e-12);
}

TEST(AnalyzeCliTest, GarbageInputsExitThreeAndNameTheFile) {
  testing::TempDir tmp;
  const std::string full_json =
      R"J({"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)J"
      R"J({"ph":"X","pid":1,"tid":1,"ts":1,"dur":2,"name":"k.kd"}]})J";
  std::string gz = testing::Gzip(full_json);
  std::string bad_utf8 = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"";
  bad_utf8 += "\xff\xfe\"}";
  std::map<std::string, std::string> cases = {
      {"empty.trace.json.gz", ""},
      {"notgzip.trace.json.gz", "this is not gzip at all"},
      {"truncated.trace.json.gz", gz.substr(0, gz.size() / 2)},
      {"gzip_of_text.trace.json.gz", testing::Gzip("hello, world")},
      {"no_events.trace.json.gz", testing::Gzip(R"J({"displayTimeUnit":"ns"})J")},
      {"nested.trace.json.gz", testing::Gzip(std::string(100000, '['))},
      {"bad_utf8.trace.json", bad_utf8},
  };
  for (const auto& [name, bytes] : cases) {
    SCOPED_TRACE(name);
    const std::string path = tmp.Sub(name);
    testing::WriteFile(path, bytes);
    auto r = Analyze("'" + path + "'");
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  }
}

TEST(AnalyzeCliTest, GoodFilesStillReportedBesideABadOne) {
  testing::TempDir tmp;
  const std::string good =
      R"J({"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)J"
      R"J({"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"Stream #7(Kernel)"}},)J"
      R"J({"ph":"X","pid":1,"tid":7,"ts":10,"dur":5,"name":"loop_fusion.kd"},{}]})J";
  testing::WriteFile(tmp.Sub("a.trace.json.gz"), testing::Gzip(good));
  testing::WriteFile(tmp.Sub("b.trace.json.gz"), "garbage");
  auto r = Analyze("--format json '" + tmp.Sub("a.trace.json.gz") + "' '" +
                   tmp.Sub("b.trace.json.gz") + "'");
  EXPECT_EQ(r.exit_code, 3);
  json j = json::parse(r.out);
  EXPECT_EQ(j["gpus"], 1);
  ASSERT_EQ(j["errors"].size(), 1u);
  EXPECT_EQ(j["errors"][0]["file"], tmp.Sub("b.trace.json.gz"));
  EXPECT_EQ(j["errors"][0]["reason"], "corrupt");
}

// Kernels the analysis leaves out are reported in the JSON as serve counts
// them (profwatch_window_dropped_events): 50 Kineto kernels without `ts`.
TEST(AnalyzeCliTest, JsonReportsEveryDroppedEventByReason) {
  testing::TempDir tmp;
  const std::string kernel = R"J({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"dur":2,)J"
                             R"J("args":{"device":0,"stream":7}})J";
  std::string trace = R"J({"traceEvents":[)J";
  for (int i = 0; i < 50; ++i) trace += kernel + ",";
  trace += R"J({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":10,"dur":2,)J"
           R"J("args":{"device":0,"stream":7}}]})J";
  testing::WriteFile(tmp.Sub("w.pt.trace.json.gz"), testing::Gzip(trace));
  json j = AnalyzeJson("'" + tmp.Sub("w.pt.trace.json.gz") + "'");
  ASSERT_TRUE(j.contains("dropped_events")) << j.dump();
  EXPECT_EQ(j["dropped_events"], json({{"no_timestamp", 50}}));
  EXPECT_EQ(j["devices"][0]["kernels"], 1);  // the one kernel with a time is kept
  // Nothing dropped: an empty object, not absent.
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/kineto/h100_bert_small.json.gz");
  EXPECT_EQ(AnalyzeJson("'" + path + "'")["dropped_events"], json::object());
}

// A crafted HLO module beside the window's trace: the report is printed
// whole on stdout (valid JSON), the module is skipped as too complex with
// one warning on stderr, and the kernels are reported.
TEST(AnalyzeCliTest, TooComplexModuleIsAWarningOnStderrAndTheReportIsKept) {
  testing::TempDir tmp;
  std::string trace =
      R"J({"displayTimeUnit":"ns","traceEvents":[)J"
      R"J({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)J"
      R"J({"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"Stream #7(Compute)"}})J";
  for (int i = 0; i < 4; ++i) {
    trace += R"J(,{"ph":"X","pid":1,"tid":7,"ts":)J" + std::to_string(100 + i * 20) +
             R"J(,"dur":10,"name":"loop_add_fusion_1","args":{"hlo_module":"jit_step"}})J";
  }
  const std::string dir = tmp.Sub("2026_11_26_00_00_00");
  testing::WriteFile(dir + "/h.trace.json.gz", testing::Gzip(trace + "]}"));
  testing::WriteFile(dir + "/h.xplane.pb",
                     testing::MetadataPlane({testing::NestedCallsHlo("jit_step")}));
  // `timeout`: a regression of the bounds fails here in a minute, not at ctest's limit.
  auto r = testing::RunCommand("timeout 60 '" + testing::BinaryPath("profwatch") +
                               "' analyze --format json '" + dir + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);  // stdout is the report alone
  EXPECT_EQ(j["devices"][0]["kernels"], 4);
  EXPECT_EQ(j["unscoped_kernels"]["placed_seconds_per_gpu_step"], 0.0);
  EXPECT_EQ(j["unscoped_kernels"]["unplaced_reason"],
            "module jit_step skipped: too_complex: more than 262144 schedule entries with calls "
            "inlined");
  EXPECT_NE(r.err.find("warning hlo module skipped reason=too_complex"), std::string::npos)
      << r.err;
}

// A hand-made JAX window: one GPU, one stream, 3 kernels of 0.5 s each over
// 3 profiled steps = 0.5 s kernel per GPU per step. The log's steady steps
// (warm-up 0-4, profiled 5-7 and write-back 8 excluded) are 0.8 s, so the gap
// is +0.3 s, and profiler_steps=3 comes from the log's config dump.
// The window and log of TrainingLogGivesSteadyStepAndGap: three 0.5 s kernels
// over profiler_steps=3 and a log whose steady steps are `steady` seconds.
const std::string kOneGpuTrace =
    R"J({"displayTimeUnit":"ns","traceEvents":[)J"
    R"J({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)J"
    R"J({"ph":"M","pid":1,"tid":5,"name":"thread_name","args":{"name":"Stream #5(Kernel)"}},)J"
    R"J({"ph":"X","pid":1,"tid":5,"ts":0,"dur":500000,"name":"a.kd"},)J"
    R"J({"ph":"X","pid":1,"tid":5,"ts":800000,"dur":500000,"name":"a.kd"},)J"
    R"J({"ph":"X","pid":1,"tid":5,"ts":1600000,"dur":500000,"name":"a.kd"},{}]})J";

std::string MaxTextLog(double steady) {
  std::string log =
      "Config param profiler: xplane\nConfig param profiler_steps: 3\n"
      "Config param skip_first_n_steps_for_profiler: 5\n";
  for (int step = 0; step < 20; ++step) {
    double seconds = step < 5 ? 9.0 : (step <= 7 ? 0.3 : (step == 8 ? 2.0 : steady));
    log += "completed step: " + std::to_string(step) + ", seconds: " + std::to_string(seconds) +
           ", TFLOP/s/device: 100.0, Tokens/s/device: 5000.0, total_weights: 1, loss: 3.0\n";
  }
  return log;
}

TEST(AnalyzeCliTest, TrainingLogGivesSteadyStepAndGap) {
  testing::TempDir tmp;
  testing::WriteFile(tmp.Sub("h0.trace.json.gz"), testing::Gzip(kOneGpuTrace));
  testing::WriteFile(tmp.Sub("job.log"), MaxTextLog(0.8));
  json j = AnalyzeJson("--log '" + tmp.Sub("job.log") + "' '" + tmp.Sub("h0.trace.json.gz") + "'");
  ASSERT_TRUE(j["step"].is_object()) << j.dump();
  EXPECT_EQ(j["step"]["source"], "log");
  EXPECT_NEAR(j["step"]["seconds"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(j["total_kernel_seconds_per_gpu_step"].get<double>(), 0.5, 1e-12);
  EXPECT_NEAR(j["step"]["minus_kernel_seconds"].get<double>(), 0.3, 1e-12);
  EXPECT_EQ(j["profile_steps"], 3);
  auto table = Analyze("--log '" + tmp.Sub("job.log") + "' '" + tmp.Sub("h0.trace.json.gz") + "'");
  EXPECT_NE(table.out.find("Step time composition (source: log)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("positive gap"), std::string::npos);
}

// `analyze <run dir>` and `analyze <ts dir>` find the run's log where serve
// finds it (here <jobs>/<job>.<run>.log); --log still wins.
TEST(AnalyzeCliTest, RunAndTsDirsFindTheTrainingLogLikeServe) {
  testing::TempDir tmp;
  const std::string run = tmp.Sub("jobs/jobA/run1");
  const std::string ts = run + "/tensorboard/plugins/profile/2024_03_01_12_00_00";
  testing::WriteFile(ts + "/h0.trace.json.gz", testing::Gzip(kOneGpuTrace));
  testing::WriteFile(tmp.Sub("jobs/jobA.run1.log"), MaxTextLog(0.8));
  testing::WriteFile(tmp.Sub("other.log"), MaxTextLog(0.6));
  for (const std::string& dir : {run, ts, run + "/"}) {
    SCOPED_TRACE(dir);
    auto r = Analyze("--format json '" + dir + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out.substr(0, r.out.find('\n')));
    ASSERT_TRUE(j["step"].is_object()) << j.dump();
    EXPECT_EQ(j["step"]["source"], "log");
    EXPECT_NEAR(j["step"]["seconds"].get<double>(), 0.8, 1e-12);
    EXPECT_NEAR(j["step"]["minus_kernel_seconds"].get<double>(), 0.3, 1e-12);
    EXPECT_EQ(j["profile_steps"], 3);
    EXPECT_NE(r.err.find("training log " + tmp.Sub("jobs/jobA.run1.log")), std::string::npos)
        << r.err;
  }
  json over = AnalyzeJson("--log '" + tmp.Sub("other.log") + "' '" + run + "'");
  EXPECT_NEAR(over["step"]["seconds"].get<double>(), 0.6, 1e-12);
  // A plain file has no run: no log is looked for.
  json plain = AnalyzeJson("'" + ts + "/h0.trace.json.gz'");
  EXPECT_TRUE(plain["step"].is_null() || plain["step"]["source"] != "log") << plain.dump();
}

// One period per window (issue #29): the window's step time comes from the
// steady steps around its profiled steps (5-7), so 29 slower steps appended
// later (no new profile) leave it at 0.8 s, as serve keeps it. Before, the
// latest steps gave 1.5 s.
TEST(AnalyzeCliTest, LaterSlowerStepsDoNotChangeTheWindowsStepTime) {
  testing::TempDir tmp;
  testing::WriteFile(tmp.Sub("h0.trace.json.gz"), testing::Gzip(kOneGpuTrace));
  std::string log = MaxTextLog(0.8);
  for (int step = 20; step < 49; ++step) {
    log += "completed step: " + std::to_string(step) +
           ", seconds: 1.5, TFLOP/s/device: 100.0, Tokens/s/device: 5000.0, total_weights: 1, "
           "loss: 3.0\n";
  }
  testing::WriteFile(tmp.Sub("job.log"), log);
  json j = AnalyzeJson("--log '" + tmp.Sub("job.log") + "' '" + tmp.Sub("h0.trace.json.gz") + "'");
  ASSERT_TRUE(j["step"].is_object()) << j.dump();
  EXPECT_EQ(j["step"]["source"], "log");
  EXPECT_NEAR(j["step"]["seconds"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(j["step"]["minus_kernel_seconds"].get<double>(), 0.3, 1e-12);
}

// The real H200 JAX run (steps 5-7 profiled, ~0.053 s steps; its log found
// as serve finds it), with 29 slower steps appended to a copy of its log:
// the window keeps the steps after its profile (9-11: 0.053, 0.053, 0.054).
TEST(AnalyzeCliTest, RealRunKeepsItsWindowsStepTimeWhenTheLogGoesOn) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(base, "real/h200/jobs/4242-llama-h200/base");
  testing::TempDir tmp;
  const std::string run = tmp.Sub("jobs/4242-llama-h200/base");
  std::filesystem::create_directories(run);
  std::filesystem::copy(base, run, std::filesystem::copy_options::recursive);
  std::string more;
  for (int step = 12; step < 41; ++step) {
    more += "completed step: " + std::to_string(step) +
            ", seconds: 0.120, TFLOP/s/device: 220.0, Tokens/s/device: 136533.0, "
            "total_weights: 16384, loss: 0.040\n";
  }
  testing::WriteFile(run + "/log.txt", testing::ReadFile(run + "/log.txt") + more);
  json j = AnalyzeJson("'" + run + "'");
  ASSERT_TRUE(j["step"].is_object()) << j.dump();
  EXPECT_EQ(j["step"]["source"], "log");
  EXPECT_NEAR(j["step"]["seconds"].get<double>(), 0.053, 1e-12);
  EXPECT_EQ(j["profile_steps"], 3);
}

TEST(AnalyzeCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Analyze("").exit_code, 2);
  EXPECT_EQ(Analyze("--format nope x").exit_code, 2);
  EXPECT_EQ(Analyze("--profile-steps -1 x").exit_code, 2);
}

// nsys exports: the real 2020 export and a generated node of 4 ranks, as
// files and as the run's capture-nsys-profile dir; garbage named .sqlite and
// the drill format are refused with a message naming the file.
TEST(AnalyzeCliTest, NsysExportsReportProcessDeviceAndRank) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(real, "real/nsys/a100_saxpy_mpi_2020.sqlite");
  json j = AnalyzeJson("'" + real + "'");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["format"], "nsys");
  ASSERT_EQ(j["devices"].size(), 1u);
  const json& d = j["devices"][0];
  EXPECT_EQ(d["pid"], 1230493);
  EXPECT_EQ(d["device_id"], 0);
  EXPECT_TRUE(d["rank"].is_null());  // its NVTX says "MPI Rank 0", not rank=N
  EXPECT_EQ(d["kernels"], 5);
  // sum(end - start) of its 5 rows = 88,573,480 ns, one stream, no overlap.
  EXPECT_NEAR(d["kernel_seconds"].get<double>(), 0.08857348, 1e-12);
  EXPECT_NEAR(d["busy_seconds"].get<double>(), 0.08857348, 1e-12);
  EXPECT_EQ(d["exposed_comm_seconds"], 0.0);
  EXPECT_EQ(d["memops"], 15);  // its memcpys: memory operations, not kernels
  EXPECT_NEAR(d["memop_seconds"].get<double>(), 0.2846996, 1e-12);

  testing::TempDir tmp;
  const std::string run = tmp.Sub("job/run-1");
  const std::string capture = run + "/capture-nsys-profile";
  auto gen = testing::RunCommand("'" + testing::BinaryPath("profwatch-tracegen") + "' nsys --out " +
                                 capture +
                                 "/n0.sqlite --ranks 4 --first-rank 4 "
                                 "--kernels 400 --steps 2 --schema 2020");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  for (const std::string& arg : {capture, run, capture + "/n0.sqlite"}) {
    SCOPED_TRACE(arg);
    j = AnalyzeJson(arg);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["gpus"], 4);
    EXPECT_EQ(j["launcher_mode"], "1-GPU/proc");
    EXPECT_EQ(j["profile_steps"], 2);  // NVTX "step 0", "step 1"
    ASSERT_EQ(j["devices"].size(), 4u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(j["devices"][i]["pid"], 4004 + i);
      EXPECT_EQ(j["devices"][i]["device_id"], 4 + i);
      EXPECT_EQ(j["devices"][i]["rank"], 4 + i);
    }
  }
  j = AnalyzeJson("--profile-steps 5 " + capture);
  EXPECT_EQ(j["profile_steps"], 5);

  testing::WriteFile(tmp.Sub("garbage.sqlite"), "SQLite format 3 but not really");
  auto bad = Analyze(tmp.Sub("garbage.sqlite"));
  EXPECT_EQ(bad.exit_code, 3) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("garbage.sqlite"), std::string::npos) << bad.err;
  auto drill = Analyze("--format drill " + capture + "/n0.sqlite");
  EXPECT_EQ(drill.exit_code, 2);
  EXPECT_NE(drill.err.find("Nsight Systems export"), std::string::npos) << drill.err;
}

// --- profiling cycles (issue #32) ---

// Every JSON report of an analyze run, one per line.
std::vector<json> Reports(const testing::CommandResult& r) {
  std::vector<json> out;
  size_t pos = 0;
  while (pos < r.out.size()) {
    const size_t end = r.out.find('\n', pos);
    const std::string line = r.out.substr(pos, end - pos);
    if (!line.empty()) out.push_back(json::parse(line));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

constexpr const char* kStall20 = "real/h200/jobs/4343-gpt-h200-torch/stall20";
constexpr const char* kStallFirst = "vm_1481.1795652969892807939.pt.trace.json.gz";
constexpr const char* kStallSecond = "vm_1481.1795652970610113897.pt.trace.json.gz";

int64_t Kernels(const json& report) {
  int64_t n = 0;
  for (const json& d : report["devices"]) n += d["kernels"].get<int64_t>();
  return n;
}

TEST(AnalyzeCyclesTest, EachKinetoCycleOfOneProcessIsItsOwnWindowOldestFirst) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, kStall20);
  auto r = Analyze("--format json '" + run + "/profiler'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> reports = Reports(r);
  ASSERT_EQ(reports.size(), 2u) << r.out;
  EXPECT_EQ(reports[0]["window"], "4343-gpt-h200-torch/stall20/1795652969892807939");
  EXPECT_EQ(reports[1]["window"], "4343-gpt-h200-torch/stall20/1795652970610113897");
  for (const json& rep : reports) {
    EXPECT_EQ(rep["files"].size(), 1u);
    EXPECT_EQ(Kernels(rep), 699);
  }
  EXPECT_EQ(reports[0]["files"][0], run + "/profiler/" + kStallFirst);
  EXPECT_EQ(reports[1]["files"][0], run + "/profiler/" + kStallSecond);

  auto latest = Analyze("--format json --window latest '" + run + "/profiler'");
  ASSERT_EQ(latest.exit_code, 0) << latest.err;
  std::vector<json> one = Reports(latest);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0]["window"], reports[1]["window"]);

  // A window is chosen by its capture time too.
  auto by_id = Analyze("--format json --window 1795652969892807939 '" + run + "'");
  ASSERT_EQ(by_id.exit_code, 0) << by_id.err;
  ASSERT_EQ(Reports(by_id).size(), 1u);
  EXPECT_EQ(Reports(by_id)[0]["window"], reports[0]["window"]);
}

TEST(AnalyzeCyclesTest, CudaGraphRunHasTwoCyclesToo) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, "real/h200/jobs/4444-gpt-h200-cudagraphs/graphs");
  auto r = Analyze("--format json '" + run + "/profiler'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> reports = Reports(r);
  ASSERT_EQ(reports.size(), 2u) << r.out;
  // The file names list the later capture first: windows are in time order.
  EXPECT_EQ(reports[0]["window"], "4444-gpt-h200-cudagraphs/graphs/1795655007791927762");
  EXPECT_EQ(reports[1]["window"], "4444-gpt-h200-cudagraphs/graphs/1795655008263252120");
  EXPECT_GT(Kernels(reports[0]), 0);
  EXPECT_GT(Kernels(reports[1]), 0);
}

TEST(AnalyzeCyclesTest, TwoCycleFilesGivenAsArgumentsAreTwoWindows) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, kStall20);
  const std::string dir = run + "/profiler/";
  // Newest first on the command line: still reported oldest first.
  auto r = Analyze("--format json '" + dir + kStallSecond + "' '" + dir + kStallFirst + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> reports = Reports(r);
  ASSERT_EQ(reports.size(), 2u) << r.out;
  EXPECT_EQ(reports[0]["files"][0], dir + kStallFirst);
  EXPECT_EQ(reports[1]["files"][0], dir + kStallSecond);
  EXPECT_EQ(Kernels(reports[0]), 699);
  EXPECT_EQ(Kernels(reports[1]), 699);
}

TEST(AnalyzeCyclesTest, RunJobAndJobsRootDirsFindThePyTorchRun) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, kStall20);
  testing::TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string copy = jobs + "/4343-gpt-h200-torch/stall20";
  std::filesystem::create_directories(copy + "/profiler");
  for (const char* f : {kStallFirst, kStallSecond}) {
    std::filesystem::copy_file(run + "/profiler/" + f, copy + "/profiler/" + f);
  }
  std::filesystem::copy_file(run + "/log.txt", copy + "/log.txt");
  for (const std::string& path : {copy, jobs + "/4343-gpt-h200-torch", jobs}) {
    SCOPED_TRACE(path);
    auto r = Analyze("--format json '" + path + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<json> reports = Reports(r);
    ASSERT_EQ(reports.size(), 2u) << r.out;
    EXPECT_EQ(reports[0]["window"], "4343-gpt-h200-torch/stall20/1795652969892807939");
    EXPECT_EQ(reports[1]["window"], "4343-gpt-h200-torch/stall20/1795652970610113897");
    EXPECT_EQ(Kernels(reports[1]), 699);
    // The run's training log is found as serve finds it.
    EXPECT_EQ(reports[1]["step"]["source"], "log") << r.err;
  }
}

TEST(AnalyzeCyclesTest, ProcessesOfOneCycleShareAWindowCyclesNever) {
  testing::TempDir tmp;
  const std::string trace = testing::Gzip(
      R"J({"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)J"
      R"J({"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"Stream #7(Kernel)"}},)J"
      R"J({"ph":"X","pid":1,"tid":7,"ts":10,"dur":5,"name":"loop_fusion.kd"},{}]})J");
  const std::string dir = tmp.Sub("jobs/job/run/profiler");
  // Two ranks, two cycles 30 s apart; the ranks' captures 0.2 s apart.
  const std::vector<std::string> names = {
      "node0.100.1795652969000000000.pt.trace.json.gz",
      "node1.200.1795652969200000000.pt.trace.json.gz",
      "node0.100.1795652999000000000.pt.trace.json.gz",
      "node1.200.1795652999200000000.pt.trace.json.gz",
  };
  for (const std::string& n : names) testing::WriteFile(dir + "/" + n, trace);
  auto r = Analyze("--format json '" + tmp.Sub("jobs") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> reports = Reports(r);
  ASSERT_EQ(reports.size(), 2u) << r.out;
  EXPECT_EQ(reports[0]["window"], "job/run/1795652969000000000");
  EXPECT_EQ(reports[0]["files"], json({dir + "/" + names[0], dir + "/" + names[1]}));
  EXPECT_EQ(reports[0]["gpus"], 2);
  EXPECT_EQ(reports[1]["window"], "job/run/1795652999000000000");
  EXPECT_EQ(reports[1]["files"], json({dir + "/" + names[2], dir + "/" + names[3]}));
}

TEST(AnalyzeCyclesTest, MissingOrEmptyPathIsExitFiveNamingIt) {
  testing::TempDir tmp;
  const std::string missing = tmp.Sub("no/such/run");
  auto r = Analyze("'" + missing + "'");
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find(missing + ": no such file or directory"), std::string::npos) << r.err;
  std::filesystem::create_directories(tmp.Sub("empty/run/profiler"));
  auto e = Analyze("'" + tmp.Sub("empty") + "'");
  EXPECT_EQ(e.exit_code, 5) << e.err;
  EXPECT_NE(e.err.find(tmp.Sub("empty") + ": nothing to analyse"), std::string::npos) << e.err;
  // compare too, naming the path once.
  auto c = testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' compare '" + missing +
                               "' '" + tmp.Sub("empty") + "'");
  EXPECT_EQ(c.exit_code, 5) << c.err;
  EXPECT_EQ(c.err.find(missing), c.err.rfind(missing)) << c.err;
}

TEST(CompareLogsTest, EachRunsLogGivesItsStepAndLogOverrides) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(job, "real/h200/jobs/4242-llama-h200");
  const std::string cmd = "'" + testing::BinaryPath("profwatch") + "' compare --format json '" +
                          job + "/base' '" + job + "/nocb'";
  auto r = testing::RunCommand(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["variants"].size(), 2u);
  // Each run's steady step from its own log, as analyze reads it.
  EXPECT_EQ(j["variants"][0]["step_source"], "log");
  EXPECT_DOUBLE_EQ(j["variants"][0]["step"].get<double>(), 0.053);
  EXPECT_EQ(j["variants"][1]["step_source"], "log");
  EXPECT_DOUBLE_EQ(j["variants"][1]["step"].get<double>(), 0.051);
  EXPECT_TRUE(j["variants"][0]["step - total kernel"].is_number());

  // One --log for several variants is ambiguous: refused, naming the way out.
  auto one = testing::RunCommand(cmd + " --log '" + job + "/base/log.txt'");
  EXPECT_EQ(one.exit_code, 2) << one.err;
  EXPECT_NE(one.err.find("use --log PATH=FILE"), std::string::npos) << one.err;
  EXPECT_TRUE(one.out.empty()) << one.out;
  // One --log per variant, in order.
  auto each = testing::RunCommand(cmd + " --log '" + job + "/nocb/log.txt' --log '" + job +
                                  "/base/log.txt'");
  ASSERT_EQ(each.exit_code, 0) << each.err;
  json m = json::parse(each.out);
  EXPECT_DOUBLE_EQ(m["variants"][0]["step"].get<double>(), 0.051);
  EXPECT_DOUBLE_EQ(m["variants"][1]["step"].get<double>(), 0.053);
  EXPECT_EQ(m["variants"][0]["step_log"], job + "/nocb/log.txt");
  EXPECT_EQ(m["variants"][1]["step_log"], job + "/base/log.txt");
  // A count that fits neither rule is a usage error.
  auto three = testing::RunCommand(cmd + " --log a --log b --log c");
  EXPECT_EQ(three.exit_code, 2) << three.err;
}

// --- which window and which step (issue #38) ---

std::string Profwatch() { return "'" + testing::BinaryPath("profwatch") + "' "; }

// `--window latest` is the newest window by capture time, one per run, as
// serve exports them: on the jobs root every run's newest window (the CUDA
// graph run's and the torch run's later Kineto capture), not one window in
// all.
TEST(WindowLatestTest, JobsRootGivesEachRunsNewestWindow) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(jobs, "real/h200/jobs");
  auto r = Analyze("--format json --window latest '" + jobs + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> windows;
  for (const json& rep : Reports(r)) windows.push_back(rep["window"]);
  EXPECT_EQ(windows, (std::vector<std::string>{
                         "4242-llama-h200/base/2026_11_26_00_29_00",
                         "4242-llama-h200/nocb/2026_11_26_01_03_00",
                         "4343-gpt-h200-torch/stall20/1795652970610113897",
                         "4444-gpt-h200-cudagraphs/graphs/1795655008263252120",
                         "4545-gpt-h200-flops/flops/1795655714547247741",
                     }))
      << r.out;
}

// A job whose runs' names sort against their capture times (the newer run
// named first): the newest window is chosen by capture time, never by name,
// both by `analyze --window latest` (per run) and by `compare` (one window
// per variant), and compare names the window and step source of each column.
TEST(WindowLatestTest, NewestByCaptureTimeNotByRunName) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(real, "real/h200/jobs/4242-llama-h200");
  testing::TempDir tmp;
  const std::filesystem::path job = tmp.path() / "4242-llama-h200";
  std::filesystem::create_directories(job);
  std::filesystem::copy(real + "/nocb", job / "aa-nocb", std::filesystem::copy_options::recursive);
  std::filesystem::copy(real + "/base", job / "zz-base", std::filesystem::copy_options::recursive);
  // Both windows in one run of another job too.
  const std::string both = (tmp.path() / "other/both/tensorboard/plugins/profile").string();
  std::filesystem::create_directories(both);
  std::filesystem::copy(real + "/nocb/tensorboard/plugins/profile/2026_11_26_01_03_00",
                        both + "/2026_11_26_01_03_00");
  std::filesystem::copy(real + "/base/tensorboard/plugins/profile/2026_11_26_00_29_00",
                        both + "/2026_11_26_00_29_00");

  auto a = Analyze("--format json --window latest '" + tmp.path().string() + "'");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::vector<std::string> windows;
  for (const json& rep : Reports(a)) windows.push_back(rep["window"]);
  EXPECT_EQ(windows, (std::vector<std::string>{"4242-llama-h200/aa-nocb/2026_11_26_01_03_00",
                                               "4242-llama-h200/zz-base/2026_11_26_00_29_00",
                                               "other/both/2026_11_26_01_03_00"}))
      << a.out;

  // compare: the job dir's newest window is aa-nocb's, not the last run's.
  auto c = testing::RunCommand(Profwatch() + "compare --format json '" + job.string() + "' '" +
                               real + "/base'");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  json j = json::parse(c.out);
  EXPECT_EQ(j["variants"][0]["window"], "4242-llama-h200/aa-nocb/2026_11_26_01_03_00");
  EXPECT_EQ(j["variants"][0]["step_source"], "log");
  EXPECT_EQ(j["variants"][0]["step_log"], (job / "aa-nocb/log.txt").string());
  EXPECT_DOUBLE_EQ(j["variants"][0]["step"].get<double>(), 0.051);
  EXPECT_EQ(j["variants"][1]["window"], "4242-llama-h200/base/2026_11_26_00_29_00");

  // The text table says it too, one row each.
  auto t = testing::RunCommand(Profwatch() + "compare --step-time 0.06 '" + real + "/base' '" +
                               real + "/nocb'");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("\nwindow "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("4242-llama-h200/nocb/2026_11_26_01_03_00"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("\nstep source "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("--step-time"), std::string::npos) << t.out;
}

// `--log PATH=FILE` binds a log to one variant; the others keep their own.
TEST(CompareLogsTest, LogBindsToItsPathOnly) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(job, "real/h200/jobs/4242-llama-h200");
  auto r = testing::RunCommand(Profwatch() + "compare --format json '" + job + "/base' '" + job +
                               "/nocb' --log '" + job + "/base=" + job + "/nocb/log.txt'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["variants"][0]["step_log"], job + "/nocb/log.txt");
  EXPECT_DOUBLE_EQ(j["variants"][0]["step"].get<double>(), 0.051);
  EXPECT_EQ(j["variants"][1]["step_log"], job + "/nocb/log.txt");
  // A PATH that is no variant is no binding: one plain FILE, ambiguous.
  auto other = testing::RunCommand(Profwatch() + "compare '" + job + "/base' '" + job +
                                   "/nocb' --log 'elsewhere=" + job + "/nocb/log.txt'");
  EXPECT_EQ(other.exit_code, 2) << other.err;
}

// Flag values that make no sense are usage errors (exit 2) with a short
// message; durations are written as serve takes them.
TEST(CliFlagsTest, ProfileStepsZeroAndBadDurationsAreUsageErrors) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(run, "real/h200/jobs/4242-llama-h200/base");
  auto zero = Analyze("--profile-steps 0 '" + run + "'");
  EXPECT_EQ(zero.exit_code, 2) << zero.out << zero.err;
  EXPECT_EQ(zero.out.find("No GPU kernels"), std::string::npos) << zero.out;
  EXPECT_EQ(zero.err, "profwatch analyze: --profile-steps: must be at least 1, not 0\n");
  // --format drill keeps profile_drill.py's own answer to 0 (DrillCompatTest).
  auto czero =
      testing::RunCommand(Profwatch() + "compare --profile-steps 0 '" + run + "' '" + run + "'");
  EXPECT_EQ(czero.exit_code, 2) << czero.err;

  // 2m is two minutes, as for serve: one window, the same as --skew 120.
  auto minutes = Analyze("--format json --skew 2m '" + run + "'");
  ASSERT_EQ(minutes.exit_code, 0) << minutes.err;
  auto seconds = Analyze("--format json --skew 120 '" + run + "'");
  ASSERT_EQ(seconds.exit_code, 0) << seconds.err;
  EXPECT_EQ(Reports(minutes).size(), 1u);
  EXPECT_EQ(Reports(minutes)[0]["window"], Reports(seconds)[0]["window"]);
  auto c = testing::RunCommand(Profwatch() + "compare --format json --skew 30s '" + run + "' '" +
                               run + "'");
  EXPECT_EQ(c.exit_code, 0) << c.err;
  for (const char* bad : {"2x", "-1s", "soon"}) {
    auto r = Analyze(std::string("--skew ") + bad + " '" + run + "'");
    EXPECT_EQ(r.exit_code, 2) << bad << r.err;
    EXPECT_NE(r.err.find("--skew: bad duration"), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 200u) << r.err;
  }
}

// A kernel name is the trace's bytes: invalid UTF-8 and control characters
// (issue 47). Before, `analyze --format json` aborted on this xplane
// (nlohmann type_error 316, exit 134); the report is valid JSON, the bad
// bytes written reversibly as \xHH (issue 60; before, U+FFFD) and the
// newline escaped, and the table prints
// the name on one line with its control characters escaped.
TEST(AnalyzeCliTest, InvalidUtf8KernelNameGivesValidJsonAndOneTableLine) {
  testing::TempDir tmp;
  const std::string bad = "gemm\xff\xfe_k\x1b[2J\ninjected";
  const std::string gpu = testing::Plane(
      1, "/device:GPU:0",
      {testing::Line(7, "Stream #7(Kernel)", 1000,
                     {testing::Event(1, 0, 500000000), testing::Event(1, 600000000, 500000000)})},
      testing::MetadataEntry(1, bad));
  const std::string dir = tmp.Sub("2026_11_26_00_00_00");
  testing::WriteFile(dir + "/h.xplane.pb", testing::Space({gpu}));
  auto r = Analyze("--format json --source xplane '" + dir + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);  // strict: valid UTF-8 only
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["devices"][0]["kernels"], 2);
  const std::string dumped = j.dump();
  EXPECT_NE(dumped.find(R"(gemm\\xff\\xfe_k)"), std::string::npos) << dumped;
  auto table = Analyze("--source xplane '" + dir + "'");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.find("\ninjected"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find('\x1b'), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("gemm\\xff\\xfe_k\\x1b[2J\\x0ainjected"), std::string::npos)
      << table.out;
}

// `In msg nelems` of 2^59 floats claims 2^61 bytes in one all-reduce of one
// millisecond: 2.3e21 B/s (issue 47). No GPU holds or moves that; the
// size is unknown with a note saying why, and no bandwidth or byte figure
// is reported (before: a bus bandwidth of 4.6e21 B/s).
TEST(AnalyzeCliTest, ImpossibleCollectiveSizeHasNoBandwidth) {
  testing::TempDir tmp;
  const std::string trace =
      R"J({"traceEvents":[{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL",)J"
      R"J("pid":0,"tid":7,"ts":10,"dur":1000,"args":{"device":0,"stream":7,)J"
      R"J("Collective name":"allreduce","In msg nelems":576460752303423488,)J"
      R"J("Out msg nelems":576460752303423488,"Group size":8,"dtype":"Float"}},)J"
      R"J({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":2000,"dur":1000,)J"
      R"J("args":{"device":0,"stream":7}}]})J";
  testing::WriteFile(tmp.Sub("w.pt.trace.json.gz"), testing::Gzip(trace));
  json j = AnalyzeJson("--profile-steps 1 '" + tmp.Sub("w.pt.trace.json.gz") + "'");
  ASSERT_TRUE(j["collectives"].is_array()) << j.dump();
  ASSERT_EQ(j["collectives"].size(), 1u) << j.dump();
  const json& ar = j["collectives"][0];
  EXPECT_EQ(ar["collective"], "all_reduce");
  EXPECT_EQ(ar["calls"], 1);
  EXPECT_TRUE(ar["bytes_per_gpu_step"].is_null()) << ar.dump();
  EXPECT_TRUE(ar["algbw_bytes_per_second"].is_null()) << ar.dump();
  EXPECT_TRUE(ar["busbw_bytes_per_second"].is_null()) << ar.dump();
  ASSERT_TRUE(ar["note"].is_string()) << ar.dump();
  EXPECT_NE(ar["note"].get<std::string>().find("impossible"), std::string::npos) << ar.dump();
}

// Issue #61: a FLOP kind whose kernels ran but whose FLOPs no formula
// counted is null with the reason, never 0.0: an aten::mm with shapes is
// counted (matmul), the attention kernel its vllm::unified_attention
// operator launched is not (no formula); no convolution kernel ran, so
// conv is a true 0.
TEST(AnalyzeCliTest, UncountedFlopKindIsNullWithItsReasonNotZero) {
  testing::TempDir tmp;
  const std::string trace =
      R"J({"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],"traceEvents":[)J"
      R"J({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":5,)J"
      R"J("args":{"External id":11,"Input Dims":[[16, 32], [32, 64]],)J"
      R"J("Input type":["c10::BFloat16", "c10::BFloat16"]}},)J"
      R"J({"ph":"X","cat":"cpu_op","name":"vllm::unified_attention","pid":1,"tid":1,"ts":20,)J"
      R"J("dur":5,"args":{"External id":12,"Input Dims":[[1, 8, 128, 64], [1, 8, 128, 64]]}},)J"
      R"J({"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16","pid":0,"tid":7,"ts":30,)J"
      R"J("dur":10,"args":{"device":0,"stream":7,"External id":11}},)J"
      R"J({"ph":"X","cat":"kernel","name":"flash_fwd_splitkv_kernel","pid":0,"tid":7,"ts":50,)J"
      R"J("dur":8,"args":{"device":0,"stream":7,"External id":12}}]})J";
  testing::WriteFile(tmp.Sub("w.pt.trace.json.gz"), testing::Gzip(trace));
  for (const char* format : {"json", "table"}) {
    SCOPED_TRACE(format);
    if (std::string(format) == "table") {
      auto r = Analyze("--profile-steps 1 '" + tmp.Sub("w.pt.trace.json.gz") + "'");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find("6.554e+04 matmul + n/a attention + 0 conv"), std::string::npos)
          << r.out;
      EXPECT_NE(r.out.find("attention FLOPs"), std::string::npos) << r.out;
      continue;
    }
    json j = AnalyzeJson("--profile-steps 1 '" + tmp.Sub("w.pt.trace.json.gz") + "'");
    const json& f = j["flops"];
    EXPECT_EQ(f["matmul_per_gpu_step"], 2.0 * 16 * 32 * 64) << f.dump();
    EXPECT_TRUE(f["attention_per_gpu_step"].is_null()) << f.dump();
    EXPECT_EQ(f["conv_per_gpu_step"], 0.0) << f.dump();
    EXPECT_EQ(f["total_per_gpu_step"], 2.0 * 16 * 32 * 64) << f.dump();
    ASSERT_TRUE(f["kind_notes"].is_object()) << f.dump();
    EXPECT_EQ(f["kind_notes"].size(), 1u) << f.dump();
    ASSERT_TRUE(f["kind_notes"]["attention"].is_string()) << f.dump();
    EXPECT_NE(f["kind_notes"]["attention"].get<std::string>().find(
                  "attention kernels ran (8e-06 s per GPU step)"),
              std::string::npos)
        << f.dump();
  }
}

// --- absent is absent (issue #65) ---

// The cells of the table row named `name` (its first column, after the
// indent), the rest split on runs of spaces; empty when there is no such row.
std::vector<std::string> TableRow(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    line.erase(0, line.find_first_not_of(' '));
    if (!line.starts_with(name + "  ")) continue;
    std::vector<std::string> cells{name};
    std::istringstream rest(line.substr(name.size()));
    for (std::string cell; rest >> cell;) cells.push_back(cell);
    return cells;
  }
  return {};
}

// The CUDA-graph run has no `mlp` (nor `attention`) scope: compare says
// n/a and null on its side, never 0, and a delta of n/a. A family neither
// run launched is left out of the table and null in the JSON.
TEST(AbsentIsAbsentTest, CompareRegionTheGraphRunDidNotMeasureIsNa) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(torch, kStall20);
  PROFWATCH_REQUIRE_SHARED_FIXTURE(graphs, "real/h200/jobs/4444-gpt-h200-cudagraphs/graphs");
  const std::string cmd =
      Profwatch() + "compare --label torch --label graphs '" + torch + "' '" + graphs + "'";
  auto text = testing::RunCommand(cmd);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::vector<std::string> mlp = TableRow(text.out, "region mlp");
  ASSERT_EQ(mlp.size(), 4u) << text.out;  // name, torch, graphs, delta
  EXPECT_EQ(mlp[1], "0.0077") << text.out;
  EXPECT_EQ(mlp[2], "n/a") << text.out;
  EXPECT_EQ(mlp[3], "n/a") << text.out;
  EXPECT_EQ(TableRow(text.out, "region attention").at(2), "n/a") << text.out;
  // nccl and the memory family ran in neither: no row. gemm ran in both.
  EXPECT_TRUE(TableRow(text.out, "nccl").empty()) << text.out;
  EXPECT_TRUE(TableRow(text.out, "memory").empty()) << text.out;
  EXPECT_EQ(TableRow(text.out, "gemm").size(), 4u) << text.out;
  // norm ran only in the torch run: n/a on the graph side.
  const std::vector<std::string> norm = TableRow(text.out, "norm");
  ASSERT_EQ(norm.size(), 4u) << text.out;
  EXPECT_EQ(norm[2], "n/a") << text.out;

  auto j = testing::RunCommand(cmd + " --format json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json c = json::parse(j.out);
  const json& t = c["variants"][0];
  const json& g = c["variants"][1];
  ASSERT_TRUE(t["region mlp"].is_number()) << t.dump();
  EXPECT_NEAR(t["region mlp"].get<double>(), 0.0077, 5e-5);
  EXPECT_TRUE(g["region mlp"].is_null()) << g.dump();
  EXPECT_TRUE(g["region attention"].is_null()) << g.dump();
  EXPECT_TRUE(g["region Optimizer.step#AdamW.step"].is_number()) << g.dump();
  EXPECT_TRUE(t["nccl"].is_null()) << t.dump();
  EXPECT_TRUE(g["norm"].is_null()) << g.dump();
  EXPECT_TRUE(g["gemm"].is_number()) << g.dump();
}

// analyze leaves families that ran nothing out of the table (the JSON keeps
// their rows, times null, counts 0) and says the memory operations are not
// kernels rather than printing a memory family of 0 beside them.
TEST(AbsentIsAbsentTest, AnalyzeTableListsOnlyFamiliesThatRan) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(graphs, "real/h200/jobs/4444-gpt-h200-cudagraphs/graphs");
  auto table = Analyze("--window latest '" + graphs + "'");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const json j = AnalyzeJson("--window latest '" + graphs + "'");
  ASSERT_TRUE(j.contains("families")) << j.dump();
  size_t ran = 0;
  for (const json& f : j["families"]) {
    const std::string family = f["family"];
    if (f["launches"].get<int64_t>() == 0) {
      EXPECT_TRUE(f["seconds_per_gpu_step"].is_null()) << f.dump();
      EXPECT_TRUE(f["total_seconds"].is_null()) << f.dump();
      EXPECT_EQ(f["launches_per_gpu_step"].get<double>(), 0) << f.dump();
      EXPECT_TRUE(TableRow(table.out, family).empty()) << family << "\n" << table.out;
    } else {
      ++ran;
      EXPECT_GT(f["seconds_per_gpu_step"].get<double>(), 0) << f.dump();
      EXPECT_EQ(TableRow(table.out, family).size(), 4u) << family << "\n" << table.out;
    }
  }
  EXPECT_EQ(ran, 6u) << j["families"].dump();  // attention gemm triton elementwise reduce other
  // No family row of 0 seconds.
  const size_t from = table.out.find("Kernel families");
  const size_t to = table.out.find("Top kernels");
  ASSERT_LT(from, to) << table.out;
  EXPECT_EQ(table.out.substr(from, to - from).find(" 0.000000 "), std::string::npos) << table.out;
  // The memory operations: every one, with its time, marked as not kernels.
  const std::vector<std::string> memops = TableRow(table.out, "memory operations");
  ASSERT_GE(memops.size(), 4u) << table.out;
  EXPECT_GT(std::stod(memops[1]), 0) << table.out;
  EXPECT_NE(table.out.find("(memcpy/memset: not kernels, not in TOTAL)"), std::string::npos);
  int64_t memops_total = 0;
  for (const json& d : j["devices"]) memops_total += d["memops"].get<int64_t>();
  EXPECT_GT(memops_total, 0);
}

}  // namespace analyze_cli_test
}  // namespace profwatch
