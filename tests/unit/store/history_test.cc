// HistoryWriter (serve --history) and the compare-side reader: one JSON line
// per window carrying the run state, rotation to FILE.1, latest-entry lookup
// by JOB/RUN[@WINDOW].
#include "store/history.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "store/state_json.h"
#include "testing/test_util.h"

namespace profwatch::store {
namespace {

using testing::TempDir;

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

snapshot::RunState MakeRun(const std::string& job, const std::string& run,
                           const std::string& window, int64_t kernel_ps) {
  snapshot::RunState rs;
  rs.key = {job, run};
  rs.window_id = window;
  rs.has_window = true;
  aggregate::WindowStats& st = rs.MutableStats();
  st.profile_steps = 2;
  st.total_kernel_ps = kernel_ps;
  aggregate::DeviceSummary d;
  d.file = "h0.trace.json.gz";
  d.device = "0";
  d.kernel_ps = kernel_ps;
  d.busy_ps = kernel_ps;
  d.span_ps = kernel_ps;
  st.devices.push_back(d);
  st.launcher_mode = aggregate::LauncherMode::kOneGpuPerProcess;
  rs.step_seconds = 0.8;
  rs.step_source = "log";
  return rs;
}

TEST(HistoryLineTest, CarriesSchemaRunWindowTheRunStateAndTheGivenReport) {
  const nlohmann::ordered_json report = {{"schema", "profwatch.window.v1"}, {"gpus", 1}};
  const std::string line = HistoryLine(
      MakeRun("jobA", "run1", "2024_01_01_00_00_00", 1'000'000'000'000), 1700000000.5, report);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["schema"], "profwatch.history.v1");
  EXPECT_EQ(j["time"], 1700000000.5);
  EXPECT_EQ(j["training_job"], "jobA");
  EXPECT_EQ(j["run"], "run1");
  EXPECT_EQ(j["window"], "2024_01_01_00_00_00");
  EXPECT_EQ(j["report"], nlohmann::json::parse(report.dump()));
  // The run state is the state file's encoding of the same run.
  const snapshot::RunState rs = MakeRun("jobA", "run1", "2024_01_01_00_00_00", 1'000'000'000'000);
  EXPECT_EQ(j["state"], nlohmann::json::parse(SerializeRunState(rs)));
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(HistoryWriterTest, AppendsOneLinePerCallAndRotatesPastTheLimit) {
  TempDir tmp;
  const std::string path = tmp.Sub("h.jsonl");
  const std::string a(100, 'a'), b(100, 'b'), c(100, 'c');
  HistoryWriter w(path, 250);
  ASSERT_TRUE(w.Append(a));
  ASSERT_TRUE(w.Append(b));  // 202 bytes: fits
  EXPECT_EQ(Lines(path), (std::vector<std::string>{a, b}));
  EXPECT_FALSE(std::filesystem::exists(path + ".1"));
  ASSERT_TRUE(w.Append(c));  // 303 > 250: rotate first
  EXPECT_EQ(Lines(path + ".1"), (std::vector<std::string>{a, b}));
  EXPECT_EQ(Lines(path), (std::vector<std::string>{c}));
  ASSERT_TRUE(w.Append(a));
  ASSERT_TRUE(w.Append(b));  // replaces the older FILE.1
  EXPECT_EQ(Lines(path + ".1"), (std::vector<std::string>{c, a}));
  EXPECT_EQ(Lines(path), (std::vector<std::string>{b}));
}

TEST(HistoryWriterTest, ALineLargerThanTheLimitIsStillWrittenAlone) {
  TempDir tmp;
  const std::string path = tmp.Sub("h.jsonl");
  HistoryWriter w(path, 10);
  ASSERT_TRUE(w.Append(std::string(50, 'x')));
  ASSERT_TRUE(w.Append(std::string(60, 'y')));
  EXPECT_EQ(Lines(path), (std::vector<std::string>{std::string(60, 'y')}));
  EXPECT_EQ(Lines(path + ".1"), (std::vector<std::string>{std::string(50, 'x')}));
}

TEST(HistoryWriterTest, FollowsThePathWhenTheFileIsRemoved) {
  TempDir tmp;
  const std::string path = tmp.Sub("h.jsonl");
  HistoryWriter w(path, 1 << 20);
  ASSERT_TRUE(w.Append("one"));
  std::filesystem::remove(path);
  ASSERT_TRUE(w.Append("two"));
  EXPECT_EQ(Lines(path), (std::vector<std::string>{"two"}));
}

TEST(HistoryWriterTest, UnwritableDirectoryIsAnIoError) {
  HistoryWriter w("/nonexistent-dir-profwatch/h.jsonl", 100);
  Status s = w.Append("x");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kIo);
}

TEST(HistoryReaderTest, ParsesQueries) {
  auto q = ParseHistoryQuery("jobA/run1");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->training_job, "jobA");
  EXPECT_EQ(q->run, "run1");
  EXPECT_FALSE(q->window);
  q = ParseHistoryQuery("jobA/sweep/run1@2024_01_01_00_00_00");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->run, "sweep/run1");
  EXPECT_EQ(q->window, "2024_01_01_00_00_00");
  EXPECT_FALSE(ParseHistoryQuery("run1"));
  EXPECT_FALSE(ParseHistoryQuery("/jobA"));
  EXPECT_FALSE(ParseHistoryQuery("jobA/"));
  EXPECT_FALSE(ParseHistoryQuery("jobA/run1@"));
}

