// The daemon's window policy (pipeline/window_policy.h) on a fake clock:
// every path a finished analysis can take (published, retried, failed,
// given up, no usable data, superseded, held for GPUs), the counts by
// reason, the run's next state and the log lines; the workers' busy and
// stuck counts; the held and expired notes.
#include "pipeline/window_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"

namespace profwatch::pipeline {
namespace {

using namespace std::chrono_literals;
using Counts = std::map<std::string, int64_t>;
// A log event as its level and the text line the text log writes.
using Line = std::pair<LogLevel, std::string>;
Line LineOf(const LogEvent& e) { return {e.level, e.Text()}; }
std::vector<Line> Lines(const std::vector<LogEvent>& logs) {
  std::vector<Line> out;
  for (const LogEvent& e : logs) out.push_back(LineOf(e));
  return out;
}

constexpr char kWindow[] = "2024_03_01_12_00_00";
constexpr char kFile0[] = "/jobs/jobA/run1/p/2024_03_01_12_00_00/h0.trace.json.gz";
constexpr char kFile1[] = "/jobs/jobA/run1/p/2024_03_01_12_00_00/h1.trace.json.gz";

class WindowPolicyTest : public ::testing::Test {
 protected:
  WindowPolicyTest() {
    task_.serial = 7;
    task_.run = {"jobA", "run1"};
    task_.window_id = kWindow;
    task_.first_time = 1709294400;
    task_.files = {kFile0, kFile1};
    task_.total_files = 2;
    task_.last_activity_unix = 1709294460;
  }

  // `gpus` devices over two files, `kernel_ps` of kernel time in all.
  static std::shared_ptr<const aggregate::WindowStats> Stats(int gpus, int64_t kernel_ps) {
    aggregate::WindowStats s;
    s.files.resize(2);
    s.devices.resize(static_cast<size_t>(gpus));
    s.total_kernel_ps = kernel_ps;
    return std::make_shared<const aggregate::WindowStats>(std::move(s));
  }
  // A clean analysis with 2 GPUs and 6 s of kernels, to publish.
  static FinishedWindow Clean() {
    FinishedWindow w;
    w.stats = Stats(2, 6'000'000'000'000);
    w.format = "xplane";
    w.seconds = 1.5;
    w.outcome.gpus = 2;
    w.decision.publish = true;
    return w;
  }
  static window::FileFailure Failure(const std::string& path, ErrorCode code) {
    return {path, Error{code, "cut at byte 10"}};
  }
  // The run's state exporting `window_id`, with a training-log figure.
  snapshot::RunState Exporting(const std::string& window_id) const {
    snapshot::RunState rs;
    rs.key = {"jobA", "run1"};
    rs.window_id = window_id;
    rs.window_start = 1709290000;
    rs.stats = Stats(4, 1);
    rs.has_window = true;
    rs.expected_gpus = 4;
    rs.last_activity_unix = 1709290100;
    rs.training.steady_step_seconds = 0.5;
    rs.window_log.bound = true;
    rs.window_log.first_step = 100;
    return rs;
  }
  WindowVerdict Decide(const FinishedWindow& w, const snapshot::RunState* previous = nullptr) {
    return DecideWindow(task_, w, previous, clock_.Now(), options_);
  }
  double NowUnix() const { return ToUnixSeconds(clock_.Now()); }
  static std::vector<Line> One(LogLevel level, std::string text) {
    return {{level, std::move(text)}};
  }

