#include "store/state_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

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
  // A malformed window record is dropped alone, not the file.
  std::string text = SerializeDaemonState(SampleState(), 1);
  text.replace(text.find("\"ino\""), 5, "\"inode\"");
  auto bad = ParseDaemonState(text);
  ASSERT_TRUE(bad.has_value()) << bad.error().ToString();
  EXPECT_TRUE(bad->windows.empty());
  EXPECT_EQ(bad->snapshot.runs.size(), 1u);
  ASSERT_EQ(bad->dropped.size(), 1u);
  EXPECT_NE(bad->dropped[0].what.find("windows[0]"), std::string::npos);
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

// A run that cannot be loaded is dropped alone and named; the file's other
// runs and windows load (issue 60: a duplicate run set the whole file aside).
TEST(StateFileTest, ABadRunOrWindowRecordIsDroppedAloneNotTheFile) {
  DaemonState in = SampleState();
  snapshot::RunState other = in.snapshot.runs.begin()->second;
  other.key.training_job = "job-2";
  in.snapshot.runs[other.key] = other;
  window::AnalysedWindow w2 = in.windows[0];
  w2.run.training_job = "job-2";
  in.windows.push_back(w2);
  std::string text = SerializeDaemonState(in, 1);
  // job-2's run becomes a second job-1 run; job-2's window record loses its inode.
  const std::string job2 = R"("training_job":"job-2","window_id")";
  text.replace(text.find(job2), job2.size(), R"("training_job":"job-1","window_id")");
  const size_t first_ino = text.find("\"ino\"", text.find(R"("windows":[)"));
  text.replace(text.find("\"ino\"", first_ino + 1), 5, "\"inode\"");
  TempDir tmp;
  const std::string path = tmp.Sub("state.json");
  WriteFile(path, text);
  std::optional<LogEvent> warning;
  DaemonState s = LoadDaemonStateOrSetAside(path, 1700000000, &warning);
  EXPECT_FALSE(warning.has_value()) << warning->Text();
  EXPECT_TRUE(fs::exists(path));
  ASSERT_EQ(s.snapshot.runs.size(), 1u);
  EXPECT_EQ(s.snapshot.runs.begin()->first.training_job, "job-1");
  ASSERT_EQ(s.windows.size(), 1u);
  EXPECT_EQ(s.windows[0].run.training_job, "job-1");
  ASSERT_EQ(s.dropped.size(), 2u);
  EXPECT_EQ(s.dropped[0].reason, "duplicate");
  EXPECT_NE(s.dropped[0].what.find("snapshot: state: runs[1]: duplicate run job-1/run-a"),
            std::string::npos)
      << s.dropped[0].what;
  EXPECT_EQ(s.dropped[1].reason, "invalid");
  EXPECT_NE(s.dropped[1].what.find("windows[1]"), std::string::npos) << s.dropped[1].what;
}

TEST(StateFileTest, NamesAndPathsThatAreNotUtf8RoundTripExactly) {
  DaemonState in = SampleState();
  snapshot::RunState rs = in.snapshot.runs.begin()->second;
  in.snapshot.runs.clear();
  in.windows.clear();
  for (const std::string job : {"x\xff", "x\xfe", "x\\xff"}) {
    rs.key.training_job = job;
    in.snapshot.runs[rs.key] = rs;
    window::AnalysedWindow w;
    w.run = {job, "run-a"};
    w.run_dir = "/jobs/" + job + "/run-a";
    w.first_dir = w.run_dir + "/tensorboard/plugins/profile/2024_03_01_12_00_00";
    w.files.push_back({w.first_dir + "/h\xc0.trace.json.gz", 1, 2, 3, 4});
    in.windows.push_back(w);
  }
  auto out = ParseDaemonState(SerializeDaemonState(in, 1));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_TRUE(out->dropped.empty());
  ASSERT_EQ(out->snapshot.runs.size(), 3u);
  ASSERT_EQ(out->windows.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out->windows[i].run, in.windows[i].run);
    EXPECT_EQ(out->windows[i].run_dir, in.windows[i].run_dir);
    EXPECT_EQ(out->windows[i].first_dir, in.windows[i].first_dir);
    EXPECT_EQ(out->windows[i].files, in.windows[i].files);
    EXPECT_EQ(out->snapshot.runs.count(snapshot::RunKey{in.windows[i].run.training_job, "run-a"}),
              1u);
  }
}

// A file that keeps failing is set aside at every start: only the
// kMaxSetAsideStateFiles newest set-aside files stay, others' files too.
TEST(StateFileTest, SetAsideFilesAreBoundedToTheNewest) {
  TempDir tmp;
  const std::string path = tmp.Sub("state.json");
  WriteFile(path + ".corrupt-1700000001", "old");
  WriteFile(path + ".corrupt-99", "older, fewer digits");
  WriteFile(path + ".corrupt-notes", "not ours: kept");
  WriteFile(tmp.Sub("other.json.corrupt-1"), "another file's: kept");
  std::optional<LogEvent> warning;
  for (int64_t t = 1700000010; t < 1700000014; ++t) {
    WriteFile(path, "{\"schema\":");
    warning.reset();
    LoadDaemonStateOrSetAside(path, static_cast<double>(t), &warning);
  }
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp.path())) left.insert(e.path().filename());
  EXPECT_EQ(left,
            (std::set<std::string>{"state.json.corrupt-1700000011", "state.json.corrupt-1700000012",
                                   "state.json.corrupt-1700000013", "state.json.corrupt-notes",
                                   "other.json.corrupt-1"}));
  static_assert(kMaxSetAsideStateFiles == 3);
  // The last start removed the oldest one left and said so.
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->Text().find("removed_older=" + path + ".corrupt-1700000010"),
            std::string::npos)
      << warning->Text();
}

}  // namespace
}  // namespace profwatch::store
