// Issue 49, "every directory entry accounted for": the real `profwatch serve`
// on small trees. What the scanner finds but no layout reads is counted by
// reason on profwatch_scan_refused_total and logged once per path, however
// many scans see it; a --host-filter that matches no file likewise; a run
// skipped for retention is counted once and listed on the landing page; a
// first window held for its GPUs shows profwatch_pending_windows = 1 with its
// run's labels.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "testing/serve_harness.h"
#include "testing/test_util.h"

namespace profwatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Labels;
using testing::ProfileDir;
using testing::Sample;
using testing::Serve;
using testing::TempDir;
using testing::WriteFile;

// A small JAX-format trace: `gpus` devices with a few GEMM kernels each.
std::string JaxTrace(int gpus) {
  std::ostringstream out;
  out << R"j({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)j";
  for (int g = 0; g < gpus; ++g) {
    out << R"j({"ph":"M","pid":)j" << g + 1
        << R"j(,"name":"process_name","args":{"name":"/device:GPU:)j" << g << R"j("}},)j";
    out << R"j({"ph":"M","pid":)j" << g + 1
        << R"j(,"tid":16,"name":"thread_name","args":{"name":"Stream #16(Kernel)"}},)j";
    for (int k = 0; k < 4; ++k) {
      out << R"j({"ph":"X","pid":)j" << g + 1 << R"j(,"tid":16,"ts":)j" << 10 + k * 101
          << R"j(,"dur":100,"name":"Cijk_Alik_Bljk_HHS_BH_MT128x128x64_gemm","args":{}},)j";
    }
  }
  out << "{}]}";
  return out.str();
}

void WriteTrace(const std::string& path, int gpus) {
  WriteFile(path, testing::Gzip(JaxTrace(gpus)));
}

std::vector<std::string> FastFlags(const std::string& jobs,
                                   std::initializer_list<std::string> more = {}) {
  std::vector<std::string> flags = {"--watch", jobs, "--settle", "1s", "--poll-interval", "1s"};
  flags.insert(flags.end(), more);
  return flags;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bool Analysed(const std::string& m, const std::string& job) {
  return Sample(m, "profwatch_window_gpus", {{"training_job", job}}).has_value();
}

double Refused(const std::string& m, const std::string& reason) {
  return Sample(m, "profwatch_scan_refused_total", {{"reason", reason}}).value_or(0);
}

// Each layout the scanner does not read, beside a run it does: counted once
// by its reason and logged once naming its path, while scans go on.
TEST(ScanAccountingTest, IgnoredLayoutsAreCountedByReasonAndLoggedOnce) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteTrace(ProfileDir(jobs, "good", "r") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  // JAX window without plugins/profile.
  const std::string bare_ts = jobs + "/jaxbare/r/tensorboard/2024_03_01_12_00_00";
  WriteTrace(bare_ts + "/h0.trace.json.gz", 1);
  // A window dir not named like a timestamp.
  const std::string odd_ts = ProfileDir(jobs, "oddts", "r") + "/run-2026-11-28";
  WriteTrace(odd_ts + "/h0.trace.json.gz", 1);
  // Kineto output not named *.pt.trace.json*.
  const std::string renamed = jobs + "/torch/r/traces";
  WriteFile(renamed + "/rank0_trace.json", "{}");
  WriteFile(renamed + "/worker0.1234.trace.json", "{}");
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor([](const std::string& m) { return Analysed(m, "good"); }))
      << serve.Log();
  auto m = serve.MetricsAfterScans(3);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Refused(*m, "ts_outside_profile"), 1) << *m;
  EXPECT_EQ(Refused(*m, "not_timestamp"), 1) << *m;
  EXPECT_EQ(Refused(*m, "unknown_trace_name"), 1) << *m;
  EXPECT_FALSE(Analysed(*m, "jaxbare") || Analysed(*m, "oddts") || Analysed(*m, "torch")) << *m;
  const std::string log = serve.Log();
  for (const std::string& path : {bare_ts, odd_ts, renamed}) {
    EXPECT_EQ(Count(log, "paths=" + path + " "), 1u) << path << "\n" << log;
  }
  EXPECT_EQ(Count(log, "reason=ts_outside_profile"), 1u) << log;
  EXPECT_EQ(Count(log, "reason=not_timestamp"), 1u) << log;
  EXPECT_EQ(Count(log, "reason=unknown_trace_name"), 1u) << log;
  // Gone and back: a new finding, counted again.
  fs::remove_all(jobs + "/jaxbare");
  ASSERT_TRUE(serve.WaitScans(2));
  WriteTrace(bare_ts + "/h0.trace.json.gz", 1);
  ASSERT_TRUE(serve.WaitFor([](const std::string& t) {
    return Refused(t, "ts_outside_profile") == 2;
  })) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// A --host-filter matching none of the trace files: counted once and said
