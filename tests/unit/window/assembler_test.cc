#include "window/assembler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <set>
#include <string>

#include "pipeline/window_policy.h"
#include "watch/layout.h"
#include "window/grouping.h"

namespace profwatch::window {

// Options with the daemon's retry policy (pipeline/window_policy.h
// DecideRetry): the assembler's retries as serve runs them.
inline AssemblerOptions DaemonOptions() {
  AssemblerOptions o;
  o.retry_policy = &pipeline::DecideRetry;
  return o;
}

namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

// A fake filesystem: observations the test edits between scans.
class AssemblerTest : public ::testing::Test {
 protected:
  AssemblerTest() {
    options_.settle = seconds(10);
    options_.window_timeout = minutes(10);
    options_.skew = seconds(120);
    options_.retention = std::chrono::hours(24);
    // The fake clock starts in 2020, the <ts> dirs in 2024.
    options_.future_tolerance = std::chrono::hours(24 * 365 * 10);
    // Re-analysis pacing has its own tests; the others see changes at once.
    options_.reanalysis_interval = milliseconds(0);
  }

  static std::string Ts(int64_t t) {
    // 2024_03_01_12_00_00 + t seconds, via the dir-name parser's inverse.
    int64_t base = *watch::ParseTimestampDirName("2024_03_01_12_00_00") + t;
    time_t tt = static_cast<time_t>(base);
    tm parts{};
    gmtime_r(&tt, &parts);
    char buf[32];
    strftime(buf, sizeof buf, "%Y_%m_%d_%H_%M_%S", &parts);
    return buf;
  }

  // Adds or updates a file of run `run` in the <ts> dir at offset `t`.
  void Put(const std::string& run, int64_t t, const std::string& name, uint64_t size,
           uint64_t ino = 0) {
    std::string dir = "/jobs/" + job_ + "/" + run + "/tensorboard/plugins/profile/" + Ts(t);
    std::string path = dir + "/" + name;
    for (auto& o : files_) {
      if (o.path == path) {
        o.size = size;
        o.mtime_ns = MtimeNow();
        if (ino != 0) o.ino = ino;
        return;
      }
    }
    PutNew(run, t, name, size, ino);
  }
  // Put for a file not there yet (no lookup: thousands of files stay cheap).
  void PutNew(const std::string& run, int64_t t, const std::string& name, uint64_t size,
              uint64_t ino = 0) {
    std::string dir = "/jobs/" + job_ + "/" + run + "/tensorboard/plugins/profile/" + Ts(t);
    std::string path = dir + "/" + name;
    watch::FileObservation o;
    o.path = path;
    o.name = name;
    o.dir = dir;
    o.group_dir = dir;
    o.group_time = *watch::ParseTimestampDirName(Ts(t));
    o.labels = {job_, run};
    o.run_dir = "/jobs/" + job_ + "/" + run;
    o.owner = owner_;
    o.dev = 1;
    o.ino = ino != 0 ? ino : next_ino_++;
    o.size = size;
    o.mtime_ns = MtimeNow();
    files_.push_back(o);
  }
  void Remove(const std::string& name_suffix) {
    std::erase_if(files_, [&](const auto& o) { return o.path.ends_with(name_suffix); });
  }
  int64_t MtimeNow() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now().time_since_epoch())
        .count();
  }

  void Scan(Assembler& a) { a.ObserveScan(files_, clock_.Now()); }
  // Scans, then takes whatever is ready.
  std::vector<WindowTask> Step(Assembler& a, milliseconds advance) {
    clock_.Advance(advance);
    Scan(a);
    return a.TakeReady(clock_.Now(), 100);
  }

  AssemblerOptions options_ = DaemonOptions();
  FakeClock clock_;
  std::vector<watch::FileObservation> files_;
  uint64_t next_ino_ = 100;
  // Job and owner of the files Put creates.
  std::string job_ = "j";
  watch::Owner owner_ = watch::kNoOwner;
};

TEST_F(AssemblerTest, WaitsForSettleThenEmitsSplitWindowOnce) {
  Assembler a(options_);
  Put("r", 0, "h0.proc0.trace.json.gz", 100);
  Put("r", 3, "h0.proc1.trace.json.gz", 100);
  EXPECT_TRUE(Step(a, seconds(0)).empty());
  EXPECT_EQ(a.PendingCount(), 1);
  EXPECT_TRUE(Step(a, seconds(5)).empty());
  // Still growing: the settle period restarts.
  Put("r", 3, "h0.proc1.trace.json.gz", 200);
  EXPECT_TRUE(Step(a, seconds(6)).empty());
  EXPECT_TRUE(Step(a, seconds(9)).empty());
  auto tasks = Step(a, seconds(1));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].files.size(), 2u);
  EXPECT_EQ(tasks[0].timestamp_dirs.size(), 2u);
  EXPECT_EQ(tasks[0].window_id, Ts(0));
  EXPECT_EQ(tasks[0].run.run, "r");
  EXPECT_FALSE(tasks[0].reanalysis);
  // In flight: not emitted again.
  EXPECT_TRUE(Step(a, seconds(30)).empty());
  auto d = a.OnAnalyzed(tasks[0], AnalysisOutcome{}, clock_.Now());
  EXPECT_TRUE(d.publish);
  EXPECT_FALSE(d.incomplete);
  EXPECT_TRUE(Step(a, minutes(5)).empty());
  EXPECT_EQ(a.PendingCount(), 0);
}

// Issue #65: at startup a window whose files' mtimes are already older than
// --settle by the clock (written 15 minutes before the daemon started) is
// ready at the first scan, not a settle later; one file still fresh keeps
// the whole window waiting the full settle; a window that appears after
// startup with old mtimes (a tree copied in) waits the full settle.
TEST_F(AssemblerTest, StartupWindowQuietByItsMtimesIsReadyAtTheFirstScan) {
  Assembler a(options_);
  const int64_t old = MtimeNow() - int64_t{15} * 60 * 1'000'000'000;
  Put("old", 0, "h0.proc0.trace.json.gz", 100);
  Put("old", 0, "h0.proc1.trace.json.gz", 100);
  Put("mixed", 0, "h0.proc0.trace.json.gz", 100);
  Put("mixed", 0, "h0.proc1.trace.json.gz", 100);
  for (auto& o : files_) {
    if (o.run_dir.ends_with("/old") || o.name == "h0.proc0.trace.json.gz") o.mtime_ns = old;
  }
  // Just inside settle: not quiet long enough by its mtime.
  Put("recent", 0, "h0.trace.json.gz", 100);
  files_.back().mtime_ns = MtimeNow() - int64_t{9} * 1'000'000'000;
  auto first = Step(a, seconds(0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].run.run, "old");
  EXPECT_EQ(first[0].files.size(), 2u);
  // The others wait the full settle from first sight, as before.
  EXPECT_TRUE(Step(a, seconds(9)).empty());
  auto later = Step(a, seconds(1));
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ((std::set<std::string>{later[0].run.run, later[1].run.run}),
            (std::set<std::string>{"mixed", "recent"}));

  // After startup: a window copied in with old mtimes waits the full settle.
  Put("copied", 0, "h0.trace.json.gz", 100);
  files_.back().mtime_ns = old;
  EXPECT_TRUE(Step(a, seconds(0)).empty());
  EXPECT_TRUE(Step(a, seconds(9)).empty());
  auto copied = Step(a, seconds(1));
  ASSERT_EQ(copied.size(), 1u);
  EXPECT_EQ(copied[0].run.run, "copied");
}

