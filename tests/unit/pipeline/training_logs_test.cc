// TrainingLogs: log discovery order, late logs, explicit bindings, figures
// and step-source choice. Temp dirs; a FakeClock stamps the step times.
#include "pipeline/training_logs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "testing/test_util.h"

namespace profwatch::pipeline {
namespace {

using testing::TempDir;
using testing::WriteFile;

void Append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

// A run created by this user (the scanner's owner: the run directory's uid).
RunLocation Loc(const std::string& jobs_root, const std::string& job, const std::string& run) {
  RunLocation loc{{job, run}, jobs_root, job, run};
  loc.owner = getuid();
  return loc;
}

std::string StepLine(int step, double seconds) {
  return "completed step: " + std::to_string(step) + ", seconds: " + std::to_string(seconds) +
         ", TFLOP/s/device: 100.0, Tokens/s/device: 2000.0, loss: 3.5\n";
}

TEST(ParseLogBindingTest, AcceptsPlainRunAndJobRunForms) {
  EXPECT_EQ(*ParseLogBinding("/data/job.log"), (LogBinding{"", "", "/data/job.log"}));
  EXPECT_EQ(*ParseLogBinding("run1=/data/a.log"), (LogBinding{"", "run1", "/data/a.log"}));
  EXPECT_EQ(*ParseLogBinding("jobA/run1=/data/a.log"), (LogBinding{"jobA", "run1", "/data/a.log"}));
  EXPECT_EQ(*ParseLogBinding("jobA/nested/run=x.log"), (LogBinding{"jobA", "nested/run", "x.log"}));
  // An absolute or relative path with '=' in it is a path, not a binding.
  EXPECT_EQ(*ParseLogBinding("/data/a=b.log"), (LogBinding{"", "", "/data/a=b.log"}));
  EXPECT_EQ(*ParseLogBinding("./a=b.log"), (LogBinding{"", "", "./a=b.log"}));
}

TEST(ParseLogBindingTest, RejectsEmptyFileAndHalfNamedRun) {
  EXPECT_EQ(ParseLogBinding("").error().code, ErrorCode::kConfig);
  EXPECT_EQ(ParseLogBinding("run1=").error().code, ErrorCode::kConfig);
  EXPECT_EQ(ParseLogBinding("jobA/=x.log").error().code, ErrorCode::kConfig);
}

TEST(ExpandLogGlobTest, ReplacesPlaceholdersAndEscapesGlobCharacters) {
  EXPECT_EQ(ExpandLogGlob("{jobs_root}/{job}.{run}.log", "/j", "a", "r1"), "/j/a.r1.log");
  EXPECT_EQ(ExpandLogGlob("{jobs_root}/{job}/log*", "/j[1]", "a*", "r"), "/j\\[1\\]/a\\*/log*");
}

TEST(LocateRunTest, JobsRootIsTheParentOfTheJobDirectory) {
  watch::FileObservation f;
  f.run_dir = "/data/jobs/jobA/run1";
  f.labels = {"jobA", "run1"};
  RunLocation loc = LocateRun(f);
  EXPECT_EQ(loc.key, (snapshot::RunKey{"jobA", "run1"}));
  EXPECT_EQ(loc.jobs_root, "/data/jobs");
  f.run_dir = "/data/jobs/jobA/sweep/run7";
  f.labels = {"jobA", "sweep/run7"};
  EXPECT_EQ(LocateRun(f).jobs_root, "/data/jobs");
  EXPECT_EQ(LocateRun(f).job_dir_name, "jobA");
  EXPECT_EQ(LocateRun(f).run_path, "sweep/run7");
}

// Issue #49: traces in a job dir itself (run "-") have the job dir as their
// run dir, and a root of one job bound to another name (--watch JOB=DIR)
// finds its logs by the directories' names, not by the labels.
TEST(LocateRunTest, RunOfTheJobDirAndABoundJobNameLocateByDirectories) {
  watch::FileObservation f;
  f.run_dir = "/data/jobs/jobA";
  f.labels = {"jobA", std::string(watch::kRunOfJobDir)};
  RunLocation loc = LocateRun(f);
  EXPECT_EQ(loc.key, (snapshot::RunKey{"jobA", "-"}));
  EXPECT_EQ(loc.jobs_root, "/data/jobs");
  EXPECT_EQ(loc.job_dir_name, "jobA");
  EXPECT_EQ(loc.run_path, "");
  f.run_dir = "/data/jobs/12345-llama/base";
  f.labels = {"llama", "base"};
  loc = LocateRun(f);
  EXPECT_EQ(loc.key, (snapshot::RunKey{"llama", "base"}));
  EXPECT_EQ(loc.jobs_root, "/data/jobs");
  EXPECT_EQ(loc.job_dir_name, "12345-llama");
  EXPECT_EQ(loc.run_path, "base");
}

TEST(LocateRunTest, FindsTheLogOfARunInTheJobDirItself) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  WriteFile(root + "/jobA/log.txt", "x");
  WriteFile(root + "/jobB.log", "y");
  watch::FileObservation f;
  f.run_dir = root + "/jobA";
  f.labels = {"jobA", std::string(watch::kRunOfJobDir)};
  EXPECT_EQ(FindLogByGlobs(LocateRun(f), kDefaultLogGlobs), root + "/jobA/log.txt");
  f.run_dir = root + "/jobB";
  f.labels = {"jobB", std::string(watch::kRunOfJobDir)};
  EXPECT_EQ(FindLogByGlobs(LocateRun(f), kDefaultLogGlobs), root + "/jobB.log");
}

// Issue #49: --max-followed-logs is the only cap on followed logs; runs
// beyond it are refused, each counted once however often scans see it, and
// followed once a followed run is forgotten.
TEST(TrainingLogsTest, RunsBeyondMaxFollowedLogsAreCountedOnceEach) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  FakeClock clock;
  TrainingLogsOptions options;
  options.max_runs = 2;
  TrainingLogs logs(options, clock);
  std::vector<RunLocation> runs = {Loc(root, "j", "r1"), Loc(root, "j", "r2"), Loc(root, "j", "r3"),
                                   Loc(root, "j", "r4")};
  runs[2].owner = 1001;  // refused runs are counted by their owner
  runs[3].owner = 1002;
  using Refused = std::map<watch::Owner, size_t>;
  EXPECT_EQ(logs.ObserveRuns(runs), (Refused{{1001, 1}, {1002, 1}}));
  EXPECT_TRUE(logs.ObserveRuns(runs).empty());
  for (const RunLocation& r : runs)
    WriteFile(root + "/j/" + r.key.run + "/log.txt", StepLine(1, 1.0));
  EXPECT_EQ(logs.Poll().size(), 2u);
  // r1 goes (retention): r3 takes its place; r4, counted already, is not again.
  logs.Forget(runs[0].key);
  EXPECT_TRUE(logs.ObserveRuns({runs[2], runs[3]}).empty());
  const std::vector<LogUpdate> updates = logs.Poll();
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].key.run, "r3");
}

