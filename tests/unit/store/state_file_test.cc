#include "store/state_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "testing/test_util.h"

namespace profwatch::store {
namespace {

namespace fs = std::filesystem;
using profwatch::testing::ReadFile;
using profwatch::testing::TempDir;
using profwatch::testing::WriteFile;

DaemonState SampleState() {
  DaemonState s;
  snapshot::RunState rs;
  rs.key = {"job-1", "run-a"};
  rs.window_id = "2024_03_01_12_00_00";
  rs.has_window = true;
  rs.expected_gpus = 8;
  rs.incomplete = true;
  rs.analyzed_unix = 1700000000.25;
  rs.last_activity_unix = 1699999999.5;
  aggregate::WindowStats& st = rs.MutableStats();
  st.profile_steps = 3;
  st.total_kernel_ps = 123456789012;
  s.snapshot.runs[rs.key] = rs;
  window::AnalysedWindow w;
  w.run = {"job-1", "run-a"};
  w.run_dir = "/jobs/job-1/run-a";
  w.first_dir = "/jobs/job-1/run-a/tensorboard/plugins/profile/2024_03_01_12_00_00";
  w.analyzed_unix = 1700000000.25;
  w.files.push_back({w.first_dir + "/h0.trace.json.gz", 2049, 77, 5678, 1699999999123456789});
  s.windows.push_back(w);
  return s;
}

TEST(StateFileTest, RoundTripsRunsAndAnalysedWindows) {
  DaemonState in = SampleState();
  const std::string text = SerializeDaemonState(in, 1700000001);
  // Written piece by piece, it is byte for byte the whole document's dump.
  EXPECT_EQ(nlohmann::json::parse(text).dump() + "\n", text);
  auto out = ParseDaemonState(text);
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  ASSERT_EQ(out->snapshot.runs.size(), 1u);
  const snapshot::RunState& rs = out->snapshot.runs.begin()->second;
  EXPECT_EQ(rs.key.training_job, "job-1");
  EXPECT_EQ(rs.window_id, "2024_03_01_12_00_00");
  EXPECT_EQ(rs.expected_gpus, 8);
  EXPECT_TRUE(rs.incomplete);
  EXPECT_EQ(rs.stats->total_kernel_ps, 123456789012);
  EXPECT_EQ(rs.last_activity_unix, 1699999999.5);
  ASSERT_EQ(out->windows.size(), 1u);
  EXPECT_EQ(out->windows[0].run_dir, "/jobs/job-1/run-a");
  ASSERT_EQ(out->windows[0].files.size(), 1u);
  EXPECT_EQ(out->windows[0].files[0], in.windows[0].files[0]);
}

TEST(StateFileTest, RejectsGarbageAndOtherSchemas) {
  EXPECT_EQ(ParseDaemonState("").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(ParseDaemonState("{\"schema\":").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(ParseDaemonState("[1,2]").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(ParseDaemonState("{\"schema\":\"profwatch.daemon.v9\"}").error().code,
            ErrorCode::kUnsupported);
  EXPECT_EQ(ParseDaemonState("{\"schema\":\"profwatch.daemon.v1\",\"windows\":[]}").error().code,
            ErrorCode::kCorrupt);  // no snapshot
  std::string text = SerializeDaemonState(SampleState(), 1);
  text.replace(text.find("\"ino\""), 5, "\"inode\"");
  auto bad = ParseDaemonState(text);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().context.find("windows[0]"), std::string::npos);
}

TEST(StateFileTest, AtomicWriteReplacesContentAndLeavesNoTemp) {
  TempDir tmp;
  const std::string path = tmp.Sub("state.json");
  ASSERT_TRUE(WriteFileAtomic(path, "one").has_value());
  ASSERT_TRUE(WriteFileAtomic(path, "two").has_value());
  EXPECT_EQ(ReadFile(path), "two");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  EXPECT_FALSE(WriteFileAtomic(tmp.Sub("missing/dir/state.json"), "x").has_value());
}

TEST(StateFileTest, MissingFileIsEmptyStateWithoutWarning) {
  TempDir tmp;
  std::optional<LogEvent> warning;
  DaemonState s = LoadDaemonStateOrSetAside(tmp.Sub("none.json"), 1700000000, &warning);
  EXPECT_TRUE(s.snapshot.runs.empty());
  EXPECT_FALSE(warning.has_value());
}

TEST(StateFileTest, CorruptFileIsSetAside) {
  TempDir tmp;
  const std::string path = tmp.Sub("state.json");
  WriteFile(path, "{\"schema\":\"profwatch.daemon.v1\",\"snap");
  std::optional<LogEvent> warning;
  DaemonState s = LoadDaemonStateOrSetAside(path, 1700000000, &warning);
  EXPECT_TRUE(s.snapshot.runs.empty());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::exists(path + ".corrupt-1700000000"));
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->Text().find("corrupt"), std::string::npos);
}

TEST(StateFileTest, SavedStateLoadsBack) {
  TempDir tmp;
  const std::string path = tmp.Sub("state.json");
  ASSERT_TRUE(WriteFileAtomic(path, SerializeDaemonState(SampleState(), 5)).has_value());
  std::optional<LogEvent> warning;
  DaemonState s = LoadDaemonStateOrSetAside(path, 1700000000, &warning);
  EXPECT_FALSE(warning.has_value()) << warning->Text();
  EXPECT_EQ(s.snapshot.runs.size(), 1u);
  EXPECT_EQ(s.windows.size(), 1u);
}

// The gap after a save is the larger of the minimum and cost_factor times
// what the save took, on the injected clock.
TEST(SaveThrottleTest, GapIsTheMinimumOrTenTimesTheLastSaveWhicheverIsLonger) {
  using std::chrono::milliseconds;
  FakeClock clock;
  SaveThrottle throttle(milliseconds(1000), 10);
  EXPECT_TRUE(throttle.Due(clock.Now()));  // nothing saved yet
  EXPECT_EQ(throttle.next(), TimePoint::min());

  // A cheap save (20 ms): the next one is due 1 s after it finished.
  TimePoint started = clock.Now();
  clock.Advance(milliseconds(20));
  throttle.Saved(started, clock.Now());
  EXPECT_EQ(throttle.next(), clock.Now() + milliseconds(1000));
  clock.Advance(milliseconds(999));
  EXPECT_FALSE(throttle.Due(clock.Now()));
  clock.Advance(milliseconds(1));
  EXPECT_TRUE(throttle.Due(clock.Now()));

  // A save of 700 ms (a large state): the next one waits 7 s.
  started = clock.Now();
  clock.Advance(milliseconds(700));
  throttle.Saved(started, clock.Now());
  EXPECT_EQ(throttle.next(), clock.Now() + milliseconds(7000));
  clock.Advance(milliseconds(6999));
  EXPECT_FALSE(throttle.Due(clock.Now()));
  clock.Advance(milliseconds(1));
  EXPECT_TRUE(throttle.Due(clock.Now()));

  // The clock stepping back during a save counts as a free save.
  started = clock.Now();
  clock.Advance(-milliseconds(5000));
  throttle.Saved(started, clock.Now());
  EXPECT_EQ(throttle.next(), clock.Now() + milliseconds(1000));
}

}  // namespace
}  // namespace profwatch::store