  FakeClock clock_;
  WindowPolicyOptions options_{std::nullopt, 10min};
  window::WindowTask task_;
};

TEST_F(WindowPolicyTest, CleanWindowIsPublishedAsTheRunsFirst) {
  clock_.Advance(90s);
  const WindowVerdict v = Decide(Clean());
  ASSERT_TRUE(v.next.has_value());
  EXPECT_TRUE(v.published);
  EXPECT_EQ(v.result, WindowResult::kOk);
  EXPECT_TRUE(v.errors.empty());
  EXPECT_TRUE(v.retries.empty());
  EXPECT_EQ(v.failure, "");
  EXPECT_FALSE(v.replaced_log.has_value());
  EXPECT_FALSE(v.superseded_history.has_value());
  const snapshot::RunState& rs = *v.next;
  EXPECT_EQ(rs.key, (snapshot::RunKey{"jobA", "run1"}));
  EXPECT_EQ(rs.window_id, kWindow);
  EXPECT_EQ(rs.window_start, 1709294400);
  EXPECT_EQ(rs.stats->gpus(), 2);
  EXPECT_EQ(rs.format, "xplane");
  EXPECT_TRUE(rs.has_window);
  EXPECT_FALSE(rs.incomplete);
  EXPECT_EQ(rs.window_failure, "");
  EXPECT_DOUBLE_EQ(rs.analyzed_unix, NowUnix());
  // Activity is the newest file's time, not the analysis time.
  EXPECT_DOUBLE_EQ(rs.last_activity_unix, 1709294460);
  EXPECT_EQ(Lines(v.logs),
            One(LogLevel::kInfo,
                "window analysed training_job=jobA run=run1 window=2024_03_01_12_00_00 gpus=2 "
                "expected_gpus=0 files=2 files_present=2 launcher_mode=unknown "
                "total_kernel_s_per_gpu_step=1 seconds=1.5 reanalysis=false"));
}

TEST_F(WindowPolicyTest, ActivityFallsBackToTheWindowTimeThenTheAnalysisTime) {
  task_.last_activity_unix = 0;
  EXPECT_DOUBLE_EQ(Decide(Clean()).next->last_activity_unix, 1709294400);
  task_.first_time = 0;
  EXPECT_DOUBLE_EQ(Decide(Clean()).next->last_activity_unix, NowUnix());
}

TEST_F(WindowPolicyTest, NewWindowReplacesTheRunsAndIsPlacedInItsLogAnew) {
  const snapshot::RunState previous = Exporting("2024_03_01_11_00_00");
  FinishedWindow w = Clean();
  w.decision.expected_gpus = 2;
  const WindowVerdict v = Decide(w, &previous);
  ASSERT_TRUE(v.published);
  ASSERT_TRUE(v.replaced_log.has_value());
  EXPECT_EQ(*v.replaced_log, previous.window_log);
  EXPECT_EQ(v.next->window_log, snapshot::WindowLogSteps{});
  EXPECT_EQ(v.next->window_id, kWindow);
  EXPECT_EQ(v.next->expected_gpus, 2);
  EXPECT_EQ(v.next->training.steady_step_seconds, 0.5);  // the log's figures stay
  EXPECT_DOUBLE_EQ(v.next->last_activity_unix, 1709294460);
}

TEST_F(WindowPolicyTest, SameWindowAgainKeepsItsPlaceInTheLog) {
  const snapshot::RunState previous = Exporting(kWindow);
  task_.reanalysis = true;
  const WindowVerdict v = Decide(Clean(), &previous);
  ASSERT_TRUE(v.published);
  EXPECT_FALSE(v.replaced_log.has_value());
  EXPECT_EQ(v.next->window_log, previous.window_log);
  ASSERT_EQ(v.logs.size(), 1u);
  EXPECT_NE(v.logs[0].Text().find("reanalysis=true"), std::string::npos) << v.logs[0].Text();
}

TEST_F(WindowPolicyTest, FileStillBeingWrittenIsARetryNotAnError) {
  FinishedWindow w = Clean();
  w.outcome.failed = {Failure(kFile1, ErrorCode::kTruncated)};
  w.decision = {};
  w.decision.retry = true;
  w.decision.retrying = w.outcome.failed;
  const WindowVerdict v = Decide(w);
  EXPECT_EQ(v.retries, (Counts{{"truncated", 1}}));
  EXPECT_TRUE(v.errors.empty());
  EXPECT_EQ(v.failure, "");
  EXPECT_FALSE(v.next.has_value());  // the run is not flagged
  EXPECT_FALSE(v.published);
  EXPECT_EQ(v.result, WindowResult::kError);
  EXPECT_EQ(Lines(v.logs), One(LogLevel::kDebug, std::string("file not ready, will retry path=") +
                                                     kFile1 + " reason=truncated"));
}

TEST_F(WindowPolicyTest, WholeWindowNotReadyIsARetry) {
  FinishedWindow w;
  w.outcome.window_error = Error{ErrorCode::kNotFound, "no readable files left"};
  w.decision.retry = true;
  w.decision.retrying = {Failure(kFile0, ErrorCode::kNotFound)};
  const WindowVerdict v = Decide(w);
  EXPECT_EQ(v.retries, (Counts{{"not_found", 1}}));
  EXPECT_TRUE(v.errors.empty());
  EXPECT_FALSE(v.next.has_value());
  EXPECT_EQ(v.result, WindowResult::kError);
  EXPECT_EQ(
      Lines(v.logs),
      One(LogLevel::kDebug,
          "window not ready, will retry training_job=jobA run=run1 window=2024_03_01_12_00_00 "
          "reason=not_found"));
}

TEST_F(WindowPolicyTest, FailedWindowFlagsARunWithoutOneActiveAsOfItsFiles) {
  FinishedWindow w;
  w.outcome.window_error = Error{ErrorCode::kUnsupported, "not a trace"};
  const WindowVerdict v = Decide(w);
  EXPECT_EQ(v.errors, (Counts{{"unsupported", 1}}));
  EXPECT_EQ(v.failure, "unsupported");
  EXPECT_FALSE(v.published);
  EXPECT_EQ(v.result, WindowResult::kError);
  ASSERT_TRUE(v.next.has_value());
  EXPECT_EQ(v.next->key, (snapshot::RunKey{"jobA", "run1"}));
  EXPECT_FALSE(v.next->has_window);
  EXPECT_EQ(v.next->window_failure, "unsupported");
  EXPECT_DOUBLE_EQ(v.next->last_activity_unix, 1709294460);
  EXPECT_EQ(Lines(v.logs),
            One(LogLevel::kWarn,
                "window analysis failed training_job=jobA run=run1 window=2024_03_01_12_00_00 "
                "reason=unsupported error=\"unsupported: not a trace\""));
}

TEST_F(WindowPolicyTest, FailedWindowKeepsTheRunsExportedWindow) {
  const snapshot::RunState previous = Exporting("2024_03_01_11_00_00");
  FinishedWindow w;
  w.outcome.window_error = Error{ErrorCode::kPermission, "denied"};
  const WindowVerdict v = Decide(w, &previous);
  ASSERT_TRUE(v.next.has_value());
  EXPECT_EQ(v.next->window_id, "2024_03_01_11_00_00");
  EXPECT_EQ(v.next->stats, previous.stats);
  EXPECT_EQ(v.next->window_failure, "permission");
  EXPECT_DOUBLE_EQ(v.next->last_activity_unix, 1709290100);
}

TEST_F(WindowPolicyTest, OverBudgetFileIsAnErrorAndTheRestIsPublished) {
  FinishedWindow w = Clean();
  w.outcome.failed = {Failure(kFile1, ErrorCode::kOverBudget)};
  const WindowVerdict v = Decide(w);
  EXPECT_EQ(v.errors, (Counts{{"over_budget", 1}}));
  EXPECT_TRUE(v.retries.empty());
  ASSERT_TRUE(v.published);
  EXPECT_EQ(v.next->window_failure, "over_budget");
  EXPECT_EQ(v.result, WindowResult::kOk);
  ASSERT_EQ(v.logs.size(), 2u);
  EXPECT_EQ(LineOf(v.logs[0]),
            (Line{LogLevel::kWarn, std::string("file failed path=") + kFile1 +
                                       " reason=over_budget error=\"over_budget: "
                                       "cut at byte 10\""}));
  EXPECT_EQ(v.logs[1].level, LogLevel::kInfo);
}

TEST_F(WindowPolicyTest, GivenUpFileFailsTheWindowWithItsOwnError) {
  FinishedWindow w = Clean();
  task_.files = {kFile0};
  task_.excluded = {kFile1};
  w.stats = Stats(1, 3'000'000'000'000);
  w.decision.incomplete = true;
  w.decision.gave_up = {Failure(kFile1, ErrorCode::kTruncated)};
  const WindowVerdict v = Decide(w);
  EXPECT_EQ(v.errors, (Counts{{"give_up", 1}}));
  // profwatch_window_failed says why the file was given up, not "give_up".
  EXPECT_EQ(v.failure, "truncated");
  ASSERT_TRUE(v.published);
  EXPECT_TRUE(v.next->incomplete);
  EXPECT_EQ(v.next->window_failure, "truncated");
  EXPECT_EQ(v.result, WindowResult::kIncomplete);
  ASSERT_EQ(v.logs.size(), 3u);
  EXPECT_EQ(LineOf(v.logs[0]), (Line{LogLevel::kWarn, std::string("file given up path=") + kFile1 +
                                                          " reason=truncated error=\"truncated: "
                                                          "cut at byte 10\""}));
  EXPECT_EQ(LineOf(v.logs[2]),
            (Line{LogLevel::kWarn,
                  "window incomplete training_job=jobA run=run1 window=2024_03_01_12_00_00 "
                  "files=2 files_present=2 expected_files=0 excluded=1 failed=0"}));
}

TEST_F(WindowPolicyTest, FileGivenUpBeforeStillFailsTheWindow) {
  task_.excluded = {kFile1};
  task_.excluded_error = ErrorCode::kIo;
  EXPECT_EQ(Decide(Clean()).next->window_failure, "io");
  task_.excluded_error.reset();
  EXPECT_EQ(Decide(Clean()).next->window_failure, "give_up");
}

TEST_F(WindowPolicyTest, WindowWithoutKernelDataIsNotExported) {
  const snapshot::RunState previous = Exporting("2024_03_01_11_00_00");
  FinishedWindow w = Clean();
  w.stats = Stats(0, 0);
  w.decision.incomplete = true;
  task_.short_of_expected = true;
  const WindowVerdict v = Decide(w, &previous);
  EXPECT_FALSE(v.published);
  EXPECT_EQ(v.errors, (Counts{{"no_data", 1}}));
  EXPECT_EQ(v.failure, "no_data");
  EXPECT_EQ(v.result, WindowResult::kError);
  ASSERT_TRUE(v.next.has_value());  // the previous window stays, flagged
  EXPECT_EQ(v.next->window_id, "2024_03_01_11_00_00");
  EXPECT_EQ(v.next->window_failure, "no_data");
  EXPECT_EQ(Lines(v.logs),
            One(LogLevel::kWarn,
                "window not exported: no usable kernel data training_job=jobA run=run1 "
                "window=2024_03_01_12_00_00 reason=no_data gpus=0 files=2 files_present=2 failed=0 "
                "excluded=0 short_of_expected=true kept_window=2024_03_01_11_00_00"));
}

TEST_F(WindowPolicyTest, NoKernelDataAfterAFailedFileIsFlaggedWithTheFilesError) {
  FinishedWindow w = Clean();
  w.stats = Stats(2, 0);
  w.outcome.failed = {Failure(kFile1, ErrorCode::kCorrupt)};
  w.decision.incomplete = true;
  const WindowVerdict v = Decide(w);
  EXPECT_EQ(v.errors, (Counts{{"corrupt", 1}, {"no_data", 1}}));
  EXPECT_EQ(v.failure, "corrupt");
  EXPECT_FALSE(v.published);
  ASSERT_TRUE(v.next.has_value());
  EXPECT_FALSE(v.next->has_window);
  EXPECT_EQ(v.next->window_failure, "corrupt");
  ASSERT_EQ(v.logs.size(), 2u);
  EXPECT_NE(v.logs[1].Text().find("reason=corrupt gpus=2"), std::string::npos) << v.logs[1].Text();
  EXPECT_NE(v.logs[1].Text().find("kept_window=none"), std::string::npos) << v.logs[1].Text();
}

TEST_F(WindowPolicyTest, CleanWindowWithoutKernelsIsPublishedAsItIs) {
  FinishedWindow w = Clean();
  w.stats = Stats(2, 0);
  const WindowVerdict v = Decide(w);
  EXPECT_TRUE(v.published);
  EXPECT_TRUE(v.errors.empty());
}

TEST_F(WindowPolicyTest, OlderWindowFinishingLateGoesToHistoryOnly) {
  const snapshot::RunState previous = Exporting("2024_03_01_13_00_00");
  options_.step_seconds = 2.0;
  FinishedWindow w = Clean();
  w.decision = {};
  w.decision.superseded = true;
  clock_.Advance(1h);
  const WindowVerdict v = Decide(w, &previous);
  EXPECT_FALSE(v.published);
  EXPECT_FALSE(v.next.has_value());
  EXPECT_EQ(v.result, WindowResult::kOk);
  ASSERT_TRUE(v.superseded_history.has_value());
  const snapshot::RunState& h = *v.superseded_history;
  EXPECT_EQ(h.window_id, kWindow);
  EXPECT_EQ(h.window_start, 1709294400);
  EXPECT_EQ(h.stats->gpus(), 2);
  EXPECT_EQ(h.window_log, snapshot::WindowLogSteps{});
  EXPECT_DOUBLE_EQ(h.analyzed_unix, NowUnix());
  // The training log's steady steps come before --step-time.
  EXPECT_EQ(h.step_seconds, 0.5);
  EXPECT_EQ(h.step_source, "log");
  // Its history line renders the window's figures for that step.
  ASSERT_NE(h.figures, nullptr);
  EXPECT_EQ(h.figures->stats, h.stats);
  EXPECT_EQ(h.figures->step, (figures::StepTime{0.5, "log"}));
  EXPECT_EQ(Lines(v.logs),
            One(LogLevel::kInfo,
                "older window analysed after a newer one, not exported training_job=jobA run=run1 "
                "window=2024_03_01_12_00_00 exported=2024_03_01_13_00_00"));

  snapshot::RunState no_log = previous;
  no_log.training = {};
  const WindowVerdict config = Decide(w, &no_log);
  ASSERT_TRUE(config.superseded_history.has_value());
  EXPECT_EQ(config.superseded_history->step_seconds, 2.0);
  EXPECT_EQ(config.superseded_history->step_source, "config");
}

TEST_F(WindowPolicyTest, SupersededFailureDoesNotFlagTheRun) {
  const snapshot::RunState previous = Exporting("2024_03_01_13_00_00");
  FinishedWindow w = Clean();
  w.outcome.failed = {Failure(kFile1, ErrorCode::kCorrupt)};
  w.decision = {};
  w.decision.superseded = true;
  const WindowVerdict v = Decide(w, &previous);
  EXPECT_EQ(v.errors, (Counts{{"corrupt", 1}}));
  EXPECT_FALSE(v.next.has_value());
  ASSERT_TRUE(v.superseded_history.has_value());
  EXPECT_EQ(v.superseded_history->window_failure, "corrupt");
}

TEST_F(WindowPolicyTest, WindowShortOfGpusIsHeldUntilTheTimeout) {
  FinishedWindow w = Clean();
  w.decision = {};
  w.decision.waiting_for_gpus = true;
  w.decision.expected_gpus = 8;
  w.decision.held_until = clock_.Now() + 10min;
  const WindowVerdict v = Decide(w);
  EXPECT_FALSE(v.published);
  EXPECT_FALSE(v.next.has_value());
  EXPECT_TRUE(v.errors.empty());
  EXPECT_EQ(v.result, WindowResult::kIncomplete);
  EXPECT_EQ(
      Lines(v.logs),
      One(LogLevel::kInfo,
          "window held: fewer gpus than --expected-gpus, waiting for the rest until the window "
          "timeout training_job=jobA run=run1 window=2024_03_01_12_00_00 gpus=2 expected_gpus=8 "
          "until_unix=" +
              std::to_string(static_cast<int64_t>(NowUnix()) + 600) + " window_timeout_s=600"));
}

TEST_F(WindowPolicyTest, OutcomeAndExportedWindowForTheAssembler) {
  const window::AnalysisOutcome failed =
      OutcomeOf(Result<analysis::WindowAnalysis>(MakeError(ErrorCode::kIo, "read")));
  ASSERT_TRUE(failed.window_error.has_value());
  EXPECT_EQ(failed.window_error->code, ErrorCode::kIo);
  analysis::WindowAnalysis a;
  a.stats.devices.resize(3);
  a.errors.push_back({kFile1, Error{ErrorCode::kCorrupt, "x"}});
  const window::AnalysisOutcome ok = OutcomeOf(Result<analysis::WindowAnalysis>(std::move(a)));
  EXPECT_FALSE(ok.window_error.has_value());
  EXPECT_EQ(ok.gpus, 3);
  ASSERT_EQ(ok.failed.size(), 1u);
  EXPECT_EQ(ok.failed[0].path, kFile1);

  EXPECT_FALSE(ExportedOf(nullptr, 0).has_value());
  snapshot::RunState log_only;
  EXPECT_FALSE(ExportedOf(&log_only, 0).has_value());
  snapshot::RunState previous = Exporting("2024_03_01_11_00_00");
  previous.incomplete = true;
  const std::optional<window::ExportedWindow> e = ExportedOf(&previous, 5);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->serial, 5u);
  EXPECT_EQ(e->first_time, 1709290000);
  EXPECT_EQ(e->gpus, 4);
  EXPECT_EQ(e->expected_gpus, 4);
  EXPECT_TRUE(e->incomplete);
}

TEST(WorkerCountsTest, WorkerPastTheBudgetIsStuckAndLoggedOnce) {
  FakeClock clock;
  std::vector<WorkerSlot> slots(3);
  slots[0] = WorkerSlot{clock.Now(), {"jobA", "run1"}, kWindow, false};
  slots[2] = WorkerSlot{clock.Now() + 30min, {"jobB", "run2"}, "w2", false};
  clock.Advance(40min);
  WorkerCounts c = CountWorkers(slots, clock.Now(), 30min);
  EXPECT_EQ(c.busy, 2);
  EXPECT_EQ(c.stuck, 1);
  const std::vector<Line> logs = {
      {LogLevel::kWarn,
       "worker stuck: busy on one window longer than --file-max-seconds training_job=jobA "
       "run=run1 window=2024_03_01_12_00_00 busy_seconds=2400"}};
  EXPECT_EQ(Lines(c.logs), logs);
  EXPECT_TRUE(slots[0].logged_stuck);
  EXPECT_FALSE(slots[2].logged_stuck);

  clock.Advance(30min);  // both stuck now; the first is not logged again
  c = CountWorkers(slots, clock.Now(), 30min);
  EXPECT_EQ(c.busy, 2);
  EXPECT_EQ(c.stuck, 2);
  ASSERT_EQ(c.logs.size(), 1u);
  EXPECT_NE(c.logs[0].Text().find("training_job=jobB"), std::string::npos) << c.logs[0].Text();

  c = CountWorkers(slots, clock.Now(), 0s);  // no budget: none is stuck
  EXPECT_EQ(c.busy, 2);
  EXPECT_EQ(c.stuck, 0);
  EXPECT_TRUE(c.logs.empty());
}

// Issue #65: "older window found at startup" only for what the first scan
// found; the startup window a newer one replaced later says that instead.
TEST(SupersededEventsTest, StartupAndLaterSupersedingAreWordedApart) {
  std::vector<window::Assembler::Superseded> notes;
  notes.push_back({{"jobA", "run1"}, "2024_03_01_12_00_00", "2024_03_01_12_00_30", 2, true});
  notes.push_back({{"jobB", "run2"}, "2024_03_01_12_00_00", "2024_03_01_12_05_00", 1, false});
  const std::vector<Line> logs = {
      {LogLevel::kInfo,
       "older window found at startup not analysed training_job=jobA run=run1 "
       "window=2024_03_01_12_00_00 files=2 newest=2024_03_01_12_00_30 stage=window"},
      {LogLevel::kInfo,
       "window found at startup not analysed: a newer window of its run came before its "
       "analysis training_job=jobB run=run2 window=2024_03_01_12_00_00 files=1 "
       "newest=2024_03_01_12_05_00 stage=window"}};
  EXPECT_EQ(Lines(SupersededEvents(notes)), logs);
}

TEST(ReadyNoteEventsTest, HeldAndExpiredWindowsAreLoggedWithTheirTimes) {
  FakeClock clock;
  window::Assembler::ReadyNotes notes;
  notes.held.push_back({{"jobA", "run1"}, kWindow, 3, 4, "--expected-files", clock.Now() + 10min});
  notes.expired.push_back({{"jobB", "run2"}, "2024_01_01_00_00_00", 1704067200});
  const double now = ToUnixSeconds(clock.Now());
  const std::vector<Line> logs = {
      {LogLevel::kInfo,
       "window held: fewer files than expected, waiting for the rest until the window timeout "
       "training_job=jobA run=run1 window=2024_03_01_12_00_00 files=3 expected_files=4 "
       "expected_from=--expected-files until_unix=" +
           std::to_string(static_cast<int64_t>(now) + 600) + " window_timeout_s=600"},
      {LogLevel::kInfo,
       "window not analysed: older than --retention training_job=jobB run=run2 "
       "window=2024_01_01_00_00_00 last_activity_unix=1704067200 retention_s=86400 now_unix=" +
           std::to_string(static_cast<int64_t>(now))}};
  EXPECT_EQ(Lines(ReadyNoteEvents(notes, clock.Now(), 10min, 24h)), logs);
}

// --- The crash-loop guard (issue #45) ----------------------------------------

// A window the daemon died on: analysed again once, alone, with the same
// files; after a second death it is failed as crashed, never analysed again
// with those files; files that changed start afresh.
TEST_F(WindowPolicyTest, AWindowTheDaemonDiedOnTwiceIsFailedAsCrashedNotAnalysed) {
  const InflightDecision fresh = DecideInflight(task_, 42, nullptr);
  EXPECT_TRUE(fresh.analyse);
  EXPECT_FALSE(fresh.alone);
  EXPECT_TRUE(fresh.logs.empty());
  const InflightHistory once{42, 1};
  const InflightDecision retry = DecideInflight(task_, 42, &once);
  EXPECT_TRUE(retry.analyse);
  EXPECT_TRUE(retry.alone) << "a death may have been the other worker's window";
  EXPECT_EQ(retry.deaths, 1);
  EXPECT_EQ(Lines(retry.logs),
            One(LogLevel::kWarn,
                "window in flight when the daemon died, analysed again alone training_job=jobA "
                "run=run1 window=2024_03_01_12_00_00 deaths=1 max_deaths=2"));
  const InflightHistory twice{42, 2};
  const InflightDecision crashed = DecideInflight(task_, 42, &twice);
  EXPECT_FALSE(crashed.analyse);
  EXPECT_EQ(crashed.deaths, 2);
  // Changed files: a new window as far as the guard knows.
  const InflightDecision changed = DecideInflight(task_, 43, &twice);
  EXPECT_TRUE(changed.analyse);
  EXPECT_FALSE(changed.alone);
  EXPECT_EQ(changed.deaths, 0);
  const InflightHistory none{42, 0};  // in the journal, no death: an ordinary window
  EXPECT_FALSE(DecideInflight(task_, 42, &none).alone);
}

// The crashed window's verdict: counted and flagged with its own reason
// (profwatch_window_failed{reason="crashed"}), logged, the run's exported
// window kept.
TEST_F(WindowPolicyTest, CrashedWindowIsCountedFlaggedAndKeepsTheExportedWindow) {
  clock_.Advance(30s);
  FinishedWindow w;
  w.outcome.window_error = CrashedError(2);
  const snapshot::RunState previous = Exporting("2024_03_01_11_00_00");
  const WindowVerdict v = Decide(w, &previous);
  EXPECT_EQ(v.errors, (Counts{{"crashed", 1}}));
  EXPECT_TRUE(v.retries.empty());
  EXPECT_EQ(v.failure, kCrashedReason);
  EXPECT_EQ(v.result, WindowResult::kError);
  EXPECT_FALSE(v.published);
  ASSERT_TRUE(v.next.has_value());
  EXPECT_EQ(v.next->window_failure, "crashed");
  EXPECT_EQ(v.next->window_id, "2024_03_01_11_00_00") << "the exported window stays";
  EXPECT_EQ(Lines(v.logs),
            One(LogLevel::kWarn,
                "window analysis failed training_job=jobA run=run1 window=2024_03_01_12_00_00 "
                "reason=crashed error=\"crashed: the daemon died 2 times while analysing this "
                "window (the last time alone); not analysed again until its files change\""));
  // A run with no window yet gets a window-less entry carrying the failure.
  const WindowVerdict first = Decide(w);
  ASSERT_TRUE(first.next.has_value());
  EXPECT_FALSE(first.next->has_window);
  EXPECT_EQ(first.next->window_failure, "crashed");
}

// A window whose run state would be over the per-run cap is not exported:
// too_large, counted and logged, the previous window kept.
TEST_F(WindowPolicyTest, WindowOverThePerRunStateCapIsNotExported) {
  options_.max_run_state_bytes = 200;
  const snapshot::RunState previous = Exporting("2024_03_01_11_00_00");
  const WindowVerdict v = Decide(Clean(), &previous);
  EXPECT_FALSE(v.published);
  EXPECT_EQ(v.errors, (Counts{{"too_large", 1}}));
  EXPECT_EQ(v.failure, "too_large");
  EXPECT_EQ(v.result, WindowResult::kError);
  ASSERT_TRUE(v.next.has_value());
  EXPECT_EQ(v.next->window_id, "2024_03_01_11_00_00");
  EXPECT_EQ(v.next->window_failure, "too_large");
  ASSERT_FALSE(v.logs.empty());
  EXPECT_NE(v.logs.back().Text().find("window not exported: its run state is over the per-run "
                                      "cap training_job=jobA run=run1"),
            std::string::npos)
      << v.logs.back().Text();
  options_.max_run_state_bytes = static_cast<size_t>(caps::kRunStateBytes.value);
  EXPECT_TRUE(Decide(Clean(), &previous).published) << "the default holds it";
}

// A window whose run state would take its owner past
// --max-state-bytes-per-owner (the room its other runs leave) is not
// exported: owner_state_cap, counted and logged, the previous window kept.
// Within the room it is published with its state's size, which the
// ledger then charges to the owner.
TEST_F(WindowPolicyTest, WindowPastItsOwnersStateRoomIsNotExported) {
  const snapshot::RunState previous = Exporting("2024_03_01_11_00_00");
  options_.owner_state_room = 1'000'000;
  const WindowVerdict fits = Decide(Clean(), &previous);
  EXPECT_TRUE(fits.published);
  EXPECT_GT(fits.state_bytes, 200u);
  EXPECT_LT(fits.state_bytes, 1'000'000u);
  options_.owner_state_room = fits.state_bytes - 1;
  const WindowVerdict v = Decide(Clean(), &previous);
  EXPECT_FALSE(v.published);
  EXPECT_EQ(v.state_bytes, 0u);
  EXPECT_EQ(v.errors, (Counts{{"owner_state_cap", 1}}));
  EXPECT_EQ(v.failure, "owner_state_cap");
  ASSERT_TRUE(v.next.has_value());
  EXPECT_EQ(v.next->window_id, "2024_03_01_11_00_00");
  EXPECT_EQ(v.next->window_failure, "owner_state_cap");
  ASSERT_FALSE(v.logs.empty());
  EXPECT_NE(v.logs.back().Text().find("window not exported: its owner's runs would keep more state "
                                      "than --max-state-bytes-per-owner training_job=jobA"),
            std::string::npos)
      << v.logs.back().Text();
  options_.owner_state_room = fits.state_bytes;
  EXPECT_TRUE(Decide(Clean(), &previous).published) << "exactly the room fits";
}

// The same past the room --max-state-bytes leaves the run (all owners'
// runs): state_cap, the previous window kept.
TEST_F(WindowPolicyTest, WindowPastTheDaemonsStateRoomIsNotExported) {
  const snapshot::RunState previous = Exporting("2024_03_01_11_00_00");
  const WindowVerdict fits = Decide(Clean(), &previous);
  ASSERT_TRUE(fits.published);
  options_.owner_state_room = fits.state_bytes;
  options_.daemon_state_room = fits.state_bytes - 1;
  const WindowVerdict v = Decide(Clean(), &previous);
  EXPECT_FALSE(v.published);
  EXPECT_EQ(v.errors, (Counts{{"state_cap", 1}}));
  EXPECT_EQ(v.failure, "state_cap");
  ASSERT_TRUE(v.next.has_value());
  EXPECT_EQ(v.next->window_id, "2024_03_01_11_00_00");
  EXPECT_EQ(v.next->window_failure, "state_cap");
  ASSERT_FALSE(v.logs.empty());
  EXPECT_NE(v.logs.back().Text().find("more state than --max-state-bytes and its owner keeps an "
                                      "equal share of it training_job=jobA"),
            std::string::npos)
      << v.logs.back().Text();
  options_.daemon_state_room = fits.state_bytes;
  EXPECT_TRUE(Decide(Clean(), &previous).published) << "exactly the room fits";
}

}  // namespace
}  // namespace profwatch::pipeline

