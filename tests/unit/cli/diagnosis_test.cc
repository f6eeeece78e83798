// `profwatch analyze --format json` on a generated window with a serial
// blocker kernel and one stretched GPU (testing/diagnosis_window.h): every
// diagnosis figure of issue #22 equals the one computed by brute force in
// the generator.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/diagnosis_window.h"
#include "testing/test_util.h"

namespace profwatch {
// Named for this file: the unity build compiles it with its neighbours.
namespace diagnosis_test {

using nlohmann::json;

constexpr double kPs = 1e-12;

json AnalyzeJson(const std::string& args) {
  const std::string cmd = "'" + testing::BinaryPath("profwatch") +
                          "' analyze --format json --rules nvidia --family-top-n 0 " + args;
  auto r = testing::RunCommand(cmd);
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
  return json::parse(r.out);
}

std::string Basename(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

class DiagnosisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.Sub("jobs/j/r/tensorboard/plugins/profile/2026_11_25_10_00_00");
    std::filesystem::create_directories(dir_);
    w_ = testing::WriteDiagnosisWindow(dir_, 5);
    report_ = AnalyzeJson(dir_);
  }
  testing::TempDir tmp_;
  std::string dir_;
  testing::DiagnosisWindow w_;
  json report_;
};

TEST_F(DiagnosisTest, DeviceFiguresEqualTheBruteForceOnes) {
  ASSERT_EQ(report_["devices"].size(), w_.devices.size());
  for (const auto& want : w_.devices) {
    const json* got = nullptr;
    for (const auto& d : report_["devices"]) {
      if (Basename(d["file"]) == want.host + ".trace.json" && d["device"] == want.device) got = &d;
    }
    ASSERT_NE(got, nullptr) << want.host << " " << want.device;
    SCOPED_TRACE(want.host + " " + want.device);
    EXPECT_DOUBLE_EQ((*got)["busy_seconds"].get<double>(), want.busy_ps * kPs);
    EXPECT_DOUBLE_EQ((*got)["compute_busy_seconds"].get<double>(), want.compute_busy_ps * kPs);
    EXPECT_DOUBLE_EQ((*got)["exclusive_seconds"].get<double>(), want.exclusive_ps * kPs);
    EXPECT_DOUBLE_EQ((*got)["overlapped_seconds"].get<double>(), want.overlapped_ps * kPs);
    EXPECT_DOUBLE_EQ((*got)["idle_seconds"].get<double>(), want.idle_ps * kPs);
    EXPECT_GT(want.overlapped_ps, 0);
    EXPECT_GT(want.idle_ps, 0);
  }
}

// Per kernel name and per family, summed over the devices and divided by
// GPUs x steps; both top lists hold every kernel with time (top-n 0).
TEST_F(DiagnosisTest, KernelAndFamilyFiguresAreTheSumsPerGpuStep) {
  std::map<std::string, int64_t> exclusive, idle_before;
  for (const auto& d : w_.devices) {
    for (const auto& [n, ps] : d.exclusive_by_name) exclusive[n] += ps;
    for (const auto& [n, ps] : d.idle_before_by_name) idle_before[n] += ps;
  }
  const double divisor = static_cast<double>(w_.devices.size() * w_.steps);
  std::map<std::string, std::string> family_of;
  auto check = [&](const json& list, const std::map<std::string, int64_t>& want) {
    ASSERT_EQ(list.size(), want.size()) << list.dump();
    for (const auto& k : list) {
      const std::string name = k["name"];
      ASSERT_TRUE(want.contains(name)) << name;
      EXPECT_DOUBLE_EQ(k["seconds_per_gpu_step"].get<double>(), want.at(name) * kPs / divisor)
          << name;
      family_of[name] = k["family"];
    }
    for (size_t i = 1; i < list.size(); ++i) {
      EXPECT_GE(list[i - 1]["seconds_per_gpu_step"], list[i]["seconds_per_gpu_step"]);
    }
  };
  check(report_["top_exclusive_kernels"], exclusive);
  check(report_["top_idle_before_kernels"], idle_before);
  // The blocker ran alone for its whole length, every step on every GPU.
  EXPECT_EQ(report_["top_exclusive_kernels"][0]["name"], w_.blocker);
  std::map<std::string, int64_t> family_exclusive, family_idle_before;
  for (const auto& [n, ps] : exclusive) family_exclusive[family_of.at(n)] += ps;
  for (const auto& [n, ps] : idle_before) family_idle_before[family_of.at(n)] += ps;
  for (const auto& f : report_["families"]) {
    const std::string fam = f["family"];
    if (f["launches"].get<int64_t>() == 0) {
      // A family that ran nothing: its times are null, never 0 (issue #65).
      EXPECT_TRUE(f["exclusive_seconds_per_gpu_step"].is_null()) << f.dump();
      EXPECT_TRUE(f["idle_before_seconds_per_gpu_step"].is_null()) << f.dump();
      EXPECT_EQ(family_exclusive[fam] + family_idle_before[fam], 0) << fam;
      continue;
    }
    EXPECT_NEAR(f["exclusive_seconds_per_gpu_step"].get<double>(),
                family_exclusive[fam] * kPs / divisor, 1e-15)
        << fam;
    EXPECT_NEAR(f["idle_before_seconds_per_gpu_step"].get<double>(),
                family_idle_before[fam] * kPs / divisor, 1e-15)
        << fam;
  }
}

TEST_F(DiagnosisTest, TheStretchedGpuIsTheStraggler) {
  std::vector<int64_t> busy;
  int64_t slow = 0;
  for (const auto& d : w_.devices) {
    busy.push_back(d.compute_busy_ps);
    if (d.host == w_.slow_host && d.device == w_.slow_device) slow = d.compute_busy_ps;
  }
  std::sort(busy.begin(), busy.end());
  ASSERT_EQ(busy.size() % 2, 0u);
  const double median = (static_cast<double>(busy[busy.size() / 2 - 1]) +
                         static_cast<double>(busy[busy.size() / 2])) /
                        2;
  ASSERT_EQ(busy.back(), slow);
  const json& s = report_["straggler"];
  EXPECT_EQ(s["host"], w_.slow_host);
  EXPECT_EQ(s["device"], w_.slow_device);
  EXPECT_EQ(Basename(s["file"]), w_.slow_host + ".trace.json");
  EXPECT_DOUBLE_EQ(s["compute_busy_seconds"].get<double>(), slow * kPs);
  EXPECT_DOUBLE_EQ(s["median_compute_busy_seconds"].get<double>(), median * kPs);
  EXPECT_DOUBLE_EQ(s["ratio"].get<double>(), static_cast<double>(slow) / median);
  EXPECT_GT(s["ratio"].get<double>(), 1.1);
  const json& q = report_["gpu_compute_busy_seconds"];
  EXPECT_DOUBLE_EQ(q["min"].get<double>(), busy.front() * kPs / w_.steps);
  EXPECT_DOUBLE_EQ(q["median"].get<double>(), median * kPs / w_.steps);
  EXPECT_DOUBLE_EQ(q["max"].get<double>(), slow * kPs / w_.steps);
}

// Regions: the scopes' kernel time, jit frames dropped and wrappers
// unwrapped, per GPU per step; --top-regions sums the rest as other,
// --region-depth cuts the path.
TEST_F(DiagnosisTest, RegionsAreTheScopesKernelTimePerGpuStep) {
  const double divisor = static_cast<double>(w_.devices.size() * w_.steps);
  std::vector<std::pair<int64_t, std::string>> want;
  for (const auto& [region, ps] : w_.region_ps) want.emplace_back(ps, region);
  std::sort(want.rbegin(), want.rend());
  ASSERT_EQ(want.size(), 5u);
  const json& all = report_["regions"];
  ASSERT_EQ(all.size(), 5u) << all.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(all[i]["region"], want[i].second);
    EXPECT_DOUBLE_EQ(all[i]["kernel_seconds_per_gpu_step"].get<double>(),
                     want[i].first * kPs / divisor);
  }
  const json two = AnalyzeJson("--top-regions 2 " + dir_)["regions"];
  ASSERT_EQ(two.size(), 3u) << two.dump();
  EXPECT_EQ(two[0]["region"], want[0].second);
  EXPECT_EQ(two[1]["region"], want[1].second);
  EXPECT_EQ(two[2]["region"], "other");
  EXPECT_DOUBLE_EQ(two[2]["kernel_seconds_per_gpu_step"].get<double>(),
                   (want[2].first + want[3].first + want[4].first) * kPs / divisor);
  const json one = AnalyzeJson("--region-depth 1 " + dir_)["regions"];
  std::map<std::string, double> top;
  for (const auto& r : one) top[r["region"]] = r["kernel_seconds_per_gpu_step"];
  const int64_t decoder = w_.region_ps.at("decoder/layers/mlp") +
                          w_.region_ps.at("decoder/layers/attention") +
                          w_.region_ps.at("decoder/norm");
  ASSERT_EQ(top.size(), 3u) << one.dump();
  EXPECT_DOUBLE_EQ(top["decoder"], decoder * kPs / divisor);
  EXPECT_DOUBLE_EQ(top["embed"], w_.region_ps.at("embed/gather") * kPs / divisor);
  EXPECT_DOUBLE_EQ(top["optimizer"], w_.region_ps.at("optimizer/adam/update") * kPs / divisor);
}