// A line over its byte cap is written without state and report, saying so
// and how long it would have been; compare skips it and finds the window
// before.
TEST(HistoryLineTest, ALineOverItsCapKeepsItsNamesAndSaysItWasCut) {
  const snapshot::RunState rs = MakeRun("jobA", "run1", "w2", 2'000'000'000'000);
  bool cut = true;
  EXPECT_NE(HistoryLine(rs, 2, {}, kMaxHistoryLineBytes, &cut).find("\"state\""),
            std::string::npos);
  EXPECT_FALSE(cut);
  const std::string line = HistoryLine(rs, 2, {{"big", std::string(1000, 'x')}}, 600, &cut);
  EXPECT_TRUE(cut);
  EXPECT_LE(line.size(), 600u);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["window"], "w2");
  EXPECT_EQ(j["training_job"], "jobA");
  EXPECT_EQ(j["cut"], "line_bytes");
  EXPECT_GT(j["line_bytes"].get<uint64_t>(), 1000u);
  EXPECT_FALSE(j.contains("state"));
  EXPECT_FALSE(j.contains("report"));
  TempDir tmp;
  const std::string path = tmp.Sub("h.jsonl");
  {
    std::ofstream out(path);
    out << HistoryLine(MakeRun("jobA", "run1", "w1", 1'000'000'000'000), 1, {}) << "\n"
        << line << "\n";
  }
  auto latest = FindInHistory(path, {"jobA", "run1", std::nullopt});
  ASSERT_TRUE(latest) << latest.error().ToString();
  EXPECT_EQ(latest->window_id, "w1");
}

TEST(HistoryReaderTest, FindsTheLatestMatchingWindowAcrossRotation) {
  TempDir tmp;
  const std::string path = tmp.Sub("h.jsonl");
  {
    std::ofstream old(path + ".1");
    old << HistoryLine(MakeRun("jobA", "run1", "w1", 1'000'000'000'000), 1, {}) << "\n";
    old << "not json at all\n";
    old << R"({"training_job":"jobA","run":"run1","report":{"gpus":"x"}})"
        << "\n";
  }
  {
    std::ofstream cur(path);
    cur << HistoryLine(MakeRun("jobA", "run1", "w2", 2'000'000'000'000), 2, {}) << "\n";
    cur << HistoryLine(MakeRun("jobA", "run10", "w3", 4'000'000'000'000), 3, {}) << "\n";
  }
  auto latest = FindInHistory(path, {"jobA", "run1", std::nullopt});
  ASSERT_TRUE(latest) << latest.error().ToString();
  EXPECT_EQ(latest->window_id, "w2");
  EXPECT_EQ(latest->stats->total_kernel_ps, 2'000'000'000'000);
  EXPECT_DOUBLE_EQ(latest->stats->PerGpuStepSeconds(latest->stats->total_kernel_ps), 1.0);
  EXPECT_EQ(latest->stats->gpus(), 1);
  EXPECT_EQ(latest->stats->profile_steps, 2);
  EXPECT_EQ(latest->stats->launcher_mode, aggregate::LauncherMode::kOneGpuPerProcess);
  EXPECT_EQ(latest->step_seconds, 0.8);
  EXPECT_EQ(latest->step_source, "log");
  auto older = FindInHistory(path, {"jobA", "run1", "w1"});
  ASSERT_TRUE(older);
  EXPECT_EQ(older->stats->total_kernel_ps, 1'000'000'000'000);
  auto missing = FindInHistory(path, {"jobA", "run2", std::nullopt});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(FindInHistory(tmp.Sub("absent.jsonl"), {"a", "b", std::nullopt}).error().code,
            ErrorCode::kIo);
}

// Lines from before the run state was written carry only a report: compare
// does not re-parse reports, and the error says why nothing matched.
TEST(HistoryReaderTest, LinesWithoutRunStateAreSkippedAndNamedInTheError) {
  TempDir tmp;
  const std::string path = tmp.Sub("h.jsonl");
  {
    std::ofstream out(path);
    nlohmann::json old =
        nlohmann::json::parse(HistoryLine(MakeRun("jobA", "run1", "w1", 1'000'000'000'000), 1, {}));
    old.erase("state");
    out << old.dump() << "\n";
    out << R"({"training_job":"jobA","run":"run1","state":{"garbage":true}})"
        << "\n";
  }
  auto r = FindInHistory(path, {"jobA", "run1", std::nullopt});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().context.find("1 matching lines predate the analysis state"),
            std::string::npos)
      << r.error().context;
}

}  // namespace
}  // namespace profwatch::store