// once while it stays so.
TEST(ScanAccountingTest, HostFilterMatchingNothingIsCountedAndLoggedOnce) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteTrace(ProfileDir(jobs, "j", "r") + "/2024_03_01_12_00_00/node7.trace.json.gz", 1);
  Serve serve(tmp, FastFlags(jobs, {"--host-filter", "node8"}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor([](const std::string& t) { return Refused(t, "host_filter") == 1; }))
      << serve.Log();
  auto m = serve.MetricsAfterScans(3);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Refused(*m, "host_filter"), 1) << *m;
  EXPECT_EQ(Count(serve.Log(), "--host-filter matches none of the trace files found"), 1u)
      << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// A run whose files are older than --retention (an archive extracted with
// its old times): not analysed, counted once, listed on the landing page.
TEST(ScanAccountingTest, RunSkippedForRetentionIsCountedAndListed) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string old_file =
      ProfileDir(jobs, "archived", "r1") + "/2024_03_01_12_00_00/h0.trace.json.gz";
  WriteTrace(old_file, 1);
  fs::last_write_time(old_file, fs::file_time_type::clock::now() - 72h);
  WriteTrace(ProfileDir(jobs, "fresh", "r") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor([](const std::string& t) {
    return Analysed(t, "fresh") && Refused(t, "retention") == 1;
  })) << serve.Log();
  auto m = serve.MetricsAfterScans(3);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Refused(*m, "retention"), 1) << *m;
  EXPECT_FALSE(Analysed(*m, "archived")) << *m;
  std::optional<std::string> landing = testing::HttpGet(serve.port(), "/");
  ASSERT_TRUE(landing.has_value());
  const size_t section = landing->find("Runs skipped for retention");
  ASSERT_NE(section, std::string::npos) << *landing;
  EXPECT_NE(landing->find("archived/r1: last activity", section), std::string::npos) << *landing;
  EXPECT_EQ(landing->find("fresh/r: last activity"), std::string::npos) << *landing;
  EXPECT_EQ(serve.Stop(), 0);
}

// A run's first window short of --expected-gpus is held until the window
// timeout: its run shows one pending window, with its labels, and nothing
// else yet.
TEST(ScanAccountingTest, HeldFirstWindowShowsOnePendingWindowWithItsLabels) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteTrace(ProfileDir(jobs, "held", "r") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  Serve serve(tmp, FastFlags(jobs, {"--expected-gpus", "2", "--window-timeout", "1h"}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitForLog("window held: fewer gpus than --expected-gpus", 30s)) << serve.Log();
  auto m = serve.MetricsAfterScans(3);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  const Labels run = {{"training_job", "held"}, {"run", "r"}};
  EXPECT_EQ(Sample(*m, "profwatch_pending_windows", run), 1) << *m << serve.Log();
  EXPECT_FALSE(Sample(*m, "profwatch_window_gpus", run).has_value()) << *m;
  EXPECT_EQ(serve.Stop(), 0);
}

}  // namespace
}  // namespace profwatch