TEST_F(AssemblerTest, ReadinessNeedsAnObservedQuietScan) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Scan(a);
  // Time passes without a scan: not ready, and the deadline asks for a rescan.
  clock_.Advance(seconds(20));
  EXPECT_TRUE(a.TakeReady(clock_.Now(), 10).empty());
  ASSERT_TRUE(a.NextDeadline().has_value());
  EXPECT_LE(*a.NextDeadline(), clock_.Now());
  Scan(a);
  EXPECT_EQ(a.TakeReady(clock_.Now(), 10).size(), 1u);
}

TEST_F(AssemblerTest, NewFileJoiningRestartsSettle) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  EXPECT_TRUE(Step(a, seconds(0)).empty());
  EXPECT_TRUE(Step(a, seconds(8)).empty());
  Put("r", 2, "h1.trace.json.gz", 100);
  EXPECT_TRUE(Step(a, seconds(3)).empty());  // 11 s after h0, 0 s after h1
  EXPECT_TRUE(Step(a, seconds(9)).empty());
  auto tasks = Step(a, seconds(1));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].files.size(), 2u);
}

TEST_F(AssemblerTest, ConfiguredExpectedFilesGatesAndTimesOut) {
  options_.expected_files = 3;
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 1, "h1.trace.json.gz", 100);
  EXPECT_TRUE(Step(a, seconds(0)).empty());
  EXPECT_TRUE(Step(a, seconds(30)).empty());  // settled but short
  EXPECT_TRUE(Step(a, minutes(9)).empty());
  auto tasks = Step(a, seconds(31));  // past the 10 min timeout
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_TRUE(tasks[0].short_of_expected);
  EXPECT_EQ(tasks[0].expected_files, 3);
  auto d = a.OnAnalyzed(tasks[0], AnalysisOutcome{}, clock_.Now());
  EXPECT_TRUE(d.publish);
  EXPECT_TRUE(d.incomplete);
}

TEST_F(AssemblerTest, ExpectedFilesPresentIsReadyAfterSettle) {
  options_.expected_files = 2;
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 1, "h1.trace.json.gz", 100);
  EXPECT_TRUE(Step(a, seconds(0)).empty());
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_FALSE(tasks[0].short_of_expected);
}

TEST_F(AssemblerTest, PreviousWindowSetsExpectationForNext) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 0, "h1.trace.json.gz", 100);
  Step(a, seconds(0));
  auto first = Step(a, seconds(10));
  ASSERT_EQ(first.size(), 1u);
  a.OnAnalyzed(first[0], AnalysisOutcome{}, clock_.Now());
  // Next window, 30 min later, only one of two hosts so far.
  Put("r", 1800, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  EXPECT_TRUE(Step(a, minutes(5)).empty());
  auto next = Step(a, minutes(6));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].window_id, Ts(1800));
  EXPECT_EQ(next[0].expected_files, 2);
  EXPECT_TRUE(next[0].short_of_expected);
}

// Issue #38: the wait is reported, once, with what it waits for and until
// when; the pending count is per run.
TEST_F(AssemblerTest, AWindowHeldForFilesIsReportedOnceWithItsDeadline) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 0, "h1.trace.json.gz", 100);
  Put("other", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto first = Step(a, seconds(10));
  ASSERT_EQ(first.size(), 2u);
  for (const WindowTask& t : first) a.OnAnalyzed(t, AnalysisOutcome{}, clock_.Now());
  EXPECT_TRUE(a.TakeReadyNotes().held.empty());
  EXPECT_TRUE(a.PendingByRun().empty());
  Put("r", 1800, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  const TimePoint first_seen = clock_.Now();
  // Not settled yet: not held for files yet.
  EXPECT_TRUE(a.TakeReadyNotes().held.empty());
  EXPECT_TRUE(Step(a, seconds(10)).empty());
  Assembler::ReadyNotes notes = a.TakeReadyNotes();
  ASSERT_EQ(notes.held.size(), 1u);
  EXPECT_EQ(notes.held[0].run, (RunId{"j", "r"}));
  EXPECT_EQ(notes.held[0].window_id, Ts(1800));
  EXPECT_EQ(notes.held[0].files, 1);
  EXPECT_EQ(notes.held[0].expected_files, 2);
  EXPECT_EQ(notes.held[0].expected_from, "previous window");
  EXPECT_EQ(notes.held[0].until, first_seen + minutes(10));
  EXPECT_EQ(a.PendingByRun(), (std::map<RunId, int64_t>{{RunId{"j", "r"}, 1}}));
  // Still held on later scans: reported once.
  EXPECT_TRUE(Step(a, minutes(5)).empty());
  EXPECT_TRUE(a.TakeReadyNotes().held.empty());
  ASSERT_EQ(Step(a, minutes(6)).size(), 1u);
  EXPECT_TRUE(a.TakeReadyNotes().held.empty());
}

TEST_F(AssemblerTest, ExpectedGpusUsesLearnedGpusPerFile) {
  options_.expected_gpus = 16;
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto first = Step(a, seconds(10));  // nothing learned yet: no gate
  ASSERT_EQ(first.size(), 1u);
  AnalysisOutcome out;
  out.gpus = 8;
  a.OnAnalyzed(first[0], out, clock_.Now());
  Put("r", 1800, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  EXPECT_TRUE(Step(a, seconds(20)).empty());  // 8 GPUs/file: 2 files expected
  Put("r", 1801, "h1.trace.json.gz", 100);
  Step(a, seconds(0));
  auto next = Step(a, seconds(10));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].expected_files, 2);
  EXPECT_FALSE(next[0].short_of_expected);
}

TEST_F(AssemblerTest, LateHostTriggersReanalysis) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  a.OnAnalyzed(tasks[0], AnalysisOutcome{}, clock_.Now());
  EXPECT_TRUE(Step(a, seconds(30)).empty());
  // A late host writes one second *earlier* than the first dir.
  Put("r", -1, "h1.trace.json.gz", 100);
  EXPECT_TRUE(Step(a, seconds(1)).empty());
  auto again = Step(a, seconds(10));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0].reanalysis);
  EXPECT_EQ(again[0].serial, tasks[0].serial);
  EXPECT_EQ(again[0].files.size(), 2u);
  EXPECT_EQ(again[0].window_id, Ts(-1));
}