// The retry policy (DecideRetry) on a fake clock: what each failure class
// holds back, gives up or rechecks, and when.
namespace profwatch::pipeline {
namespace {

using namespace std::chrono_literals;

class DecideRetryTest : public ::testing::Test {
 protected:
  using Next = window::RetryPlan::Next;

  DecideRetryTest() {
    facts_.now = clock_.Now();
    facts_.taken_at = clock_.Now() - 2s;
    facts_.active_files = 2;
    facts_.max_retries = 3;
    facts_.settle = 10s;
    facts_.max_backoff = 300s;
    facts_.reanalysis_interval = 30s;
  }
  void Fail(const std::string& path, ErrorCode code, int tries) {
    facts_.failed.push_back({{path, Error{code, path}}, tries});
    facts_.incomplete_input = true;
  }
  static std::vector<std::string> Paths(const std::vector<window::FileFailure>& files) {
    std::vector<std::string> out;
    for (const window::FileFailure& f : files) out.push_back(f.path);
    return out;
  }

  FakeClock clock_;
  window::RetryFacts facts_;
};

TEST_F(DecideRetryTest, BackoffDoublesPerTryFromTheSettleTimeUpToItsCap) {
  EXPECT_EQ(RetryBackoff(1, 10s, 300s), 10s);
  EXPECT_EQ(RetryBackoff(2, 10s, 300s), 20s);
  EXPECT_EQ(RetryBackoff(5, 10s, 300s), 160s);
  EXPECT_EQ(RetryBackoff(6, 10s, 300s), 300s);   // 320 s, capped
  EXPECT_EQ(RetryBackoff(1, 100ms, 300s), 1s);   // at least a second
  EXPECT_EQ(RetryBackoff(0, 10s, 300s), 10s);    // no try yet: as the first
  EXPECT_EQ(RetryBackoff(99, 10s, 300s), 300s);  // no overflow
}

TEST_F(DecideRetryTest, AFileStillBeingWrittenHoldsTheWindowBackWithBackoff) {
  Fail("a", ErrorCode::kTruncated, 2);
  Fail("b", ErrorCode::kIo, 1);
  const window::RetryPlan plan = DecideRetry(facts_);
  EXPECT_EQ(plan.next, Next::kRetryAt);
  EXPECT_EQ(Paths(plan.retrying), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(plan.gave_up.empty());
  EXPECT_EQ(plan.retry_at, clock_.Now() + 20s);  // the most tries: 2
  EXPECT_FALSE(plan.publish);
  EXPECT_FALSE(plan.reanalyse_after);
}

TEST_F(DecideRetryTest, AtMaxRetriesTheFileIsGivenUpAndTheRestAnalysedAtOnce) {
  Fail("a", ErrorCode::kNotFound, 3);
  const window::RetryPlan plan = DecideRetry(facts_);
  EXPECT_EQ(plan.next, Next::kAnalyseNow);  // "b" is still active
  EXPECT_EQ(Paths(plan.gave_up), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(plan.retrying.empty());
  EXPECT_FALSE(plan.publish);
}

TEST_F(DecideRetryTest, TheLastActiveFileGivenUpPublishesTheWindowIncomplete) {
  facts_.active_files = 1;
  Fail("a", ErrorCode::kIo, 3);
  const window::RetryPlan plan = DecideRetry(facts_);
  EXPECT_EQ(plan.next, Next::kDone);
  EXPECT_EQ(Paths(plan.gave_up), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(plan.publish);
  EXPECT_TRUE(plan.incomplete);
  EXPECT_EQ(plan.reanalyse_after, clock_.Now() + 30s);
  EXPECT_FALSE(plan.recheck_at);
}

TEST_F(DecideRetryTest, AnUnreadableFileIsPublishedWithoutAndRecheckedLater) {
  Fail("a", ErrorCode::kPermission, 2);
  Fail("b", ErrorCode::kCorrupt, 1);
  const window::RetryPlan plan = DecideRetry(facts_);
  EXPECT_EQ(plan.next, Next::kDone);
  EXPECT_TRUE(plan.retrying.empty());
  EXPECT_TRUE(plan.gave_up.empty());
  EXPECT_TRUE(plan.publish);
  EXPECT_TRUE(plan.incomplete);
  EXPECT_EQ(plan.recheck_at,
            clock_.Now() + 20s);  // kPermission's 2 tries; kCorrupt waits for a change
}

TEST_F(DecideRetryTest, ANeverRetriedFailureIsNeitherRetriedNorGivenUp) {
  Fail("a", ErrorCode::kUnsupported, 7);
  const window::RetryPlan plan = DecideRetry(facts_);
  EXPECT_EQ(plan.next, Next::kDone);
  EXPECT_TRUE(plan.gave_up.empty());
  EXPECT_TRUE(plan.retrying.empty());
  EXPECT_TRUE(plan.publish);
  EXPECT_TRUE(plan.incomplete);
  EXPECT_FALSE(plan.recheck_at);
}

TEST_F(DecideRetryTest, ACleanAnalysisIsPublishedCompleteAndPaced) {
  facts_.taken_at = clock_.Now() - 45s;  // took longer than the interval
  const window::RetryPlan plan = DecideRetry(facts_);
  EXPECT_EQ(plan.next, Next::kDone);
  EXPECT_TRUE(plan.publish);
  EXPECT_FALSE(plan.incomplete);
  EXPECT_EQ(plan.reanalyse_after, clock_.Now() + 45s);
  facts_.reanalysis_interval = 0s;
  EXPECT_FALSE(DecideRetry(facts_).reanalyse_after);  // only `settle` paces it
}

TEST_F(DecideRetryTest, AWholeWindowFailureIsRetriedOrLeftUnpublished) {
  facts_.window_error = true;
  Fail("a", ErrorCode::kIo, 1);
  Fail("b", ErrorCode::kIo, 1);
  EXPECT_EQ(DecideRetry(facts_).next, Next::kRetryAt);
  facts_.failed.clear();
  Fail("a", ErrorCode::kCorrupt, 1);
  Fail("b", ErrorCode::kCorrupt, 1);
  const window::RetryPlan plan = DecideRetry(facts_);
  EXPECT_EQ(plan.next, Next::kDone);
  EXPECT_FALSE(plan.publish);
  EXPECT_FALSE(plan.incomplete);
}

TEST_F(DecideRetryTest, AWindowDroppedInFlightPublishesItsResultAsItIs) {
  facts_.tracked = false;
  Fail("a", ErrorCode::kIo, 1);  // not counted: no state to retry with
  window::RetryPlan plan = DecideRetry(facts_);
  EXPECT_EQ(plan.next, Next::kDone);
  EXPECT_TRUE(plan.publish);
  EXPECT_TRUE(plan.incomplete);
  EXPECT_TRUE(plan.retrying.empty());
  facts_.window_error = true;
  plan = DecideRetry(facts_);
  EXPECT_FALSE(plan.publish);
  EXPECT_TRUE(plan.incomplete);
}

}  // namespace
}  // namespace profwatch::pipeline