// compare puts exclusive time per family and region time side by side,
// each equal to what analyze reports for that variant.
TEST_F(DiagnosisTest, CompareShowsExclusiveAndRegionTimePerVariant) {
  const std::string other = tmp_.Sub("jobs/j/r2/tensorboard/plugins/profile/2026_11_25_11_00_00");
  std::filesystem::create_directories(other);
  testing::WriteDiagnosisWindow(other, 8);
  const json second = AnalyzeJson(other);
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                               "' compare --format json --rules nvidia --label a --label b " +
                               dir_ + " " + other);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out);
  ASSERT_EQ(c["variants"].size(), 2u);
  size_t checked = 0;
  for (size_t i = 0; i < 2; ++i) {
    const json& v = c["variants"][i];
    const json& report = i == 0 ? report_ : second;
    for (const auto& f : report["families"]) {
      const std::string row = "exclusive " + f["family"].get<std::string>();
      if (!f["exclusive_seconds_per_gpu_step"].is_number() ||
          f["exclusive_seconds_per_gpu_step"].get<double>() == 0) {
        continue;
      }
      ASSERT_TRUE(v.contains(row)) << row << " " << v.dump();
      EXPECT_DOUBLE_EQ(v[row].get<double>(), f["exclusive_seconds_per_gpu_step"].get<double>());
      ++checked;
    }
    for (const auto& reg : report["regions"]) {
      const std::string row = "region " + reg["region"].get<std::string>();
      ASSERT_TRUE(v.contains(row)) << row << " " << v.dump();
      EXPECT_DOUBLE_EQ(v[row].get<double>(), reg["kernel_seconds_per_gpu_step"].get<double>());
      ++checked;
    }
  }
  EXPECT_GE(checked, 2u * (1 + 5));  // nccl at least, and five regions each
  EXPECT_NE(c["variants"][0]["region decoder/layers/mlp"],
            c["variants"][1]["region decoder/layers/mlp"]);
}