TEST(TrainingLogsTest, DefaultGlobsAreTriedInOrder) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  FakeClock clock;
  TrainingLogs logs({}, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  const RunLocation loc = Loc(root, "jobA", "run1");
  // Lowest priority first, so each step shows the next pattern wins.
  WriteFile(root + "/jobA/run1/log.txt", StepLine(1, 1.0));
  EXPECT_TRUE(logs.Poll().size() == 1);
  EXPECT_EQ(logs.LogPathOf(loc.key), root + "/jobA/run1/log.txt");

  for (const auto& [file, expected] : std::vector<std::pair<std::string, std::string>>{
           {"/jobA/artifact/log", "/jobA/artifact/log"},
           {"/jobA.log", "/jobA.log"},
           {"/jobA.run1.log", "/jobA.run1.log"}}) {
    WriteFile(root + file, StepLine(1, 1.0));
    TrainingLogs fresh({}, clock);
    fresh.ObserveRuns({loc});
    fresh.Poll();
    EXPECT_EQ(fresh.LogPathOf(loc.key), root + expected) << file;
  }
}

// A log belongs to its run (issue 60): a root-level `<job>.<run>.log` whose
// owner is not the run's is refused (counted once for the run's owner,
// however often discovery runs), and the run's own log.txt is used; the
// same file is the run's when the run's owner wrote it. Files in the run's
// or job's directory are the run's whoever wrote them.
TEST(TrainingLogsTest, ALogOfAnotherOwnerOutsideTheRunIsRefused) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  FakeClock clock;
  WriteFile(root + "/jobA/run1/log.txt", StepLine(1, 1.0));
  WriteFile(root + "/jobA.run1.log", StepLine(1, 9.99));
  RunLocation foreign = Loc(root, "jobA", "run1");
  foreign.owner = getuid() + 1;  // the run is another user's: this user planted the file
  TrainingLogs logs({}, clock);
  logs.ObserveRuns({foreign});
  logs.Poll();
  EXPECT_EQ(logs.LogPathOf(foreign.key), root + "/jobA/run1/log.txt");
  EXPECT_EQ(logs.TakeRefusedLogs(), (std::map<watch::Owner, size_t>{{getuid() + 1, 1}}));
  logs.Poll();
  EXPECT_TRUE(logs.TakeRefusedLogs().empty());

  TrainingLogs own({}, clock);
  own.ObserveRuns({Loc(root, "jobA", "run1")});
  own.Poll();
  EXPECT_EQ(own.LogPathOf(foreign.key), root + "/jobA.run1.log");
  EXPECT_TRUE(own.TakeRefusedLogs().empty());
}