// A window its owner keeps writing to (new bytes every 3 s for 45 s) is
// analysed again at most once per --reanalysis-interval after its last
// analysis ended; each wait is reported once, and the last content is
// analysed once the changes stop.
TEST_F(AssemblerTest, ChangesAfterAnAnalysisWaitForTheReanalysisInterval) {
  options_.settle = seconds(1);
  options_.reanalysis_interval = seconds(30);
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto first = Step(a, seconds(1));
  ASSERT_EQ(first.size(), 1u);
  clock_.Advance(seconds(2));
  a.OnAnalyzed(first[0], AnalysisOutcome{}, clock_.Now());  // t = 3: next no sooner than 33
  EXPECT_TRUE(a.TakeReadyNotes().paced.empty());
  uint64_t size = 100;
  std::vector<int64_t> analysed_at;
  size_t paced = 0;
  for (int k = 1; k <= 15; ++k) {  // a write at t = 3k, scans at 3k + 1 and 3k + 3
    Put("r", 0, "h0.trace.json.gz", size += 10);
    for (milliseconds step : {milliseconds(seconds(1)), milliseconds(seconds(2))}) {
      for (const WindowTask& t : Step(a, step)) {
        analysed_at.push_back(
            std::chrono::duration_cast<seconds>(clock_.Now().time_since_epoch()).count());
        a.OnAnalyzed(t, AnalysisOutcome{}, clock_.Now());
      }
      paced += a.TakeReadyNotes().paced.size();
    }
  }
  ASSERT_EQ(analysed_at.size(), 1u);  // at t = 33, the first quiet scan past the interval
  const int64_t start =
      std::chrono::duration_cast<seconds>(clock_.Now().time_since_epoch()).count() - 48;
  EXPECT_EQ(analysed_at[0] - start, 33);
  EXPECT_EQ(paced, 2u);  // waits before and after that analysis
  // The changes stop: the last content is analysed at t = 63.
  EXPECT_TRUE(Step(a, seconds(14)).empty());  // t = 62
  auto last = Step(a, seconds(1));
  ASSERT_EQ(last.size(), 1u);
  EXPECT_TRUE(last[0].reanalysis);
  a.OnAnalyzed(last[0], AnalysisOutcome{}, clock_.Now());
  EXPECT_TRUE(Step(a, seconds(60)).empty());  // nothing changed since
}

// An analysis longer than the interval sets the wait: a window whose reads
// take 50 s is not analysed again for 50 s (it holds at most half a worker).
TEST_F(AssemblerTest, AReanalysisWaitsAtLeastAsLongAsTheLastAnalysisTook) {
  options_.reanalysis_interval = seconds(30);
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto first = Step(a, seconds(10));
  ASSERT_EQ(first.size(), 1u);
  clock_.Advance(seconds(50));
  a.OnAnalyzed(first[0], AnalysisOutcome{}, clock_.Now());
  Put("r", 0, "h0.trace.json.gz", 200);
  Step(a, seconds(1));
  EXPECT_TRUE(Step(a, seconds(10)).empty());  // quiet, 11 s after
  EXPECT_TRUE(Step(a, seconds(38)).empty());  // 49 s after
  EXPECT_EQ(a.NextDeadline(), clock_.Now() + seconds(1));
  EXPECT_EQ(Step(a, seconds(1)).size(), 1u);  // 50 s after
}

TEST_F(AssemblerTest, StaleOlderWindowIsNeitherMergedNorAnalysed) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 600, "h0.trace.json.gz", 100);
  Put("r", 601, "h1.trace.json.gz", 100);
  Step(a, seconds(0));
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].window_id, Ts(600));
  EXPECT_EQ(tasks[0].files.size(), 2u);
  EXPECT_EQ(a.PendingCount(), 1);  // the in-flight one; the stale one is superseded
}

TEST_F(AssemblerTest, EveryCycleLandingWhileRunningIsAnalysedOldestFirst) {
  Assembler a(options_);
  EXPECT_TRUE(Step(a, seconds(0)).empty());  // the first scan: nothing yet
  // Two profiling cycles of one process land together (torch schedule
  // repeat=2): two windows, both analysed, the older first.
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 30, "h0.trace.json.gz", 100);
  Step(a, seconds(1));
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].window_id, Ts(0));
  EXPECT_EQ(tasks[1].window_id, Ts(30));
  const AnalysisDecision old = a.OnAnalyzed(tasks[0], AnalysisOutcome{}, clock_.Now());
  EXPECT_TRUE(old.publish);
  const AnalysisDecision newer = a.OnAnalyzed(tasks[1], AnalysisOutcome{}, clock_.Now(),
                                              ExportedWindow{tasks[0].serial, tasks[0].first_time});
  EXPECT_TRUE(newer.publish);
}

TEST_F(AssemblerTest, OlderBacklogWindowsAreSupersededAndReportedOnce) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 30, "h0.trace.json.gz", 100);
  clock_.Advance(seconds(0));
  Assembler::ScanNotes notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.superseded.size(), 1u);
  EXPECT_EQ(notes.superseded[0].window_id, Ts(0));
  EXPECT_EQ(notes.superseded[0].newest_id, Ts(30));
  EXPECT_EQ(notes.superseded[0].files, 1);
  EXPECT_TRUE(notes.superseded[0].at_startup);
  clock_.Advance(seconds(10));
  EXPECT_TRUE(a.ObserveScan(files_, clock_.Now()).superseded.empty());
  auto tasks = a.TakeReady(clock_.Now(), 100);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].window_id, Ts(30));
}

// Issue #65: the run's newest window at startup, still settling when a newer
// window appears minutes later, is superseded then: reported at that scan,
// not as found at startup (it was the newest then), and never analysed.
TEST_F(AssemblerTest, StartupWindowSupersededLaterSaysSo) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Assembler::ScanNotes first = a.ObserveScan(files_, clock_.Now());
  EXPECT_TRUE(first.superseded.empty());
  clock_.Advance(seconds(5));
  Put("r", 300, "h0.trace.json.gz", 100);
  Assembler::ScanNotes later = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(later.superseded.size(), 1u);
  EXPECT_EQ(later.superseded[0].window_id, Ts(0));
  EXPECT_EQ(later.superseded[0].newest_id, Ts(300));
  EXPECT_FALSE(later.superseded[0].at_startup);
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].window_id, Ts(300));
}

TEST_F(AssemblerTest, OlderWindowInFlightIsStillDecidedButNewerWins) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto old_task = Step(a, seconds(10));
  ASSERT_EQ(old_task.size(), 1u);
  Put("r", 900, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto new_task = Step(a, seconds(10));
  ASSERT_EQ(new_task.size(), 1u);
  EXPECT_GT(new_task[0].first_time, old_task[0].first_time);
  // The daemon compares first_time before replacing the exported window; the
  // assembler still records both as analysed.
  EXPECT_TRUE(a.OnAnalyzed(new_task[0], AnalysisOutcome{}, clock_.Now()).publish);
  EXPECT_TRUE(a.OnAnalyzed(old_task[0], AnalysisOutcome{}, clock_.Now()).publish);
  EXPECT_EQ(a.Analysed().size(), 2u);
}