namespace profwatch::store {
namespace {

// --history per owner: the daemon's own uid writes FILE, another owner
// FILE.uidN; each rotates on its own, so one owner's lines never rotate away
// another's; the reader finds a run in any of them, by the line's time.
TEST(OwnerHistoryTest, EachOwnerRotatesItsOwnFileAndTheReaderFindsAll) {
  TempDir tmp;
  const std::string path = tmp.Sub("h.jsonl");
  const std::string line = HistoryLine(MakeRun("jobB", "runB", "w1", 1'000'000'000'000), 1, {});
  OwnerHistory history(path, line.size() + 2, /*self=*/1000);
  EXPECT_EQ(history.PathOf(1000), path);
  EXPECT_EQ(history.PathOf(watch::kNoOwner), path);
  EXPECT_EQ(history.PathOf(4002), path + ".uid4002");
  bool rotated = true;
  ASSERT_TRUE(history.Append(4002, line, &rotated));
  EXPECT_FALSE(rotated);
  ASSERT_TRUE(history.Append(1000, HistoryLine(MakeRun("jobS", "runS", "w1", 1), 2, {})));
  // Owner 4001 writes three windows: its file rotates twice, no one else's.
  int rotations = 0;
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(history.Append(
        4001,
        HistoryLine(MakeRun("jobA", "runA", "w" + std::to_string(i), i * 1'000'000'000'000), 10 + i,
                    {}),
        &rotated));
    rotations += rotated ? 1 : 0;
  }
  EXPECT_EQ(rotations, 2);
  EXPECT_EQ(Lines(path + ".uid4002").size(), 1u);
  EXPECT_EQ(Lines(path).size(), 1u);
  EXPECT_EQ(Lines(path + ".uid4001").size(), 1u);
  EXPECT_EQ(Lines(path + ".uid4001.1").size(), 1u);
  auto b = FindInHistory(path, {"jobB", "runB", std::nullopt});
  ASSERT_TRUE(b) << b.error().ToString();
  EXPECT_EQ(b->window_id, "w1");
  auto a = FindInHistory(path, {"jobA", "runA", std::nullopt});
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->window_id, "w3");
  auto a2 = FindInHistory(path, {"jobA", "runA", "w2"});
  ASSERT_TRUE(a2) << a2.error().ToString();
  EXPECT_FALSE(FindInHistory(path, {"jobA", "runA", "w1"}));  // rotated away with its own file
  EXPECT_TRUE(FindInHistory(path, {"jobS", "runS", std::nullopt}));
}

// Names that are not UTF-8 keep their bytes in the line (reversible form,
// core/text.h) and compare finds the run by its bytes or by the form the
// labels show; a name differing only in such a byte is another run.
TEST(HistoryReaderTest, NamesThatAreNotUtf8AreKeptApartAndFoundExactly) {
  TempDir tmp;
  const std::string path = tmp.Sub("h.jsonl");
  const nlohmann::ordered_json report = {{"window", "w\xff"}};
  const std::string line =
      HistoryLine(MakeRun("x\xff", "r\xff", "w1", 1'000'000'000'000), 1, report);
  {
    std::ofstream out(path);
    out << line << "\n"
        << HistoryLine(MakeRun("x\xfe", "r\xff", "w1", 2'000'000'000'000), 2, {}) << "\n"
        << HistoryLine(MakeRun("x\\xff", "r\xff", "w1", 3'000'000'000'000), 3, {}) << "\n";
  }
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["training_job"], "x\\xff");
  EXPECT_EQ(j["report"]["window"], "w\\xff");
  EXPECT_EQ(j["state"]["training_job"], "x\\xff");
  auto by_bytes = FindInHistory(path, {"x\xff", "r\xff", std::nullopt});
  ASSERT_TRUE(by_bytes) << by_bytes.error().ToString();
  EXPECT_EQ(by_bytes->key.training_job, "x\xff");
  EXPECT_EQ(by_bytes->stats->total_kernel_ps, 1'000'000'000'000);
  auto other = FindInHistory(path, {"x\xfe", "r\xff", std::nullopt});
  ASSERT_TRUE(other) << other.error().ToString();
  EXPECT_EQ(other->stats->total_kernel_ps, 2'000'000'000'000);
  auto literal = FindInHistory(path, {"x\\\\xff", "r\\xff", std::nullopt});
  ASSERT_TRUE(literal) << literal.error().ToString();
  EXPECT_EQ(literal->key.training_job, "x\\xff");
}

}  // namespace
}  // namespace profwatch::store