TEST(TrainingLogsTest, PollWithoutDiscoveryReadsOnlyFollowedLogs) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  FakeClock clock;
  TrainingLogs logs({}, clock);
  const RunLocation a = Loc(root, "jobA", "run1"), b = Loc(root, "jobB", "run1");
  logs.ObserveRuns({a, b});
  WriteFile(root + "/jobA.log", StepLine(1, 1.0));
  ASSERT_EQ(logs.Poll().size(), 1u);  // finds jobA's log
  // jobB's log appears and jobA's grows: a poll without discovery reads
  // jobA's new line and leaves jobB unresolved.
  WriteFile(root + "/jobB.log", StepLine(1, 2.0));
  Append(root + "/jobA.log", StepLine(2, 1.0));
  std::vector<LogUpdate> u = logs.Poll(/*discover=*/false);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].key, a.key);
  EXPECT_EQ(u[0].training.last_step, 2);
  EXPECT_EQ(logs.LogPathOf(b.key), "");
  // The next poll with discovery (a scan) picks it up.
  u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].key, b.key);
  EXPECT_EQ(logs.LogPathOf(b.key), root + "/jobB.log");
}

TEST(TrainingLogsTest, CustomGlobsReplaceTheDefaults) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  WriteFile(root + "/jobA.log", StepLine(1, 1.0));
  WriteFile(root + "/logs/jobA-run1-0.txt", StepLine(1, 1.0));
  FakeClock clock;
  TrainingLogsOptions o;
  o.globs = {"{jobs_root}/logs/{job}-{run}-*.txt"};
  TrainingLogs logs(o, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  logs.Poll();
  EXPECT_EQ(logs.LogPathOf({"jobA", "run1"}), root + "/logs/jobA-run1-0.txt");
}

TEST(TrainingLogsTest, LogThatAppearsLateIsPickedUpOnALaterPoll) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  std::filesystem::create_directories(root);
  FakeClock clock;
  TrainingLogs logs({}, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  EXPECT_TRUE(logs.Poll().empty());
  EXPECT_EQ(logs.LogPathOf({"jobA", "run1"}), "");
  WriteFile(root + "/jobA.log", StepLine(4, 1.25));
  std::vector<LogUpdate> u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].path, root + "/jobA.log");
  EXPECT_EQ(u[0].training.last_step, 4);
  EXPECT_EQ(u[0].training.last_step_seconds, 1.25);
  EXPECT_TRUE(u[0].changed);
}

TEST(TrainingLogsTest, ExplicitBindingWinsOverGlobsAndIsKnownWithoutTraces) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  WriteFile(root + "/jobA.log", StepLine(1, 1.0));
  WriteFile(tmp.Sub("elsewhere.log"), StepLine(9, 2.0));
  FakeClock clock;
  TrainingLogsOptions o;
  o.bindings = {*ParseLogBinding("jobA/run1=" + tmp.Sub("elsewhere.log"))};
  TrainingLogs logs(o, clock);
  EXPECT_EQ(logs.runs(), 1u);  // known before any scan
  std::vector<LogUpdate> u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].training.last_step, 9);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  logs.Poll();
  EXPECT_EQ(logs.LogPathOf({"jobA", "run1"}), tmp.Sub("elsewhere.log"));
}