// The same capture read from its JSON and from its .xplane.pb gives the same
// regions: the xplane's "name" stat is what the converter writes as args.name.
TEST(DiagnosisRealTest, XplaneAndJsonOfOneCaptureGiveTheSameRegions) {
  const std::string xplane =
      testing::SharedFixture("real/xplane/mi300x_jax08_gemm_tw003.xplane.pb");
  const std::string json_trace =
      testing::SharedFixture("converted/mi300x_jax08_gemm_tw003.trace.json.gz");
  if (xplane.empty() || json_trace.empty()) GTEST_SKIP() << "shared fixtures absent";
  const json a = AnalyzeJson(xplane)["regions"];
  const json b = AnalyzeJson(json_trace)["regions"];
  ASSERT_EQ(a.size(), 2u) << a.dump();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[0]["region"], "dot_general");  // jit(dot)/dot_general
  EXPECT_EQ(a[1]["region"], "broadcast_in_dim");
}

// An input without scopes has no regions, and the reports say so.
TEST(DiagnosisNoScopeTest, NoScopesNoRegionsSaidInTheReport) {
  testing::TempDir tmp;
  const std::string file = tmp.Sub("h0.trace.json");
  testing::WriteFile(file, R"({"traceEvents":[
    {"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},
    {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"Stream #1"}},
    {"ph":"X","pid":1,"tid":1,"ts":10,"dur":5,"name":"gemm_kernel","args":{"hlo_op":"dot"}}]})");
  EXPECT_TRUE(AnalyzeJson(file)["regions"].is_null());
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") + "' analyze " + file);
  EXPECT_NE(r.out.find("regions                none: the input carries no scopes (JAX args.name, "),
            std::string::npos)
      << r.out;
}

TEST_F(DiagnosisTest, TableSaysWhatBlocksWhoWaitsAndWhoStraggles) {
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                               "' analyze --format table --rules nvidia " + dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& t = r.out;
  ASSERT_NE(t.find("Diagnosis (per GPU per step; shares of a "), std::string::npos) << t;
  EXPECT_NE(t.find("main-stream blocker    " + w_.blocker + " (nccl): alone "), std::string::npos)
      << t;
  EXPECT_NE(t.find("straggler              " + w_.slow_host + " " + w_.slow_device),
            std::string::npos)
      << t;
  // Short gaps between the steps: said, and not called a host stall.
  EXPECT_NE(t.find("between steps          "), std::string::npos) << t;
  EXPECT_EQ(t.find("host/input stall"), std::string::npos) << t;
  EXPECT_NE(t.find("top regions"), std::string::npos) << t;
}

}  // namespace diagnosis_test
}  // namespace profwatch
