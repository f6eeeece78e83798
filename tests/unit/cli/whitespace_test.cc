// JSON allows any whitespace between tokens, and older PyTorch writes
// Kineto traces pretty-printed: every Kineto trace the project knows (the
// real ones in ../shared/fixtures and every generated form) gives the same
// report compact, indented, and with whitespace before every closing brace
// (`profwatch-tracegen respace`). The generated forms also keep their
// manifests' figures pretty-printed.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace profwatch {
// Named for this file: the unity build compiles it with its neighbours.
namespace whitespace_test {

using nlohmann::json;

std::string Tracegen(const std::string& args) {
  return "'" + testing::BinaryPath("profwatch-tracegen") + "' " + args;
}

// `profwatch analyze --format json NAME` run in `dir`: its exit code and
// report (a trace without GPU kernels exits 1 with its report).
std::string Report(const std::string& dir, const std::string& name) {
  auto r = testing::RunCommand(
      "'" + testing::BinaryPath("profwatch") + "' analyze --format json '" + name + "'", dir);
  EXPECT_LE(r.exit_code, 1) << dir << "/" << name << "\n" << r.err;
  return "exit " + std::to_string(r.exit_code) + "\n" + r.out;
}

// The Kineto traces to re-space: the real ones (when ../shared is there)
// and one of each generated form, written under `tmp`.
std::vector<std::string> KinetoTraces(const testing::TempDir& tmp) {
  std::vector<std::string> out;
  for (const char* rel :
       {"real/kineto/a100x2_nccl_data.json.gz", "real/kineto/a100_alexnet_trace.json.gz",
        "real/kineto/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "real/kineto/cpu_only_rank-34.pt.trace.json.gz", "real/kineto/h100_bert_small.json.gz",
        "real/kineto/b200_eager_no_metadata.json.gz",
        "real/kineto/v100_resnet50_worker0.1623143089861.pt.trace.json.gz",
        "real/h200/jobs/4343-gpt-h200-torch/stall20/profiler/"
        "vm_1481.1795652969892807939.pt.trace.json.gz",
        "real/h200/jobs/4444-gpt-h200-cudagraphs/graphs/profiler/"
        "vm_956.1795655007791927762.pt.trace.json.gz",
        "real/h200/jobs/4545-gpt-h200-flops/flops/profiler/"
        "vm_442.1795655713837382813.pt.trace.json.gz"}) {
    const std::string path = testing::SharedFixture(rel);
    if (path.empty()) {
      std::printf("../shared/fixtures/%s absent: not re-spaced\n", rel);
      continue;
    }
    out.push_back(path);
  }
  int n = 0;
  for (const std::string args : {"kineto --form nccl", "kineto --form rccl", "kineto --form cpu-op",
                                 "kineto --form old-nccl", "kineto --form symm-mem",
                                 "kineto-math --bytes", "kineto-math --external-id correlation"}) {
    const std::string file = tmp.Sub("gen/g" + std::to_string(n++) + ".pt.trace.json.gz");
    auto gen = testing::RunCommand(Tracegen(args + " --gpus 2 --steps 2 --out " + file));
    EXPECT_EQ(gen.exit_code, 0) << args << "\n" << gen.err;
    out.push_back(file);
  }
  return out;
}

TEST(WhitespaceTest, EveryKinetoTraceReportsTheSameWhateverItsWhitespace) {
  testing::TempDir tmp;
  const std::vector<std::string> traces = KinetoTraces(tmp);
  ASSERT_GE(traces.size(), 7u);
  for (const std::string& trace : traces) {
    SCOPED_TRACE(trace);
    const std::string name = std::filesystem::path(trace).filename().string();
    std::filesystem::create_directories(tmp.Sub("original"));
    std::filesystem::copy_file(trace, tmp.Sub("original/" + name),
                               std::filesystem::copy_options::overwrite_existing);
    const std::string want = Report(tmp.Sub("original"), name);
    ASSERT_FALSE(want.empty());
    for (const char* style : {"compact", "indented", "brace"}) {
      SCOPED_TRACE(style);
      const std::string dir = tmp.Sub(style);
      std::filesystem::create_directories(dir);
      auto r = testing::RunCommand(Tracegen(std::string("respace --style ") + style + " --in '" +
                                            trace + "' --out '" + dir + "/" + name + "'"));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(Report(dir, name), want);
    }
  }
}

// Pretty-printed forms keep their manifests' figures: the old NCCL form's
// collectives are sized from their launching operators' "Input Dims" (the
// array last before a closing brace), kineto-math's bytes and FLOPs from
// its operators' shapes.
TEST(WhitespaceTest, PrettyPrintedGeneratedFormsEqualTheirManifests) {
  testing::TempDir tmp;
  // The old NCCL form plain and pretty-printed, one seed: the same report
  // (GeneratedWindowsTest checks the plain one against its manifest), every
  // kind of collective sized.
  std::string reports[2];
  for (int pretty = 0; pretty < 2; ++pretty) {
    const std::string dir = tmp.Sub(pretty ? "brace" : "plain");
    auto gen = testing::RunCommand(
        Tracegen(std::string("kineto --form old-nccl --gpus 2 --steps 3 --seed 5 --out ") + dir +
                 "/n0.pt.trace.json.gz --manifest " + dir + "/n.json" +
                 (pretty ? " --whitespace brace" : "")));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    reports[pretty] = Report(dir, "n0.pt.trace.json.gz");
    ASSERT_EQ(reports[pretty].substr(0, 7), "exit 0\n");
    reports[pretty] = reports[pretty].substr(7);
  }
  EXPECT_EQ(reports[1], reports[0]);
  const json truth = json::parse(testing::ReadFile(tmp.Sub("brace/n.json")))["files"][0];
  const json j = json::parse(reports[1]);
  ASSERT_EQ(j["collectives"].size(), 8u) << j["collectives"].dump();
  for (const json& c : j["collectives"]) {
    if (c["collective"] != "other") {
      EXPECT_GT(c["sized_calls"].get<int64_t>(), 0) << c.dump();
    }
  }
  EXPECT_EQ(j["flops"]["matmul_per_gpu_step"].get<double>(),
            truth["matmul_flops"].get<double>() / j["divisor"].get<double>());

  const std::string math = tmp.Sub("m0.pt.trace.json.gz");
  auto gen =
      testing::RunCommand(Tracegen("kineto-math --bytes --whitespace brace --out " + math +
                                   " --gpus 2 --steps 2 --seed 4 --manifest " + tmp.Sub("m.json")));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const json mtruth = json::parse(testing::ReadFile(tmp.Sub("m.json")))["files"][0];
  const std::string mreport = Report(tmp.path().string(), math);
  ASSERT_EQ(mreport.substr(0, 7), "exit 0\n");
  const json m = json::parse(mreport.substr(7));
  const double divisor = m["divisor"].get<double>();
  ASSERT_EQ(divisor, 4);
  EXPECT_EQ(m["flops"]["matmul_per_gpu_step"].get<double>(),
            mtruth["matmul_flops"].get<double>() / divisor);
  EXPECT_EQ(m["flops"]["attention_per_gpu_step"].get<double>(),
            mtruth["attention_flops"].get<double>() / divisor);
  std::map<std::string, double> got, want;
  for (const json& f : m["families"]) {
    if (f["bytes_per_gpu_step"].is_number()) got[f["family"]] = f["bytes_per_gpu_step"];
  }
  for (const auto& [family, bytes] : mtruth["bytes_by_family"].items()) {
    want[family] = bytes.get<double>() / divisor;
  }
  EXPECT_EQ(got, want) << m["families"].dump();
}

}  // namespace whitespace_test
}  // namespace profwatch