// serve --shard: a fully named binding of another shard's job is neither
// known nor followed; the owned job's binding is.
TEST(TrainingLogsTest, BindingOfAnotherShardsJobIsNotFollowed) {
  TempDir tmp;
  WriteFile(tmp.Sub("a.log"), StepLine(3, 1.0));
  WriteFile(tmp.Sub("b.log"), StepLine(7, 2.0));
  // Under hashmod 2, "job1" hashes to 1 and "job2" to 0.
  ASSERT_EQ(watch::HashMod("job1", 2), 1u);
  ASSERT_EQ(watch::HashMod("job2", 2), 0u);
  FakeClock clock;
  TrainingLogsOptions o;
  o.bindings = {*ParseLogBinding("job1/run1=" + tmp.Sub("a.log")),
                *ParseLogBinding("job2/run1=" + tmp.Sub("b.log"))};
  o.shard = watch::Shard(1, 2);
  TrainingLogs logs(o, clock);
  EXPECT_EQ(logs.runs(), 1u);
  std::vector<LogUpdate> u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].key.training_job, "job1");
  EXPECT_EQ(u[0].training.last_step, 3);
  EXPECT_EQ(logs.LogPathOf({"job2", "run1"}), "");
  // Unsharded, both are followed.
  o.shard = watch::Shard();
  TrainingLogs all(o, clock);
  EXPECT_EQ(all.runs(), 2u);
  EXPECT_EQ(all.Poll().size(), 2u);
}

TEST(TrainingLogsTest, PlainFileAppliesOnlyWhileOneRunIsWatched) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  WriteFile(tmp.Sub("train.log"), StepLine(3, 1.0));
  FakeClock clock;
  TrainingLogsOptions o;
  o.bindings = {*ParseLogBinding(tmp.Sub("train.log"))};
  {
    TrainingLogs one(o, clock);
    one.ObserveRuns({Loc(root, "jobA", "run1")});
    one.Poll();
    EXPECT_EQ(one.LogPathOf({"jobA", "run1"}), tmp.Sub("train.log"));
  }
  TrainingLogs two(o, clock);
  two.ObserveRuns({Loc(root, "jobA", "run1"), Loc(root, "jobA", "run2")});
  EXPECT_TRUE(two.Poll().empty());
  EXPECT_EQ(two.LogPathOf({"jobA", "run1"}), "");
}

TEST(TrainingLogsTest, ReportsFiguresProfileStepsParseErrorsAndOnlyChanges) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  const std::string log = root + "/jobA.log";
  FakeClock clock;
  TrainingLogs logs({}, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  WriteFile(log,
            "Config param profiler: xplane\nConfig param skip_first_n_steps_for_profiler: 5\n"
            "Config param profiler_steps: 2\n");
  for (int s = 0; s < 12; ++s) Append(log, StepLine(s, s == 0 ? 30.0 : (s == 7 ? 1.9 : 0.75)));
  Append(log, "completed step: oops\n");
  Append(log, "completed step: 12, seconds: 0.7");  // torn: not read yet
  std::vector<LogUpdate> u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].training.last_step, 11);
  EXPECT_EQ(u[0].training.steady_step_seconds, 0.75);
  EXPECT_EQ(u[0].training.tflops_per_device, 100.0);
  EXPECT_EQ(u[0].training.last_step_unix, ToUnixSeconds(clock.Now()));
  EXPECT_EQ(u[0].profile_steps, 2);
  EXPECT_EQ(u[0].new_parse_errors, 1u);
  // Nothing new: no update.
  EXPECT_TRUE(logs.Poll().empty());
  Append(log, "5, loss: 2.0\n");
  u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].training.last_step, 12);
  EXPECT_EQ(u[0].training.last_step_seconds, 0.75);
  EXPECT_EQ(u[0].training.loss, 2.0);
  EXPECT_EQ(u[0].new_parse_errors, 0u);
}