TEST_F(AssemblerTest, TruncatedFileRetriesWithBackoffThenGivesUp) {
  options_.max_retries = 3;
  options_.settle = seconds(1);
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 0, "h1.trace.json.gz", 100);
  Step(a, seconds(0));
  auto t1 = Step(a, seconds(1));
  ASSERT_EQ(t1.size(), 1u);
  const std::string bad = t1[0].files[0];
  AnalysisOutcome out;
  out.failed.push_back({bad, Error{ErrorCode::kTruncated, "ended early"}});
  auto d1 = a.OnAnalyzed(t1[0], out, clock_.Now());
  EXPECT_FALSE(d1.publish);
  EXPECT_TRUE(d1.retry);
  // Held back for a retry: a file still being written, not an error yet.
  ASSERT_EQ(d1.retrying.size(), 1u);
  EXPECT_EQ(d1.retrying[0].path, bad);
  EXPECT_TRUE(d1.gave_up.empty());
  EXPECT_TRUE(Step(a, milliseconds(900)).empty());  // backoff 1 s
  auto t2 = Step(a, milliseconds(100));
  ASSERT_EQ(t2.size(), 1u);
  auto d2 = a.OnAnalyzed(t2[0], out, clock_.Now());
  EXPECT_FALSE(d2.publish);
  EXPECT_EQ(d2.retrying.size(), 1u);
  EXPECT_TRUE(Step(a, milliseconds(1900)).empty());  // backoff 2 s
  auto t3 = Step(a, milliseconds(100));
  ASSERT_EQ(t3.size(), 1u);
  auto d3 = a.OnAnalyzed(t3[0], out, clock_.Now());
  ASSERT_EQ(d3.gave_up.size(), 1u);
  EXPECT_EQ(d3.gave_up[0].path, bad);
  EXPECT_TRUE(d3.retrying.empty());  // given up: an error, no longer a retry
  EXPECT_FALSE(d3.publish);
  // Analysed again at once without the given-up file.
  auto t4 = Step(a, seconds(0));
  ASSERT_EQ(t4.size(), 1u);
  EXPECT_EQ(t4[0].files.size(), 1u);
  ASSERT_EQ(t4[0].excluded.size(), 1u);
  EXPECT_EQ(t4[0].excluded[0], bad);
  auto d4 = a.OnAnalyzed(t4[0], AnalysisOutcome{}, clock_.Now());
  EXPECT_TRUE(d4.publish);
  EXPECT_TRUE(d4.incomplete);
  EXPECT_TRUE(d4.gave_up.empty());  // logged once only
}

TEST_F(AssemblerTest, TruncatedFileThatGrowsIsRetriedWhenItSettles) {
  options_.settle = seconds(1);
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 50);
  Step(a, seconds(0));
  auto t1 = Step(a, seconds(1));
  ASSERT_EQ(t1.size(), 1u);
  AnalysisOutcome out;
  out.failed.push_back({t1[0].files[0], Error{ErrorCode::kTruncated, "half"}});
  EXPECT_FALSE(a.OnAnalyzed(t1[0], out, clock_.Now()).publish);
  Put("r", 0, "h0.trace.json.gz", 100);             // the writer finishes
  EXPECT_TRUE(Step(a, milliseconds(500)).empty());  // changed, not settled yet
  auto t2 = Step(a, milliseconds(1000));
  ASSERT_EQ(t2.size(), 1u);
  EXPECT_TRUE(a.OnAnalyzed(t2[0], AnalysisOutcome{}, clock_.Now()).publish);
}

TEST_F(AssemblerTest, CorruptFilePublishesRestAndRetriesOnlyOnChange) {
  options_.max_retries = 2;
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 0, "h1.trace.json.gz", 100);
  Step(a, seconds(0));
  auto t1 = Step(a, seconds(10));
  ASSERT_EQ(t1.size(), 1u);
  AnalysisOutcome out;
  out.failed.push_back({t1[0].files[1], Error{ErrorCode::kCorrupt, "not json"}});
  auto d1 = a.OnAnalyzed(t1[0], out, clock_.Now());
  EXPECT_TRUE(d1.publish);
  EXPECT_TRUE(d1.incomplete);
  EXPECT_TRUE(d1.retrying.empty());           // corrupt: an error at once, not a retry
  EXPECT_TRUE(Step(a, minutes(30)).empty());  // unchanged: no retry
  Put("r", 0, "h1.trace.json.gz", 120);       // rewritten
  Step(a, seconds(0));
  auto t2 = Step(a, seconds(10));
  ASSERT_EQ(t2.size(), 1u);
  EXPECT_TRUE(t2[0].reanalysis);
  auto d2 = a.OnAnalyzed(t2[0], out, clock_.Now());
  ASSERT_EQ(d2.gave_up.size(), 1u);  // second try: given up
  EXPECT_FALSE(d2.publish);
  auto t3 = Step(a, seconds(0));
  ASSERT_EQ(t3.size(), 1u);
  EXPECT_EQ(t3[0].files.size(), 1u);
}

TEST_F(AssemblerTest, UnsupportedFileIsNeverRetried) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto t1 = Step(a, seconds(10));
  ASSERT_EQ(t1.size(), 1u);
  AnalysisOutcome out;
  out.failed.push_back({t1[0].files[0], Error{ErrorCode::kUnsupported, "cpu only"}});
  auto d = a.OnAnalyzed(t1[0], out, clock_.Now());
  EXPECT_TRUE(d.publish);
  EXPECT_FALSE(d.retry);
  EXPECT_TRUE(Step(a, minutes(60)).empty());
}

TEST_F(AssemblerTest, RestoredWindowWithSameFilesIsNotAnalysedAgain) {
  std::vector<AnalysedWindow> saved;
  {
    Assembler a(options_);
    Put("r", 0, "h0.trace.json.gz", 100);
    Step(a, seconds(0));
    auto t = Step(a, seconds(10));
    ASSERT_EQ(t.size(), 1u);
    a.OnAnalyzed(t[0], AnalysisOutcome{}, clock_.Now());
    saved = a.Analysed();
  }
  ASSERT_EQ(saved.size(), 1u);
  Assembler b(options_);
  b.Restore(saved);
  EXPECT_TRUE(Step(b, seconds(0)).empty());
  EXPECT_TRUE(Step(b, minutes(20)).empty());
  EXPECT_EQ(b.PendingCount(), 0);
  // A changed file is analysed again.
  Assembler c(options_);
  c.Restore(saved);
  Put("r", 0, "h0.trace.json.gz", 999);
  Step(c, seconds(0));
  auto t = Step(c, seconds(10));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(t[0].reanalysis);
}

TEST_F(AssemblerTest, WindowsOlderThanRetentionAreNotAnalysed) {
  options_.retention = minutes(30);
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);  // mtime = now
  clock_.Advance(std::chrono::hours(1));
  Scan(a);
  EXPECT_TRUE(a.TakeReady(clock_.Now(), 10).empty());
  EXPECT_EQ(a.PendingCount(), 0);
  // Said once (issue #38: it vanished without a word).
  Assembler::ReadyNotes notes = a.TakeReadyNotes();
  ASSERT_EQ(notes.expired.size(), 1u);
  EXPECT_EQ(notes.expired[0].run, (RunId{"j", "r"}));
  EXPECT_EQ(notes.expired[0].window_id, Ts(0));
  Scan(a);
  EXPECT_TRUE(a.TakeReady(clock_.Now(), 10).empty());
  EXPECT_TRUE(a.TakeReadyNotes().expired.empty());
}

