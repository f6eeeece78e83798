// Issue 49, "every directory entry accounted for": the real `profwatch serve`
// on small trees. What the scanner finds but no layout reads is counted by
// reason on profwatch_scan_refused_total and logged once per path, however
// many scans see it; a --host-filter that matches no file likewise; a run
// skipped for retention is counted once and listed on the landing page; a
// first window held for its GPUs shows profwatch_pending_windows = 1 with its
// run's labels.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
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
  testing::WriteSmallJaxTrace(
      ProfileDir(jobs, "good", "r") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  // JAX window without plugins/profile.
  const std::string bare_ts = jobs + "/jaxbare/r/tensorboard/2024_03_01_12_00_00";
  testing::WriteSmallJaxTrace(bare_ts + "/h0.trace.json.gz", 1);
  // A window dir not named like a timestamp.
  const std::string odd_ts = ProfileDir(jobs, "oddts", "r") + "/run-2026-11-28";
  testing::WriteSmallJaxTrace(odd_ts + "/h0.trace.json.gz", 1);
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
  testing::WriteSmallJaxTrace(bare_ts + "/h0.trace.json.gz", 1);
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
  testing::WriteSmallJaxTrace(
      ProfileDir(jobs, "j", "r") + "/2024_03_01_12_00_00/node7.trace.json.gz", 1);
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
  testing::WriteSmallJaxTrace(old_file, 1);
  fs::last_write_time(old_file, fs::file_time_type::clock::now() - 72h);
  testing::WriteSmallJaxTrace(
      ProfileDir(jobs, "fresh", "r") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
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
  testing::WriteSmallJaxTrace(
      ProfileDir(jobs, "held", "r") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
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

// 10,000 window dirs of one owner named unlike a <ts> (root only: the job
// dirs are chowned to two uids). Each is counted once and the log names a
// few in one line, however many scans see them; with a directory share
// below their number, what is kept of them stops at the owner's share
// (owner_dir_cap), and the other owner's run is analysed either way.
TEST(ScanAccountingTest, TenThousandIgnoredDirsOfOneOwnerAreCountedOnceWithinItsShare) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown job dirs to other uids";
  constexpr int kOdd = 10000;
  constexpr uid_t kAlice = 4001;
  constexpr uid_t kBob = 4002;
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string profile = ProfileDir(jobs, "alice", "r");
  for (int i = 0; i < kOdd; ++i) fs::create_directories(profile + "/run-" + std::to_string(i));
  testing::WriteSmallJaxTrace(
      ProfileDir(jobs, "bob", "r") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  for (const auto& [job, uid] : {std::pair{"alice", kAlice}, std::pair{"bob", kBob}}) {
    const std::string top = jobs + "/" + job;
    ASSERT_EQ(::lchown(top.c_str(), uid, uid), 0) << top;
    for (const auto& e : fs::recursive_directory_iterator(top)) {
      ASSERT_EQ(::lchown(e.path().c_str(), uid, uid), 0) << e.path();
    }
  }
  const Labels alice_dir_cap = {{"owner", std::to_string(kAlice)}, {"reason", "owner_dir_cap"}};
  for (const int share : {100000, 4000}) {
    Serve serve(tmp, FastFlags(jobs, {"--max-dirs-per-owner", std::to_string(share)}),
                "share" + std::to_string(share));
    ASSERT_GT(serve.port(), 0) << serve.Log();
    ASSERT_TRUE(serve.WaitFor([](const std::string& m) { return Analysed(m, "bob"); }))
        << serve.Log();
    auto m = serve.MetricsAfterScans(3);
    ASSERT_TRUE(m.has_value()) << serve.Log();
    const double ignored = Refused(*m, "not_timestamp");
    const std::string log = serve.Log();
    EXPECT_EQ(Count(log, "reason=not_timestamp"), 1u) << share;
    if (share > kOdd) {
      EXPECT_EQ(ignored, kOdd) << *m;
      EXPECT_NE(log.find("count=" + std::to_string(kOdd) + " "), std::string::npos);
      EXPECT_FALSE(Sample(*m, "profwatch_owner_capped", alice_dir_cap).has_value()) << *m;
    } else {
      // The share also pays for the walk down to plugins/profile.
      EXPECT_LE(ignored, share) << *m;
      EXPECT_GE(ignored, share - 10) << *m;
      // Every odd dir is either kept (counted) or left out by the share.
      EXPECT_EQ(Sample(*m, "profwatch_owner_capped", alice_dir_cap), kOdd - ignored) << *m;
    }
    EXPECT_EQ(serve.Stop(), 0);
  }
}

}  // namespace
}  // namespace profwatch