// A log last written a month ago (what a restart reads from its start): its
// step time and activity are the file's modification time, not the read.
TEST(TrainingLogsTest, OldLogLinesAreDatedByTheFilesModificationTime) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  const std::string log = root + "/jobA.log";
  FakeClock clock(std::chrono::system_clock::now());
  TrainingLogs logs({}, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  WriteFile(log, StepLine(1, 0.75) + StepLine(2, 0.75));
  std::filesystem::last_write_time(
      log, std::filesystem::file_time_type::clock::now() - std::chrono::hours(24 * 30));
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  const double mtime = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9;
  std::vector<LogUpdate> u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].training.last_step, 2);
  ASSERT_TRUE(u[0].training.last_step_unix.has_value());
  EXPECT_NEAR(*u[0].training.last_step_unix, mtime, 1e-6);
  ASSERT_TRUE(u[0].written_unix.has_value());
  EXPECT_NEAR(*u[0].written_unix, mtime, 1e-6);
  EXPECT_LT(*u[0].written_unix, ToUnixSeconds(clock.Now()) - 29 * 86400.0);

  // The log grows again: lines written now are dated now (the clock caps the
  // modification time).
  Append(log, StepLine(3, 0.75));
  u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].training.last_step, 3);
  EXPECT_EQ(u[0].written_unix, ToUnixSeconds(clock.Now()));
  EXPECT_EQ(u[0].training.last_step_unix, ToUnixSeconds(clock.Now()));
}

TEST(TrainingLogsTest, FlagMismatchWithLogIsWarnedOnce) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  FakeClock clock;
  TrainingLogsOptions o;
  o.step_time.overrides.profiler_steps = 5;
  TrainingLogs logs(o, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  WriteFile(root + "/jobA.log", "Config param profiler_steps: 3\n" + StepLine(0, 9.0));
  std::vector<LogUpdate> u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].profile_steps, 5);  // the flag wins
  EXPECT_EQ(u[0].new_warnings.size(), 1u);
  Append(root + "/jobA.log", StepLine(1, 9.0));
  u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_TRUE(u[0].new_warnings.empty());
}

TEST(TrainingLogsTest, BinaryGarbageLogBreaksNothing) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  std::string garbage;
  for (int i = 0; i < 200000; ++i) garbage += static_cast<char>((i * 7919) % 256);
  WriteFile(root + "/jobA.log", garbage + "\ncompleted step: \xff\xfe\n" + StepLine(2, 0.5));
  FakeClock clock;
  TrainingLogs logs({}, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  std::vector<LogUpdate> u;
  for (int i = 0; i < 5 && (u.empty() || !u.back().training.last_step); ++i) {
    auto more = logs.Poll();
    u.insert(u.end(), more.begin(), more.end());
  }
  ASSERT_FALSE(u.empty());
  EXPECT_EQ(u.back().training.last_step, 2);
}

TEST(ChooseStepTimeTest, LogThenTraceThenConfigThenNothing) {
  snapshot::RunState rs;
  rs.has_window = true;
  EXPECT_FALSE(ChooseStepTime(rs, std::nullopt));
  EXPECT_FALSE(rs.step_seconds.has_value());
  EXPECT_EQ(rs.step_source, "");
  EXPECT_TRUE(ChooseStepTime(rs, 0.9));
  EXPECT_EQ(rs.step_seconds, 0.9);
  EXPECT_EQ(rs.step_source, "config");
  rs.training.steady_step_seconds = 0.8;
  EXPECT_TRUE(ChooseStepTime(rs, 0.9));
  EXPECT_EQ(rs.step_seconds, 0.8);
  EXPECT_EQ(rs.step_source, "log");
  EXPECT_FALSE(ChooseStepTime(rs, 0.9));
  rs.training.steady_step_seconds.reset();
  EXPECT_TRUE(ChooseStepTime(rs, std::nullopt));
  EXPECT_FALSE(rs.step_seconds.has_value());
}

// A placed window's own step time wins over the log's live steady time.
TEST(ChooseStepTimeTest, PlacedWindowUsesItsOwnPeriod) {
  snapshot::RunState rs;
  rs.has_window = true;
  rs.training.steady_step_seconds = 0.139;
  rs.window_log.bound = true;
  rs.window_log.seconds = 0.1;
  EXPECT_TRUE(ChooseStepTime(rs, std::nullopt));
  EXPECT_EQ(rs.step_seconds, 0.1);
  EXPECT_EQ(rs.step_source, "log");
  rs.window_log.seconds.reset();  // no steady step around it yet: the live time
  EXPECT_TRUE(ChooseStepTime(rs, std::nullopt));
  EXPECT_EQ(rs.step_seconds, 0.139);
}