TEST_F(AssemblerTest, OldestReadyWindowGoesFirstAcrossRuns) {
  Assembler a(options_);
  Put("a", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  Put("b", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(5));
  // Only one worker slot: a's window (ready first) goes first.
  clock_.Advance(seconds(20));
  Scan(a);
  auto first = a.TakeReady(clock_.Now(), 1);
  ASSERT_EQ(first.size(), 1u);
  auto second = a.TakeReady(clock_.Now(), 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(first[0].run.run, second[0].run.run);
}

TEST_F(AssemblerTest, ReadyOrderFollowsReadySince) {
  Assembler a(options_);
  Put("a", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  auto ta = Step(a, seconds(10));
  ASSERT_EQ(ta.size(), 1u);
  a.OnAnalyzed(ta[0], AnalysisOutcome{}, clock_.Now());
  // b becomes ready while the single slot is busy; then a's late host arrives.
  Put("b", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  clock_.Advance(seconds(10));
  Scan(a);
  Put("a", 1, "h1.trace.json.gz", 100);
  EXPECT_EQ(a.TakeReady(clock_.Now(), 0).size(), 0u);  // marks b ready, takes none
  Scan(a);
  clock_.Advance(seconds(10));
  Scan(a);
  auto next = a.TakeReady(clock_.Now(), 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].run.run, "b");
}

TEST_F(AssemblerTest, VanishedWindowIsForgotten) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Step(a, seconds(0));
  EXPECT_EQ(a.PendingCount(), 1);
  Remove("h0.trace.json.gz");
  Step(a, seconds(1));
  EXPECT_EQ(a.PendingCount(), 0);
  EXPECT_FALSE(a.NextDeadline().has_value());
}

}  // namespace
}  // namespace profwatch::window

namespace profwatch::window {
namespace {

// The export policy on a fake clock: which result replaces the run's
// exported window, and the GPU expectation a published window is held to.
class ExportPolicyTest : public AssemblerTest {
 protected:
  static AnalysisOutcome Gpus(int gpus) {
    AnalysisOutcome o;
    o.gpus = gpus;
    return o;
  }
  // Emits the window of run "r" at <ts> offset `t` (one file) and returns it.
  WindowTask Emit(Assembler& a, int64_t t, const std::string& name) {
    Put("r", t, name, 100);
    Step(a, seconds(0));
    auto tasks = Step(a, seconds(11));
    EXPECT_EQ(tasks.size(), 1u);
    return tasks.empty() ? WindowTask{} : tasks[0];
  }
};

TEST_F(ExportPolicyTest, AnOlderWindowFinishingLateDoesNotReplaceTheNewerOne) {
  Assembler a(options_);
  WindowTask old_window = Emit(a, 0, "h0.trace.json.gz");
  // The newer window (10 min later) is exported first.
  const ExportedWindow newer{old_window.serial + 1, old_window.first_time + 600, 8};
  AnalysisDecision d = a.OnAnalyzed(old_window, Gpus(8), clock_.Now(), newer);
  EXPECT_FALSE(d.publish);
  EXPECT_TRUE(d.superseded);
  // A restored (serial 0) newer window is not replaced either.
  WindowTask again = Emit(a, 1, "h1.trace.json.gz");
  d = a.OnAnalyzed(again, Gpus(8), clock_.Now(), ExportedWindow{0, again.first_time + 1, 8});
  EXPECT_FALSE(d.publish);
  EXPECT_TRUE(d.superseded);
}

TEST_F(ExportPolicyTest, ANewerWindowOrARerunOfTheExportedOneReplacesIt) {
  Assembler a(options_);
  WindowTask w = Emit(a, 0, "h0.trace.json.gz");
  AnalysisDecision d =
      a.OnAnalyzed(w, Gpus(4), clock_.Now(), ExportedWindow{0, w.first_time - 600, 4});
  EXPECT_TRUE(d.publish);
  EXPECT_FALSE(d.superseded);
  // Re-analysis of the exported window itself (same serial, same start).
  Put("r", 0, "h0.trace.json.gz", 200);
  Step(a, seconds(0));
  auto rerun = Step(a, seconds(11));
  ASSERT_EQ(rerun.size(), 1u);
  EXPECT_TRUE(rerun[0].reanalysis);
  d = a.OnAnalyzed(rerun[0], Gpus(4), clock_.Now(), ExportedWindow{w.serial, w.first_time, 4});
  EXPECT_TRUE(d.publish);
}

TEST_F(ExportPolicyTest, ExpectedGpusAreConfiguredElseLearnedFromTheReplacedWindow) {
  Assembler a(options_);
  WindowTask w = Emit(a, 0, "h0.trace.json.gz");
  // Nothing exported before and nothing configured: no expectation.
  AnalysisDecision d = a.OnAnalyzed(w, Gpus(6), clock_.Now(), std::nullopt);
  EXPECT_EQ(d.expected_gpus, 0);
  EXPECT_FALSE(d.incomplete);
  // Learned from the exported window: fewer GPUs make the new one incomplete.
  WindowTask next = Emit(a, 600, "h0.trace.json.gz");
  d = a.OnAnalyzed(next, Gpus(6), clock_.Now(), ExportedWindow{w.serial, w.first_time, 8});
  EXPECT_TRUE(d.publish);
  EXPECT_EQ(d.expected_gpus, 8);
  EXPECT_TRUE(d.incomplete);
  // Configured wins over learned.
  options_.expected_gpus = 4;
  a.SetOptions(options_);
  WindowTask third = Emit(a, 1200, "h0.trace.json.gz");
  d = a.OnAnalyzed(third, Gpus(6), clock_.Now(), ExportedWindow{next.serial, next.first_time, 8});
  EXPECT_EQ(d.expected_gpus, 4);
  EXPECT_FALSE(d.incomplete);
}

}  // namespace
}  // namespace profwatch::window

namespace profwatch::window {
namespace {

TEST(RunRetentionTest, ARunExpiresOnceQuietLongerThanRetention) {
  AssemblerOptions options = DaemonOptions();
  options.retention = std::chrono::hours(24);
  Assembler a(options);
  FakeClock clock;
  const double now = ToUnixSeconds(clock.Now());
  EXPECT_FALSE(a.RunExpired(now - 3600, clock.Now()));
  EXPECT_FALSE(a.RunExpired(now - 24 * 3600, clock.Now()));
  EXPECT_TRUE(a.RunExpired(now - 24 * 3600 - 1, clock.Now()));
  clock.Advance(std::chrono::hours(23) + std::chrono::seconds(1));
  EXPECT_TRUE(a.RunExpired(now - 3600, clock.Now()));
  // A reload with a longer retention keeps it.
  options.retention = std::chrono::hours(48);
  a.SetOptions(options);
  EXPECT_FALSE(a.RunExpired(now - 3600, clock.Now()));
}

}  // namespace
}  // namespace profwatch::window