// UpdateWindowSteps places a window only once its log is read to the end,
// at the latest profile the log reached; it fills the step time until it is
// settled and leaves it alone afterwards.
TEST(TrainingLogsTest, WindowIsPlacedInItsLogAndSettles) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  const std::string log = root + "/jobA.log";
  FakeClock clock;
  TrainingLogsOptions o;
  o.tailer.max_line_bytes = 128;  // a few lines per poll: catching up
  o.tailer.chunk_bytes = 64;
  o.tailer.max_bytes_per_poll = 320;
  TrainingLogs logs(o, clock);
  const snapshot::RunKey key{"jobA", "run1"};
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  WriteFile(log,
            "Config param profiler: xplane\nConfig param skip_first_n_steps_for_profiler: 5\n"
            "Config param profiler_steps: 2\n");
  for (int s = 0; s < 9; ++s) Append(log, StepLine(s, s == 0 ? 30.0 : (s == 7 ? 1.9 : 0.75)));
  snapshot::WindowLogSteps w;
  EXPECT_FALSE(logs.UpdateWindowSteps(key, w)) << "no log followed yet";
  logs.Poll();
  ASSERT_TRUE(logs.behind());
  EXPECT_FALSE(logs.UpdateWindowSteps(key, w)) << "log still catching up";
  EXPECT_FALSE(w.bound);
  while (logs.behind()) logs.Poll();
  EXPECT_TRUE(logs.UpdateWindowSteps(key, w));
  EXPECT_TRUE(w.bound);
  EXPECT_TRUE(w.located);
  EXPECT_EQ(w.first_step, 5);
  EXPECT_EQ(w.last_step, 6);
  EXPECT_EQ(w.seconds, 0.75);  // step 8 (0..4 warm-up, 7 write-back)
  EXPECT_EQ(w.steps, 1);
  EXPECT_FALSE(w.settled);
  for (int s = 9; s < 11; ++s) Append(log, StepLine(s, 0.75));
  do {
    logs.Poll();
  } while (logs.behind());
  EXPECT_TRUE(logs.UpdateWindowSteps(key, w));
  EXPECT_TRUE(w.settled);
  EXPECT_EQ(w.steps, 3);
  for (int s = 11; s < 40; ++s) Append(log, StepLine(s, 2.5));
  do {
    logs.Poll();
  } while (logs.behind());
  EXPECT_FALSE(logs.UpdateWindowSteps(key, w));
  EXPECT_EQ(w.seconds, 0.75);
}

// Issue 47: a log found by the globs is read only when the opened file
// lies under a root (options.confine_to, updated by SetConfinement): a
// link to a file elsewhere (jobB/run1/log.txt, jobC.run1.log) gives no
// figures, an error naming the path and never its content; an explicit
// --log binding elsewhere is read. Issue 60: a link as the log is the
// run's only by where it leads, so jobD's link to jobA's log is not read
// (before, jobA's log was exported as jobD's too), and without a
// confinement (--follow-symlinks) jobB's link is still not; a log reached
// through a directory link out of the roots, written by the run's owner,
// is read then.
TEST(TrainingLogsTest, GlobFoundLogsAreConfinedToTheRoots) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  const std::string secret = tmp.Sub("secret/private.log");
  WriteFile(secret, StepLine(7, 7.0));
  WriteFile(tmp.Sub("bound.log"), StepLine(5, 5.0));
  WriteFile(root + "/jobA/run1/log.txt", StepLine(1, 1.0));
  std::filesystem::create_directories(root + "/jobB/run1");
  std::filesystem::create_symlink(secret, root + "/jobB/run1/log.txt");
  std::filesystem::create_symlink(secret, root + "/jobC.run1.log");
  std::filesystem::create_directories(root + "/jobD/run1");
  std::filesystem::create_symlink(root + "/jobA/run1/log.txt", root + "/jobD/run1/log.txt");
  FakeClock clock;
  TrainingLogsOptions o;
  o.bindings = {*ParseLogBinding("jobE/run1=" + tmp.Sub("bound.log"))};
  o.confine_to = read::Confinement{};  // nothing until the first scan
  TrainingLogs logs(o, clock);
  const std::vector<RunLocation> runs = {Loc(root, "jobA", "run1"), Loc(root, "jobB", "run1"),
                                         Loc(root, "jobC", "run1"), Loc(root, "jobD", "run1")};
  logs.ObserveRuns(runs);
  auto steps = [](const std::vector<LogUpdate>& u) {
    std::map<std::string, int64_t> out;
    for (const LogUpdate& x : u) out[x.key.training_job] = x.training.last_step.value_or(-1);
    return out;
  };
  // Before any scan only the bound log is read.
  EXPECT_EQ(steps(logs.Poll()), (std::map<std::string, int64_t>{{"jobE", 5}}));
  logs.SetConfinement({std::filesystem::canonical(root).string()});
  EXPECT_EQ(steps(logs.Poll()), (std::map<std::string, int64_t>{{"jobA", 1}}));
  EXPECT_EQ(steps(logs.Poll()), (std::map<std::string, int64_t>{}));
  // jobB's, jobC's and jobD's links, each once.
  EXPECT_EQ(logs.TakeRefusedLogs(), (std::map<watch::Owner, size_t>{{getuid(), 3}}));

  WriteFile(tmp.Sub("elsewhere/log"), StepLine(8, 8.0));
  std::filesystem::create_directories(root + "/jobF/run1");
  std::filesystem::create_directory_symlink(tmp.Sub("elsewhere"), root + "/jobF/artifact");
  TrainingLogsOptions open;  // --follow-symlinks
  TrainingLogs anywhere(open, clock);
  anywhere.ObserveRuns({Loc(root, "jobB", "run1"), Loc(root, "jobF", "run1")});
  EXPECT_EQ(steps(anywhere.Poll()), (std::map<std::string, int64_t>{{"jobF", 8}}));
}

// This process's read bytes so far (/proc/self/io rchar).
uint64_t ReadBytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "rchar:") return value;
  }
  ADD_FAILURE() << "no rchar in /proc/self/io";
  return 0;
}

// Issue 47: each log reads at most max_bytes_per_scan per scan_period,
// its polls together; behind() asks for more only while budget is left.
// A 16 GiB sparse log reads 4 MiB per period (plus the tailer's 4 KiB
// fingerprint checks), not to its end.
TEST(TrainingLogsTest, EachLogReadsABoundedBudgetPerScanPeriod) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  const std::string log = root + "/jobA.log";
  WriteFile(log, StepLine(1, 1.0));
  std::filesystem::resize_file(log, uint64_t{16} << 30);
  FakeClock clock;
  TrainingLogsOptions o;
  o.tailer.max_bytes_per_poll = 1 << 20;
  o.max_bytes_per_scan = 4 << 20;
  o.scan_period = std::chrono::seconds(10);
  TrainingLogs logs(o, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  auto polls_until_idle = [&] {
    int polls = 0;
    do {
      logs.Poll();
      ++polls;
    } while (logs.behind() && polls < 100);
    return polls;
  };
  uint64_t before = ReadBytes();
  EXPECT_EQ(polls_until_idle(), 4);  // four 1 MiB polls, then the budget is spent
  logs.Poll();                       // nothing more this period
  clock.Advance(std::chrono::seconds(9));
  logs.Poll();
  EXPECT_FALSE(logs.behind());
  uint64_t read = ReadBytes() - before;
  EXPECT_GE(read, 4u << 20);
  EXPECT_LE(read, (4u << 20) + (64u << 10));
  clock.Advance(std::chrono::seconds(1));  // the next period: 4 MiB more
  before = ReadBytes();
  EXPECT_EQ(polls_until_idle(), 4);
  read = ReadBytes() - before;
  EXPECT_GE(read, 4u << 20);
  EXPECT_LE(read, (4u << 20) + (64u << 10));
}

// A warning about a log's line names the line and never quotes it (issue
// 47: the daemon prints warnings in its own log).
TEST(TrainingLogsTest, WarningsNameTheLineNotItsText) {
  TempDir tmp;
  const std::string root = tmp.Sub("jobs");
  FakeClock clock;
  TrainingLogs logs({}, clock);
  logs.ObserveRuns({Loc(root, "jobA", "run1")});
  WriteFile(root + "/jobA.log", StepLine(1, 1.0) +
                                    "\nConfig param profiler_steps: password=hunter2\n" +
                                    "Config param profile_periodically_period: 9999999999999\n" +
                                    "Config param profiler_steps: hunter3\n");
  std::vector<LogUpdate> u = logs.Poll();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].new_warnings,
            (std::vector<std::string>{
                "line 3: config param profiler_steps is not an integer; ignored",
                "line 4: config param profile_periodically_period is out of range (beyond "
                "+-1e12); ignored"}));
}

}  // namespace
}  // namespace profwatch::pipeline