namespace profwatch::window {
namespace {

// Faults the daemon must recover from, decided here on a fake clock.
class FaultPolicyTest : public ExportPolicyTest {};

TEST_F(FaultPolicyTest, AGivenUpFileIsReadAgainWhenItChanges) {
  options_.max_retries = 2;
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 0, "h1.trace.json.gz", 50);  // half written
  Step(a, seconds(0));
  auto t1 = Step(a, seconds(10));
  ASSERT_EQ(t1.size(), 1u);
  AnalysisOutcome truncated;
  truncated.gpus = 1;
  truncated.failed.push_back({t1[0].files[1], Error{ErrorCode::kTruncated, "cut"}});
  EXPECT_TRUE(a.OnAnalyzed(t1[0], truncated, clock_.Now()).retry);
  auto t2 = Step(a, minutes(5));  // backoff over, unchanged: second try
  ASSERT_EQ(t2.size(), 1u);
  AnalysisDecision gave_up = a.OnAnalyzed(t2[0], truncated, clock_.Now());
  ASSERT_EQ(gave_up.gave_up.size(), 1u);
  auto t3 = Step(a, seconds(0));  // the rest at once, without it
  ASSERT_EQ(t3.size(), 1u);
  EXPECT_EQ(t3[0].excluded.size(), 1u);
  AnalysisOutcome one;
  one.gpus = 1;
  AnalysisDecision partial = a.OnAnalyzed(t3[0], one, clock_.Now());
  EXPECT_TRUE(partial.publish);
  EXPECT_TRUE(partial.incomplete);
  EXPECT_TRUE(Step(a, minutes(30)).empty());  // unchanged: stays given up
  // The writer finishes the file: it is read again and the window replaced.
  Put("r", 0, "h1.trace.json.gz", 100);
  Step(a, seconds(0));
  auto t4 = Step(a, seconds(10));
  ASSERT_EQ(t4.size(), 1u);
  EXPECT_TRUE(t4[0].reanalysis);
  EXPECT_EQ(t4[0].files.size(), 2u);
  EXPECT_TRUE(t4[0].excluded.empty());
  AnalysisOutcome both;
  both.gpus = 2;
  AnalysisDecision whole = a.OnAnalyzed(t4[0], both, clock_.Now());
  EXPECT_TRUE(whole.publish);
  EXPECT_FALSE(whole.incomplete);
}

TEST_F(FaultPolicyTest, ExpectedGpusHoldTheWindowUntilTheMissingHostLands) {
  options_.expected_gpus = 8;
  Assembler a(options_);
  const WindowTask t1 = Emit(a, 0, "h0.trace.json.gz");
  const AnalysisOutcome half = Gpus(4);
  AnalysisDecision held = a.OnAnalyzed(t1, half, clock_.Now());
  EXPECT_FALSE(held.publish);
  EXPECT_TRUE(held.waiting_for_gpus);
  EXPECT_EQ(held.expected_gpus, 8);
  EXPECT_TRUE(Step(a, minutes(2)).empty());  // nothing new: still held
  Put("r", 1, "h1.trace.json.gz", 100);      // the other host lands
  Step(a, seconds(0));
  auto t2 = Step(a, seconds(10));
  ASSERT_EQ(t2.size(), 1u);
  EXPECT_EQ(t2[0].files.size(), 2u);
  AnalysisDecision d = a.OnAnalyzed(t2[0], Gpus(8), clock_.Now());
  EXPECT_TRUE(d.publish);
  EXPECT_FALSE(d.incomplete);
}

TEST_F(FaultPolicyTest, ExpectedGpusExportAShortWindowIncompleteAtTheTimeout) {
  options_.expected_gpus = 8;
  Assembler a(options_);
  const WindowTask t1 = Emit(a, 0, "h0.trace.json.gz");
  const AnalysisOutcome half = Gpus(4);
  EXPECT_TRUE(a.OnAnalyzed(t1, half, clock_.Now()).waiting_for_gpus);
  ASSERT_TRUE(a.NextDeadline().has_value());  // the daemon wakes for the timeout
  EXPECT_TRUE(Step(a, minutes(9)).empty());
  auto t2 = Step(a, minutes(1));  // 10 min after first seen
  ASSERT_EQ(t2.size(), 1u);
  AnalysisDecision d = a.OnAnalyzed(t2[0], half, clock_.Now());
  EXPECT_TRUE(d.publish);
  EXPECT_TRUE(d.incomplete);
  EXPECT_EQ(d.expected_gpus, 8);
}

TEST_F(FaultPolicyTest, AnIncompleteWindowDoesNotTeachTheExpectation) {
  Assembler a(options_);
  const WindowTask t1 = Emit(a, 0, "h0.trace.json.gz");
  // The exported window had 4 of its expected 8 GPUs: 8 stays the expectation.
  AnalysisDecision d =
      a.OnAnalyzed(t1, Gpus(4), clock_.Now(), ExportedWindow{0, t1.first_time - 600, 4, 8, true});
  EXPECT_EQ(d.expected_gpus, 8);
  EXPECT_TRUE(d.incomplete);
}

TEST_F(FaultPolicyTest, AnUnreadableFileIsRetriedOnLaterPollsUntilItReads) {
  options_.max_retries = 5;
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);
  Put("r", 0, "h1.trace.json.gz", 100);
  Step(a, seconds(0));
  auto t1 = Step(a, seconds(10));
  ASSERT_EQ(t1.size(), 1u);
  AnalysisOutcome denied;
  denied.gpus = 1;
  denied.failed.push_back({t1[0].files[1], Error{ErrorCode::kPermission, "EACCES"}});
  AnalysisDecision d = a.OnAnalyzed(t1[0], denied, clock_.Now());
  EXPECT_TRUE(d.publish);  // the rest at once
  EXPECT_TRUE(d.incomplete);
  // chmod changes no fingerprint: the retry comes from the clock.
  ASSERT_TRUE(a.NextDeadline().has_value());
  auto t2 = Step(a, minutes(1));
  ASSERT_EQ(t2.size(), 1u);
  EXPECT_EQ(t2[0].files.size(), 2u);
  AnalysisOutcome readable;
  readable.gpus = 2;
  AnalysisDecision ok = a.OnAnalyzed(t2[0], readable, clock_.Now());
  EXPECT_TRUE(ok.publish);
  EXPECT_FALSE(ok.incomplete);
  EXPECT_TRUE(Step(a, minutes(30)).empty());  // read: no more retries
}

TEST_F(FaultPolicyTest, AFutureDatedDirIsSkippedUntilTheClockReachesIt) {
  options_.future_tolerance = std::chrono::hours(1);
  // The clock at the <ts> base time (Ts(0)).
  clock_.Set(TimePoint{} + seconds(*watch::ParseTimestampDirName(Ts(0))));
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);         // now
  Put("r", 3 * 3600, "h0.trace.json.gz", 100);  // 3 h ahead: skew
  std::vector<std::string> skipped = a.ObserveScan(files_, clock_.Now()).future_dirs;
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(skipped[0].ends_with(Ts(3 * 3600))) << skipped[0];
  EXPECT_TRUE(a.ObserveScan(files_, clock_.Now()).future_dirs.empty());  // reported once
  // The real window is the run's newest and is analysed.
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].window_id, Ts(0));
  a.OnAnalyzed(tasks[0], AnalysisOutcome{}, clock_.Now());
  // Once the clock reaches it (within the tolerance) it is a window again.
  clock_.Advance(std::chrono::hours(2) + seconds(1));
  Step(a, seconds(0));
  auto later = Step(a, seconds(10));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].window_id, Ts(3 * 3600));
}

TEST_F(FaultPolicyTest, LocalTimeNamesAheadOfUtcAreNotFutureDated) {
  options_.future_tolerance = std::chrono::hours(1);
  options_.wall_clock_ahead = std::chrono::hours(9);  // the host runs at UTC+9
  clock_.Set(TimePoint{} + seconds(*watch::ParseTimestampDirName(Ts(0))));
  Assembler a(options_);
  Put("r", 9 * 3600, "h0.trace.json.gz", 100);  // named in local time
  EXPECT_TRUE(a.ObserveScan(files_, clock_.Now()).future_dirs.empty());
}

// Two roots whose layouts give two run dirs the same (training_job, run):
// their series would overwrite each other. The first dir keeps the run, the
// other is reported once and not analysed.
TEST_F(FaultPolicyTest, TwoRunDirsWithTheSameLabelsDoNotShareSeries) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100);  // /jobs/j/r, labels j/r
  watch::FileObservation other = files_.back();
  other.path = "/mnt/other/j/r/tensorboard/plugins/profile/" + Ts(0) + "/h0.trace.json.gz";
  other.dir = other.group_dir = "/mnt/other/j/r/tensorboard/plugins/profile/" + Ts(0);
  other.run_dir = "/mnt/other/j/r";
  other.ino = 999;
  files_.push_back(other);
  Assembler::ScanNotes notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.clashes.size(), 1u);
  EXPECT_EQ(notes.clashes[0].run.training_job, "j");
  EXPECT_EQ(notes.clashes[0].kept_dir, "/jobs/j/r");
  EXPECT_EQ(notes.clashes[0].skipped_dir, "/mnt/other/j/r");
  EXPECT_TRUE(a.ObserveScan(files_, clock_.Now()).clashes.empty());  // reported once
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].run_dir, "/jobs/j/r");
}

// A window over --max-files-per-window keeps no state for its files and is
// never analysed; it is reported once while it stays over the cap. 100,000
// files (the scanner's caps bypassed, e.g. over many <ts> dirs) leave
// nothing tracked.
TEST_F(AssemblerTest, AWindowOverTheFileCapIsNotTrackedAndReportedOnce) {
  Assembler a(options_);
  Put("good", 0, "h0.trace.json.gz", 100);
  const watch::FileObservation model = files_.back();
  for (int i = 0; i < 100'000; ++i) {
    watch::FileObservation o = model;
    o.name = "e" + std::to_string(i) + ".trace.json.gz";
    o.dir = o.group_dir = "/jobs/j/evil/tensorboard/plugins/profile/" + Ts(0);
    o.path = o.dir + "/" + o.name;
    o.labels = {"j", "evil"};
    o.run_dir = "/jobs/j/evil";
    o.ino = next_ino_++;
    o.size = 0;
    files_.push_back(std::move(o));
  }
  Assembler::ScanNotes notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.capped.size(), 1u);
  EXPECT_EQ(notes.capped[0].run.run, "evil");
  EXPECT_EQ(notes.capped[0].window_id, Ts(0));
  EXPECT_EQ(notes.capped[0].files, 100'000);
  EXPECT_EQ(a.TrackedFiles(), 1);  // the good run's file only
  EXPECT_EQ(a.PendingCount(), 1);
  EXPECT_TRUE(a.ObserveScan(files_, clock_.Now()).capped.empty());  // reported once
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].run.run, "good");
  EXPECT_EQ(a.TrackedFiles(), 1);
}

// A tracked window that grows past the cap is forgotten (its files' state
// freed); back under the cap it is tracked anew, and reported again if it
// exceeds the cap again.
TEST_F(AssemblerTest, AWindowGrowingPastTheCapIsForgottenAndComesBackUnderIt) {
  options_.max_files_per_window = 3;
  Assembler a(options_);
  for (int i = 0; i < 3; ++i) Put("r", 0, "h" + std::to_string(i) + ".trace.json.gz", 100);
  EXPECT_TRUE(a.ObserveScan(files_, clock_.Now()).capped.empty());
  EXPECT_EQ(a.TrackedFiles(), 3);
  Put("r", 0, "h3.trace.json.gz", 100);
  EXPECT_EQ(a.ObserveScan(files_, clock_.Now()).capped.size(), 1u);
  EXPECT_EQ(a.TrackedFiles(), 0);
  EXPECT_EQ(a.PendingCount(), 0);
  EXPECT_TRUE(Step(a, minutes(20)).empty());  // never analysed, not even at the timeout
  Remove("/h3.trace.json.gz");
  EXPECT_TRUE(a.ObserveScan(files_, clock_.Now()).capped.empty());
  EXPECT_EQ(a.TrackedFiles(), 3);
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].files.size(), 3u);
  a.OnAnalyzed(tasks[0], AnalysisOutcome{}, clock_.Now());
  Put("r", 0, "h3.trace.json.gz", 100);
  EXPECT_EQ(a.ObserveScan(files_, clock_.Now()).capped.size(), 1u);
}

// --- shares, indexes and read-once (issue 46) ------------------------------

// 20,000 windows of one run found at start: only the newest 8 get state (the
// newest analysed, 7 superseded as before), the 19,992 older ones are one
// backlog note; later scans report nothing again.
TEST_F(AssemblerTest, AtFirstSightOnlyTheNewestWindowsOfARunAreConsidered) {
  Assembler a(options_);
  for (int i = 0; i < 20'000; ++i) PutNew("r", int64_t{i} * 600, "h0.trace.json.gz", 100);
  auto notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.backlog.size(), 1u);
  EXPECT_EQ(notes.backlog[0].windows, 19'992);
  EXPECT_EQ(notes.backlog[0].newest_id, Ts(int64_t{19'992} * 600));
  EXPECT_EQ(notes.superseded.size(), 7u);
  EXPECT_EQ(a.TrackedFiles(), 8);
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].window_id, Ts(int64_t{19'999} * 600));
  notes = a.ObserveScan(files_, clock_.Now());
  EXPECT_TRUE(notes.backlog.empty());
  EXPECT_TRUE(notes.superseded.empty());
  EXPECT_EQ(a.TrackedFiles(), 8);
}

// A run dir first seen after the start (a tree copied in) has its newest 8
// windows analysed (they appeared while the daemon ran), the rest counted.
TEST_F(AssemblerTest, ARunFirstSeenLaterHasItsNewestWindowsAnalysed) {
  Assembler a(options_);
  Put("other", 0, "h0.trace.json.gz", 100);
  Scan(a);
  for (int i = 0; i < 12; ++i) Put("r", int64_t{i} * 600, "h0.trace.json.gz", 100);
  auto notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.backlog.size(), 1u);
  EXPECT_EQ(notes.backlog[0].windows, 4);
  auto tasks = Step(a, seconds(10));
  int of_r = 0;
  for (const WindowTask& t : tasks) of_r += t.run.run == "r" ? 1 : 0;
  EXPECT_EQ(of_r, 8);
}

// The same <ts> dir index keeps a window's identity when a late host writes
// an earlier dir of it (its first dir changes).
TEST_F(AssemblerTest, AWindowWhoseFirstDirChangesKeepsItsSerial) {
  Assembler a(options_);
  Put("r", 10, "h0.trace.json.gz", 100);
  Scan(a);
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  a.OnAnalyzed(tasks[0], AnalysisOutcome{}, clock_.Now());
  Put("r", 5, "h1.trace.json.gz", 100);
  tasks = Step(a, seconds(1));
  tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].window_id, Ts(5));
  EXPECT_TRUE(tasks[0].reanalysis);
  EXPECT_EQ(tasks[0].files.size(), 2u);
}

// Read once: hard links of one file in a window are one file of it.
TEST_F(AssemblerTest, HardLinksInAWindowAreOneFile) {
  Assembler a(options_);
  Put("r", 0, "h0.trace.json.gz", 100, /*ino=*/7);
  Put("r", 0, "h1.trace.json.gz", 100, /*ino=*/7);
  Put("r", 0, "h2.trace.json.gz", 100, /*ino=*/7);
  Put("r", 0, "h3.trace.json.gz", 100, /*ino=*/8);
  Scan(a);
  auto tasks = Step(a, seconds(10));
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].files.size(), 2u);
  EXPECT_EQ(tasks[0].duplicates, 2);
  EXPECT_EQ(tasks[0].total_files, 2);
}

// An owner over --max-runs-per-owner: the run with the oldest writes is
// left out (reported while it stays, counted as new once); another owner's
// run is untouched; a run already tracked is not pushed out by a newer one.
TEST_F(AssemblerTest, AnOwnerOverItsRunCapLosesItsOldestRun) {
  options_.max_runs_per_owner = 2;
  Assembler a(options_);
  owner_ = 1;
  Put("r1", 0, "h0.trace.json.gz", 100);
  clock_.Advance(seconds(1));
  Put("r2", 0, "h0.trace.json.gz", 100);
  clock_.Advance(seconds(1));
  Put("r3", 0, "h0.trace.json.gz", 100);
  owner_ = 2;
  Put("b1", 0, "h0.trace.json.gz", 100);
  auto notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.owner_caps.size(), 1u);
  EXPECT_EQ(notes.owner_caps[0].owner, 1u);
  EXPECT_EQ(notes.owner_caps[0].reason, kOwnerRunCapReason);
  EXPECT_EQ(notes.owner_caps[0].over, 1);
  EXPECT_EQ(notes.owner_caps[0].newly, 1);
  EXPECT_EQ(notes.owner_caps[0].example, "j/r1");
  EXPECT_EQ(a.RefusedRunDirs(), (std::set<std::string>{"/jobs/j/r1"}));
  notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.owner_caps.size(), 1u);
  EXPECT_EQ(notes.owner_caps[0].newly, 0);
  // A newer run of the owner does not push out the two tracked.
  owner_ = 1;
  clock_.Advance(seconds(1));
  Put("r4", 0, "h0.trace.json.gz", 100);
  notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.owner_caps.size(), 1u);
  EXPECT_EQ(notes.owner_caps[0].over, 2);
  EXPECT_EQ(notes.owner_caps[0].newly, 1);
  auto tasks = Step(a, seconds(10));
  std::set<std::string> runs;
  for (const WindowTask& t : tasks) runs.insert(t.run.run);
  EXPECT_EQ(runs, (std::set<std::string>{"r2", "r3", "b1"}));
}

// An owner over --max-windows-per-owner keeps its newest windows; the older
// ones lose their state and never come back while the daemon runs.
TEST_F(AssemblerTest, AnOwnerOverItsWindowCapKeepsItsNewestWindows) {
  options_.max_windows_per_owner = 3;
  Assembler a(options_);
  owner_ = 1;
  Put("other", 0, "h0.trace.json.gz", 100);
  Scan(a);
  for (int i = 0; i < 4; ++i) Put("r", int64_t{i} * 600, "h0.trace.json.gz", 100);
  auto notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.owner_caps.size(), 1u);
  EXPECT_EQ(notes.owner_caps[0].reason, kOwnerWindowCapReason);
  EXPECT_EQ(notes.owner_caps[0].over, 2);
  EXPECT_EQ(notes.owner_caps[0].newly, 2);
  EXPECT_EQ(a.TrackedFiles(), 3);
  notes = a.ObserveScan(files_, clock_.Now());
  ASSERT_EQ(notes.owner_caps.size(), 1u);
  EXPECT_EQ(notes.owner_caps[0].over, 2);
  EXPECT_EQ(notes.owner_caps[0].newly, 0);
  auto tasks = Step(a, seconds(10));
  std::set<std::string> ids;
  for (const WindowTask& t : tasks) ids.insert(t.run.run + "@" + t.window_id);
  EXPECT_EQ(ids, (std::set<std::string>{"r@" + Ts(1200), "r@" + Ts(1800), "r@" + Ts(600)}));
}

// Waiting windows are served round-robin by owner: one owner's seven ready
// windows do not hold another owner's one; a waiting window that changes
// leaves the queue until it is quiet again.
TEST_F(AssemblerTest, WaitingWindowsAreServedByOwnerInTurn) {
  Assembler a(options_);
  owner_ = 1;
  Put("seed", 0, "h0.trace.json.gz", 100);
  Scan(a);
  for (int i = 0; i < 6; ++i) Put("flood", int64_t{i} * 600, "h0.trace.json.gz", 100);
  Scan(a);
  clock_.Advance(seconds(10));
  Scan(a);
  EXPECT_EQ(a.Schedule(clock_.Now()), 7u);
  ASSERT_TRUE(a.OldestWaitingSince().has_value());
  job_ = "victim";
  owner_ = 2;
  Put("v", 0, "h0.trace.json.gz", 100);
  clock_.Advance(seconds(30));
  Scan(a);
  clock_.Advance(seconds(10));
  Scan(a);
  EXPECT_EQ(a.Schedule(clock_.Now()), 1u);
  EXPECT_EQ(clock_.Now() - *a.OldestWaitingSince(), seconds(40));
  auto first = a.TakeNext(clock_.Now());
  auto second = a.TakeNext(clock_.Now());
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->owner, 1u);
  EXPECT_EQ(second->owner, 2u);
  EXPECT_EQ(second->run.training_job, "victim");
  EXPECT_EQ(a.WaitingByOwner(), (std::map<watch::Owner, size_t>{{1, 6}}));
  // A waiting window that changes leaves the queue.
  job_ = "j";
  owner_ = 1;
  Put("flood", 600, "h0.trace.json.gz", 200);
  Scan(a);
  EXPECT_EQ(a.Waiting(), 5u);
  clock_.Advance(seconds(10));
  Scan(a);
  EXPECT_EQ(a.Schedule(clock_.Now()), 1u);
  EXPECT_EQ(a.Waiting(), 6u);
}

}  // namespace
}  // namespace profwatch::window
