// End to end through the real `profwatch serve` binary (issue 4): a MaxText
// log growing line by line plus a landing window yield the step time from the
// log and the step - kernel gap; no source yields step_source_missing; the
// --history file feeds `profwatch compare --history`.
//
// The traces are hand-written JAX traces on one GPU with exact kernel
// durations, so every expected value below is computed by hand in a comment.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/serve_harness.h"
#include "testing/test_util.h"

namespace profwatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::TempDir;
using testing::WriteFile;

// --- traces -----------------------------------------------------------------

struct Kernel {
  int gpu = 0;
  int stream = 16;
  int64_t ts_us = 0;
  int64_t dur_us = 0;
};

// A JAX/XLA trace holding exactly `kernels` (GEMM-named) on their GPUs.
std::string JaxTrace(int gpus, const std::vector<Kernel>& kernels) {
  std::ostringstream out;
  out << R"j({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)j";
  for (int g = 0; g < gpus; ++g) {
    out << R"j({"ph":"M","pid":)j" << g + 1
        << R"j(,"name":"process_name","args":{"name":"/device:GPU:)j" << g << R"j("}},)j";
    for (int s : {16, 17}) {
      out << R"j({"ph":"M","pid":)j" << g + 1 << R"j(,"tid":)j" << s
          << R"j(,"name":"thread_name","args":{"name":"Stream #)j" << s << R"j((Kernel)"}},)j";
    }
  }
  for (const Kernel& k : kernels) {
    out << R"j({"ph":"X","pid":)j" << k.gpu + 1 << R"j(,"tid":)j" << k.stream << R"j(,"ts":)j"
        << k.ts_us << R"j(,"dur":)j" << k.dur_us
        << R"j(,"name":"Cijk_Alik_Bljk_HHS_BH_MT128x128x64_gemm","args":{}},)j";
  }
  out << "{}]}";
  return out.str();
}

void Append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

std::string StepLine(int step, const std::string& seconds) {
  return "I1122 03:00:00 train.py:500] completed step: " + std::to_string(step) +
         ", seconds: " + seconds +
         ", TFLOP/s/device: 150.000, Tokens/s/device: 3000.000, total_weights: 65536, loss: "
         "4.000\n";
}

std::string ConfigLines(int profiler_steps) {
  return "Config param profiler: xplane\nConfig param skip_first_n_steps_for_profiler: 5\n"
         "Config param profiler_steps: " +
         std::to_string(profiler_steps) + "\n";
}

using testing::HttpGet;
using testing::Labels;
using testing::ProfileDir;
using testing::Sample;
using testing::Serve;

// Settle and rescan fast, then `more`.
std::vector<std::string> FastFlags(const std::string& jobs,
                                   std::initializer_list<std::string> more = {}) {
  std::vector<std::string> flags = {"--watch",         jobs,   "--settle", "500ms",
                                    "--poll-interval", "200ms"};
  flags.insert(flags.end(), more);
  return flags;
}

std::function<bool(const std::string&)> Has(const std::string& name, const Labels& labels) {
  return [=](const std::string& m) { return Sample(m, name, labels).has_value(); };
}

std::function<bool(const std::string&)> Equals(const std::string& name, const Labels& labels,
                                               double value) {
  return [=](const std::string& m) {
    auto v = Sample(m, name, labels);
    return v && *v == value;
  };
}

std::vector<std::string> FileLines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// --- tests --------------------------------------------------------------------

// Positive gap. Log: profiler_steps=2, skip 5 -> steps 0..4 warm-up, 5-6
// profiled, 7 write-back, 8.. steady at 0.8 s. Trace: one GPU, one stream,
// two kernels of 0.5 s -> 1.0 s / (1 GPU x 2 steps, divisor from the log) =
// 0.5 s per GPU per step; gap = 0.8 - 0.5 = +0.3 s, ratio 0.375.
TEST(ServeStepsTest, GrowingMaxTextLogGivesLogStepTimeAndPositiveGap) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string log = jobs + "/jobA.log";
  WriteFile(log, "");
  std::vector<std::string> flags =
      FastFlags(jobs, {"--log", "jobA/run1=" + log, "--history", tmp.Sub("h.jsonl")});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels run = {{"training_job", "jobA"}, {"run", "run1"}};

  // The log grows line by line before any window exists: the run is
  // exported from its log alone.
  Append(log, ConfigLines(2));
  Append(log, StepLine(0, "42.000"));  // compilation
  for (int s = 1; s <= 4; ++s) {
    Append(log, StepLine(s, "0.800"));
    ASSERT_TRUE(serve.WaitFor(Equals("profwatch_training_step", run, s))) << serve.Log();
  }
  for (int s = 5; s <= 6; ++s) Append(log, StepLine(s, "0.950"));  // profiled
  Append(log, StepLine(7, "1.300"));                               // write-back
  for (int s = 8; s <= 11; ++s) Append(log, StepLine(s, "0.800"));
  auto m = serve.WaitFor(Equals("profwatch_training_step", run, 11));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_training_steady_step_seconds", run), 0.8) << *m;
  EXPECT_FALSE(Sample(*m, "profwatch_step_seconds", run).has_value()) << "no window yet";

  // A torn last line: the daemon must not take the prefix for a line.
  Append(log, "completed step: 12, seconds: 0.8");
  m = serve.MetricsAfterScans(2);
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_training_step", run), 11) << *m;
  Append(log,
         "125, TFLOP/s/device: 123.500, MFU: 40.00%, Tokens/s/device: 2900.000, loss: 2.250\n");
  m = serve.WaitFor(Equals("profwatch_training_step", run, 12));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_training_step_seconds", run), 0.8125) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_training_tflops_per_device", run), 123.5) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_training_mfu_ratio", run), 0.4) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_training_loss", run), 2.25) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_training_tokens_per_second_per_device", run), 2900) << *m;
  // Steady steps 8..12: 0.8 x4, 0.8125 -> median 0.8.
  EXPECT_EQ(Sample(*m, "profwatch_training_steady_step_seconds", run), 0.8) << *m;

  // The window lands.
  WriteFile(ProfileDir(jobs, "jobA", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(1, {{0, 16, 100, 500000}, {0, 16, 600100, 500000}})));
  m = serve.WaitFor(Has("profwatch_step_minus_kernel_seconds", run));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_step_seconds", {{"run", "run1"}, {"source", "log"}}), 0.8) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_seconds", run), 0.3, 1e-12) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_ratio", run), 0.375, 1e-12) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_step_source_missing", run), 0) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_log_parse_errors_total"), 0) << *m;

  // A garbage step line is counted, nothing else changes.
  Append(log, "completed step: NaNaN, seconds: soon\n");
  m = serve.WaitFor(Equals("profwatch_log_parse_errors_total", {}, 1));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_seconds", run), 0.3, 1e-12) << *m;

  // --history: one line for the one analysed window.
  std::vector<std::string> lines = FileLines(tmp.Sub("h.jsonl"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(R"("schema":"profwatch.history.v1")"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(R"("window":"2024_03_01_12_00_00")"), std::string::npos) << lines[0];
  EXPECT_EQ(serve.Stop(), 0);
}

// With inotify, a growing training log or TensorBoard event file is read at
// once but does not rescan the watched tree (with many busy jobs that was up
// to four full scans a second); a landing window still does. The poll interval
// is an hour, so nothing else can trigger a scan or a log read.
TEST(ServeStepsTest, AppendsAreFollowedWithoutRescanningTheTree) {
  const int probe = inotify_init1(IN_CLOEXEC);
  if (probe < 0) GTEST_SKIP() << "inotify unavailable";
  close(probe);
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string run_dir = jobs + "/jobA/run1";
  fs::create_directories(run_dir + "/tensorboard");
  const std::string log = run_dir + "/train.log";
  const std::string events = run_dir + "/tensorboard/events.out.tfevents.1700000000.host";
  WriteFile(log, "");
  WriteFile(events, "");
  Serve serve(tmp, {"--watch", jobs, "--settle", "500ms", "--poll-interval", "1h", "--log",
                    "jobA/run1=" + log});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor(Equals("profwatch_scans_total", {}, 1));
  ASSERT_TRUE(m) << serve.Log();
  const std::optional<double> first_scan = Sample(*m, "profwatch_last_scan_timestamp_seconds");
  ASSERT_TRUE(first_scan) << *m;
  const Labels run = {{"training_job", "jobA"}, {"run", "run1"}};

  Append(log, ConfigLines(2));
  for (int s = 1; s <= 4; ++s) {
    Append(events, "a summary record");
    Append(log, StepLine(s, "0.800"));
    m = serve.WaitFor(Equals("profwatch_training_step", run, s));
    ASSERT_TRUE(m) << serve.Log();
    EXPECT_EQ(Sample(*m, "profwatch_scans_total"), 1) << *m;
  }
  EXPECT_EQ(Sample(*m, "profwatch_last_scan_timestamp_seconds"), first_scan) << *m;

  // A window lands: directory entries change, so the tree is scanned again.
  WriteFile(ProfileDir(jobs, "jobA", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(1, {{0, 16, 100, 500000}})));
  m = serve.WaitFor(Has("profwatch_window_gpus", run));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", run), 1) << *m;
  EXPECT_GE(Sample(*m, "profwatch_scans_total").value_or(0), 2) << *m;
  EXPECT_EQ(serve.Stop(), 0);
}

// A log already long when the daemon starts (a restart, or a run bound
// late) is read in 1 MiB budgets, one after another without waiting for the
// next poll. Sleeping a second between budgets, as before, would need a
// second per MiB of this log, longer than the test's deadline; back to back
// the reads are bounded by the disk and the parser alone. No inotify and an
// hour's poll interval, so nothing else wakes the loop.
TEST(ServeStepsTest, LongLogIsCaughtUpWithoutWaitingForPolls) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs + "/jobA/run1");
  const std::string log = tmp.Sub("train.log");
  constexpr int kLastStep = 329999;
  {
    std::ofstream out(log, std::ios::binary);
    out << ConfigLines(2);
    for (int s = 0; s <= kLastStep; ++s) out << StepLine(s, s % 2 == 0 ? "0.800" : "0.900");
  }
  ASSERT_GT(fs::file_size(log), 48u << 20);
  Serve serve(
      tmp, {"--watch", jobs, "--no-inotify", "--poll-interval", "1h", "--log", "jobA/run1=" + log});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  auto m = serve.WaitFor(Equals("profwatch_training_step", run, kLastStep), 45s);
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_scans_total"), 1) << *m;
  EXPECT_EQ(serve.Stop(), 0);
}

// Jobs that finished a month ago, met by a (re)started daemon: their window
// files and logs are a month old. A window older than --retention is not
// analysed, and reading an old log from its start is not activity either, so
// with --retention 1h such a run is not exported at all. Before, the read
// time counted and the log alone exported the run for another hour (again
// after every restart). jobNew, whose log is written now, shows that logs
// are read and exported meanwhile.
TEST(ServeStepsTest, OldLogReadAfterARestartDoesNotReviveItsRun) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const auto month_ago = fs::file_time_type::clock::now() - std::chrono::hours(24 * 30);
  for (const std::string job : {"jobOld", "jobNew"}) {
    const std::string trace =
        ProfileDir(jobs, job, "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz";
    WriteFile(trace, testing::Gzip(JaxTrace(1, {{0, 16, 100, 500000}})));
    const std::string log = jobs + "/" + job + ".log";
    WriteFile(log, ConfigLines(2));
    for (int s = 1; s <= 20; ++s) Append(log, StepLine(s, "0.800"));
    if (job == "jobOld") {
      fs::last_write_time(trace, month_ago);
      fs::last_write_time(log, month_ago);
    }
  }
  std::vector<std::string> flags = FastFlags(jobs, {"--retention", "1h"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor(Equals("profwatch_training_step", {{"training_job", "jobNew"}}, 20));
  ASSERT_TRUE(m) << serve.Log();
  // Both logs were found and read in the same poll.
  EXPECT_NE(serve.Log().find("training log found training_job=jobOld run=run1"), std::string::npos)
      << serve.Log();
  m = serve.WaitFor(Has("profwatch_window_gpus", {{"training_job", "jobNew"}}));
  ASSERT_TRUE(m) << serve.Log();
  m = serve.MetricsAfterScans(2);
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(m->find("training_job=\"jobOld\""), std::string::npos) << *m;
  EXPECT_EQ(serve.Log().find("window analysed training_job=jobOld"), std::string::npos);
  EXPECT_EQ(serve.Stop(), 0);
}

// Sets a file's modification (and access) time to `unix_seconds`.
void SetMtime(const std::string& path, int64_t unix_seconds) {
  struct timeval times[2] = {{static_cast<time_t>(unix_seconds), 0},
                             {static_cast<time_t>(unix_seconds), 0}};
  ASSERT_EQ(::utimes(path.c_str(), times), 0) << path;
}

// Liveness comes from the data (issue #29): three runs whose files were last
// written three days ago (inside --retention) are exported with
// profwatch_run_activity_timestamp_seconds = their newest file's mtime, not
// the time the daemon (started without --state) analysed or read them, and
// again so after a restart; a fresh log line moves it to that write.
// jobW: window (mtime t0) + log found by glob (t0 + 60); jobL: log only,
// bound by --log (t0 + 120); jobT: window only (t0 + 30).
TEST(ServeStepsTest, RunActivityIsTheNewestWriteNotTheAnalysisTime) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const int64_t t0 =
      std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::system_clock::now().time_since_epoch() - std::chrono::hours(72))
          .count();
  const std::string trace_w =
      ProfileDir(jobs, "jobW", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz";
  const std::string trace_t =
      ProfileDir(jobs, "jobT", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz";
  const std::string log_w = jobs + "/jobW.log";
  const std::string log_l = tmp.Sub("logs") + "/jobL.log";
  for (const std::string& trace : {trace_w, trace_t}) {
    WriteFile(trace, testing::Gzip(JaxTrace(1, {{0, 16, 100, 500000}})));
  }
  for (const std::string& log : {log_w, log_l}) {
    WriteFile(log, ConfigLines(2));
    for (int s = 1; s <= 20; ++s) Append(log, StepLine(s, "0.800"));
  }
  SetMtime(trace_w, t0);
  SetMtime(log_w, t0 + 60);
  SetMtime(log_l, t0 + 120);
  SetMtime(trace_t, t0 + 30);
  std::vector<std::string> flags =
      FastFlags(jobs, {"--retention", "30d", "--log", "jobL/run1=" + log_l});
  const Labels w = {{"training_job", "jobW"}, {"run", "run1"}};
  const Labels l = {{"training_job", "jobL"}, {"run", "run1"}};
  const Labels t = {{"training_job", "jobT"}, {"run", "run1"}};
  auto all_in = [&](const std::string& m) {
    return Sample(m, "profwatch_window_gpus", w) && Sample(m, "profwatch_window_gpus", t) &&
           Sample(m, "profwatch_training_step", w) == 20 &&
           Sample(m, "profwatch_training_step", l) == 20;
  };
  for (const std::string tag : {"first", "restart"}) {
    SCOPED_TRACE(tag);
    Serve serve(tmp, flags, tag);
    ASSERT_GT(serve.port(), 0) << serve.Log();
    auto m = serve.WaitFor(all_in);
    ASSERT_TRUE(m) << serve.Log();
    EXPECT_EQ(Sample(*m, "profwatch_run_activity_timestamp_seconds", w), t0 + 60) << *m;
    EXPECT_EQ(Sample(*m, "profwatch_run_activity_timestamp_seconds", l), t0 + 120) << *m;
    EXPECT_EQ(Sample(*m, "profwatch_run_activity_timestamp_seconds", t), t0 + 30) << *m;
    EXPECT_EQ(Sample(*m, "profwatch_training_last_step_timestamp_seconds", w), t0 + 60) << *m;
    EXPECT_EQ(Sample(*m, "profwatch_training_last_step_timestamp_seconds", l), t0 + 120) << *m;
    // The analysis time is now: it says when, not whether the run is live.
    EXPECT_GT(*Sample(*m, "profwatch_window_analyzed_timestamp_seconds", w), t0 + 71 * 3600) << *m;
    if (std::string(tag) == "first") {
      EXPECT_EQ(serve.Stop(), 0);
      continue;
    }
    // A new step line is written now: the run's activity follows it.
    Append(log_w, StepLine(21, "0.800"));
    m = serve.WaitFor([&](const std::string& text) {
      auto v = Sample(text, "profwatch_run_activity_timestamp_seconds", w);
      return v && *v > t0 + 71 * 3600;
    });
    ASSERT_TRUE(m) << serve.Log();
    EXPECT_EQ(Sample(*m, "profwatch_training_step", w), 21) << *m;
    EXPECT_EQ(Sample(*m, "profwatch_run_activity_timestamp_seconds", t), t0 + 30) << *m;
    EXPECT_EQ(serve.Stop(), 0);
  }
}

// One period per window (issue #29). Log: profiler_steps=3 from step 5,
// every 60 steps -> windows at steps 5-7 and 65-67. Window 1: three 66 ms
// kernels -> 0.066 s per GPU per step; the steps after it take 0.100 s ->
// gap 0.034 s. 29 slower steps (0.139 s) appended with no new profile move
// the live steady step time, not the window's gap (before, the gap became
// 0.073 s). Window 2: three 40 ms kernels; its own steps (0.053 s around
// steps 65-67) -> gap 0.013 s, and later steps leave it alone too.
TEST(ServeStepsTest, WindowStepTimeComesFromTheStepsAroundItsProfile) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string log = jobs + "/jobA.log";
  auto steps = [&](int first, int last, const std::string& seconds) {
    std::string text;
    for (int s = first; s <= last; ++s) {
      const bool profiled = (s >= 5 && s <= 7) || (s >= 65 && s <= 67);
      const bool write_back = s == 8 || s == 68;
      text += StepLine(s, s == 0 ? "40.000" : profiled ? "0.150" : write_back ? "0.200" : seconds);
    }
    Append(log, text);
  };
  WriteFile(log,
            "Config param profiler: xplane\nConfig param skip_first_n_steps_for_profiler: 5\n"
            "Config param profiler_steps: 3\nConfig param profile_periodically_period: 60\n");
  steps(0, 24, "0.100");
  const std::string profile = ProfileDir(jobs, "jobA", "run1");
  WriteFile(profile + "/2024_03_01_12_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(
                1, {{0, 16, 100, 66000}, {0, 16, 100100, 66000}, {0, 16, 200100, 66000}})));
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  const Labels log_source = {{"run", "run1"}, {"source", "log"}};
  auto m = serve.WaitFor([&](const std::string& text) {
    return Sample(text, "profwatch_training_step", run) == 24 &&
           Sample(text, "profwatch_step_seconds", log_source) == 0.1;
  });
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_seconds", run), 0.034, 1e-12) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_ratio", run), 0.34, 1e-12) << *m;

  steps(25, 53, "0.139");
  m = serve.WaitFor(Equals("profwatch_training_steady_step_seconds", run, 0.139));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_training_step", run), 53) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_step_seconds", log_source), 0.1) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_seconds", run), 0.034, 1e-12) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_ratio", run), 0.34, 1e-12) << *m;

  steps(54, 70, "0.053");
  ASSERT_TRUE(serve.WaitFor(Equals("profwatch_training_step", run, 70))) << serve.Log();
  WriteFile(profile + "/2024_03_01_13_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(
                1, {{0, 16, 100, 40000}, {0, 16, 100100, 40000}, {0, 16, 200100, 40000}})));
  m = serve.WaitFor([](const std::string& t) {
    return testing::WindowShown(t, "2024_03_01_13_00_00").has_value();
  });
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_step_seconds", log_source), 0.053) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_seconds", run), 0.013, 1e-12) << *m;

  // Three steady steps after the profile settle it; slower ones after that
  // do not move it.
  steps(71, 80, "0.053");
  steps(81, 110, "0.300");
  m = serve.WaitFor(Equals("profwatch_training_steady_step_seconds", run, 0.3));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_step_seconds", log_source), 0.053) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_seconds", run), 0.013, 1e-12) << *m;
  EXPECT_EQ(serve.Stop(), 0);
}

// Negative gap (healthy overlap), log found by the default `<jobs_root>/<job>.log`
// glob. Trace: one GPU, streams 16 and 17 each run three 0.4 s kernels that
// overlap -> summed kernel 2.4 s / (1 GPU x 3 steps) = 0.8 s per GPU per step;
// steady step 0.6 s -> gap = 0.6 - 0.8 = -0.2 s, ratio -1/3.
TEST(ServeStepsTest, OverlappingStreamsGiveNegativeGapWithDiscoveredLog) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string log = jobs + "/jobB.log";
  std::vector<Kernel> kernels;
  for (int i = 0; i < 3; ++i) {
    kernels.push_back({0, 16, 100 + i * 500000, 400000});
    kernels.push_back({0, 17, 200 + i * 500000, 400000});
  }
  WriteFile(ProfileDir(jobs, "jobB", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(1, kernels)));
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels run = {{"training_job", "jobB"}, {"run", "run1"}};
  // The window is analysed before any log exists: no step source yet.
  auto m = serve.WaitFor(Has("profwatch_window_gpus", run));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_step_source_missing", run), 1) << *m;
  // The log appears late and grows.
  WriteFile(log, ConfigLines(3));
  for (int s = 0; s <= 14; ++s) {
    Append(log, StepLine(s, s == 0 ? "30.000" : (s == 8 ? "0.950" : "0.600")));
  }
  m = serve.WaitFor(Has("profwatch_step_minus_kernel_seconds", run));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_step_seconds", {{"run", "run1"}, {"source", "log"}}), 0.6) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_seconds", run), -0.2, 1e-12) << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_ratio", run), -1.0 / 3, 1e-12) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_step_source_missing", run), 0) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_training_step", run), 14) << *m;
  EXPECT_NE(serve.Log().find("training log found training_job=jobB run=run1 path=" + log),
            std::string::npos)
      << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// No log, no in-trace markers, no --step-time: said, not invented; with
// --step-time the config source is used. Trace: 3 x 0.2 s kernels / 3 steps
// = 0.2 s per GPU per step; --step-time 0.9 -> gap 0.7 s.
TEST(ServeStepsTest, NoStepSourceIsMissingAndStepTimeFlagIsConfigSource) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteFile(ProfileDir(jobs, "jobC", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(
                1, {{0, 16, 100, 200000}, {0, 16, 300100, 200000}, {0, 16, 600100, 200000}})));
  const Labels run = {{"training_job", "jobC"}, {"run", "run1"}};
  {
    Serve serve(tmp, FastFlags(jobs), "none");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    auto m = serve.WaitFor(Has("profwatch_step_source_missing", run));
    ASSERT_TRUE(m) << serve.Log();
    EXPECT_EQ(Sample(*m, "profwatch_step_source_missing", run), 1) << *m;
    EXPECT_FALSE(Sample(*m, "profwatch_step_minus_kernel_seconds", run).has_value()) << *m;
    EXPECT_NE(serve.Log().find("no step-time source training_job=jobC run=run1"), std::string::npos)
        << serve.Log();
  }
  std::vector<std::string> flags = FastFlags(jobs, {"--step-time", "0.9"});
  Serve serve(tmp, flags, "config");
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor(Has("profwatch_step_minus_kernel_seconds", run));
  ASSERT_TRUE(m) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_step_seconds", {{"run", "run1"}, {"source", "config"}}), 0.9)
      << *m;
  EXPECT_NEAR(*Sample(*m, "profwatch_step_minus_kernel_seconds", run), 0.7, 1e-12) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_step_source_missing", run), 0) << *m;
}

// --history with a 1-byte limit rotates on every window (FILE = latest,
// FILE.1 = the one before); compare --history reads both by JOB/RUN.
// runA: two files with one GPU each (1-GPU/proc); runB and runC: one file
// with two GPUs (1-node/proc). Kernels: 0.3 s each, one per GPU per step x 3
// -> 0.3 s per GPU per step everywhere; --step-time 0.5 -> gap 0.2.
TEST(ServeStepsTest, HistoryRotatesAndFeedsCompareByRunName) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string history = tmp.Sub("history.jsonl");
  std::vector<std::string> flags =
      FastFlags(jobs, {"--history", history, "--history-max-bytes", "1", "--step-time", "0.5"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto per_gpu = [](int gpu) {
    return std::vector<Kernel>{
        {gpu, 16, 100, 300000}, {gpu, 16, 400100, 300000}, {gpu, 16, 800100, 300000}};
  };
  std::vector<Kernel> two_gpus = per_gpu(0);
  for (const Kernel& k : per_gpu(1)) two_gpus.push_back(k);
  auto analysed = [&](double n) {
    return Equals("profwatch_windows_analyzed_total", {{"result", "ok"}}, n);
  };

  const std::string a = ProfileDir(jobs, "jobH", "runA") + "/2024_03_01_12_00_00/";
  WriteFile(a + "h0.trace.json.gz", testing::Gzip(JaxTrace(1, per_gpu(0))));
  WriteFile(a + "h1.trace.json.gz", testing::Gzip(JaxTrace(1, per_gpu(0))));
  ASSERT_TRUE(serve.WaitFor(analysed(1))) << serve.Log();
  WriteFile(ProfileDir(jobs, "jobH", "runB") + "/2024_03_01_12_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(2, two_gpus)));
  ASSERT_TRUE(serve.WaitFor(analysed(2))) << serve.Log();
  ASSERT_EQ(FileLines(history + ".1").size(), 1u);
  ASSERT_EQ(FileLines(history).size(), 1u);

  const std::string compare =
      "'" + testing::BinaryPath("profwatch") + "' compare --history '" + history + "' ";
  testing::CommandResult r = testing::RunCommand(compare + "jobH/runA jobH/runB");
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("launcher mode differs"), std::string::npos) << r.err;
  r = testing::RunCommand(compare + "--force jobH/runA jobH/runB");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("launcher mode"), std::string::npos) << r.out;

  WriteFile(ProfileDir(jobs, "jobH", "runC") + "/2024_03_01_12_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(2, two_gpus)));
  ASSERT_TRUE(serve.WaitFor(analysed(3))) << serve.Log();
  r = testing::RunCommand(compare + "--format json jobH/runB jobH/runC");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* want : {R"("total kernel": 0.3)", R"("step": 0.5)", R"("GPUs": 2.0)",
                           R"("launcher mode": "1-node/proc")", R"("step_source": "config")"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
  EXPECT_NE(r.out.find(R"("step - total kernel": 0.2)"), std::string::npos) << r.out;
  r = testing::RunCommand(compare + "jobH/runB jobH/runC");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("total kernel"), std::string::npos) << r.out;
  // A history entry and a path side by side (the path is analysed fresh and
  // has no step time of its own).
  r = testing::RunCommand(compare + "--format json jobH/runC '" + ProfileDir(jobs, "jobH", "runB") +
                          "/2024_03_01_12_00_00'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const size_t first_total = r.out.find(R"("total kernel": 0.3)");
  ASSERT_NE(first_total, std::string::npos) << r.out;
  EXPECT_NE(r.out.rfind(R"("total kernel": 0.3)"), first_total) << "both variants\n" << r.out;
  EXPECT_NE(r.out.find(R"("step": null)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("step": 0.5)"), std::string::npos) << r.out;
  // runA's entry was rotated away (two rotations since): a clear error.
  r = testing::RunCommand(compare + "jobH/runA jobH/runC");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("no window of jobH/runA in history"), std::string::npos) << r.err;
  EXPECT_EQ(serve.Stop(), 0);
}

// --- issue 47: nothing read from outside the roots ----------------------------

// A one-GPU window of jobs/<job>/run1 (its files written now).
void WriteWindow(const std::string& jobs, const std::string& job) {
  WriteFile(ProfileDir(jobs, job, "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz",
            testing::Gzip(JaxTrace(1, {{0, 16, 100, 500000}})));
}

// `name` from /proc/<pid>/io: rchar counts every byte the process read.
uint64_t ProcIo(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == name + ":") return value;
  }
  ADD_FAILURE() << "no " << name << " in /proc/" << pid << "/io";
  return 0;
}

// True when one of the process's open descriptors names a path containing `part`.
bool HasOpenFile(pid_t pid, const std::string& part) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code lec;
    const fs::path target = fs::read_symlink(e.path(), lec);
    if (!lec && target.string().find(part) != std::string::npos) return true;
  }
  return false;
}

// A user who can write under the root links a private file as a run's log:
// `<job>/<run>/log.txt` (jobB) and `<jobs_root>/<job>.<run>.log` (jobC).
// Neither is read (the opened file's real path lies outside the roots, as
// for traces): no profwatch_training_* for those runs, and nothing of the
// file reaches the daemon's output. Before, both were exported and the odd
// config line's value was echoed in a warning. jobA's own log, inside the
// root, is read; its unreadable config value is named by file and line,
// never quoted.
TEST(ServeStepsTest, LogLinkLeadingOutOfTheRootsIsNotRead) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string kSecret = "SECRET-7f3a9c";
  const std::string secret = tmp.Sub("secret") + "/private.log";
  WriteFile(secret, ConfigLines(2) + "Config param profiler_steps: " + kSecret + "\n");
  for (int s = 1; s <= 20; ++s) Append(secret, StepLine(s, "0.700"));
  Append(secret, "password: " + kSecret + "\n");
  for (const std::string job : {"jobA", "jobB", "jobC"}) WriteWindow(jobs, job);
  const std::string own = jobs + "/jobA/run1/log.txt";
  WriteFile(own, ConfigLines(2) + "Config param profile_periodically_period: A-CONTENT-4e1d\n");
  for (int s = 1; s <= 20; ++s) Append(own, StepLine(s, "0.800"));
  fs::create_symlink(secret, jobs + "/jobB/run1/log.txt");
  fs::create_symlink(secret, jobs + "/jobC.run1.log");

  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor(Equals("profwatch_training_step", {{"training_job", "jobA"}}, 20)))
      << serve.Log();
  ASSERT_TRUE(serve.WaitForLog("training_job=jobB run=run1")) << serve.Log();
  ASSERT_TRUE(serve.WaitForLog("training_job=jobC run=run1")) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return Sample(t, "profwatch_window_gpus", {{"training_job", "jobB"}}) &&
           Sample(t, "profwatch_window_gpus", {{"training_job", "jobC"}});
  });
  ASSERT_TRUE(m) << serve.Log();
  m = serve.MetricsAfterScans(2);
  ASSERT_TRUE(m) << serve.Log();
  for (const std::string job : {"jobB", "jobC"}) {
    std::istringstream lines(*m);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.starts_with("profwatch_training_")) {
        EXPECT_EQ(line.find("training_job=\"" + job + "\""), std::string::npos) << line;
      }
    }
  }
  const std::string log = serve.Log();
  EXPECT_NE(log.find("outside the watched roots"), std::string::npos) << log;
  EXPECT_EQ(log.find(kSecret), std::string::npos) << log;
  EXPECT_EQ(log.find("A-CONTENT"), std::string::npos) << log;
  EXPECT_NE(log.find("line 4: config param profile_periodically_period"), std::string::npos) << log;
  EXPECT_EQ(serve.Stop(), 0);
}

// A 200 GB sparse file as a run's log: before, it was read at full speed
// to its end (minutes of a core), and unlinking it did not stop that (the
// open file was kept and drained). Now a log reads at most
// --log-max-bytes-per-scan (default 64 MiB) per --poll-interval, and a log
// whose path goes away is closed after at most one read budget. An hour's
// poll interval: only the first scan's budget is spent; the unlink is
// noticed through its directory's inotify hint.
TEST(ServeStepsTest, SparseLogIsReadInBoundedBudgetsAndClosedWhenUnlinked) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteWindow(jobs, "jobA");
  const std::string log = jobs + "/jobA/run1/log.txt";
  {
    std::ofstream out(log, std::ios::binary);
    out << ConfigLines(2) << StepLine(1, "0.800");
  }
  fs::resize_file(log, uint64_t{200} << 30);
  Serve serve(tmp, {"--watch", jobs, "--settle", "500ms", "--poll-interval", "1h"});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitForLog("training log found training_job=jobA")) << serve.Log();
  // Reading stops: rchar stays put between two looks (bounded wait).
  auto settled = [&] {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    uint64_t last = ProcIo(serve.pid(), "rchar");
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(300ms);
      const uint64_t now = ProcIo(serve.pid(), "rchar");
      if (now == last) return std::optional<uint64_t>(now);
      last = now;
    }
    return std::optional<uint64_t>();
  };
  // First the budget is read (bounded wait), so two equal looks below mean
  // the reading stopped, not that it has not begun.
  const auto started = std::chrono::steady_clock::now() + 30s;
  while (ProcIo(serve.pid(), "rchar") < (64u << 20) && std::chrono::steady_clock::now() < started) {
    std::this_thread::sleep_for(50ms);
  }
  const std::optional<uint64_t> read = settled();
  ASSERT_TRUE(read) << "the daemon kept reading the log\n" << serve.Log();
  // One scan's budget of the log, plus the trace, its libraries and /proc.
  EXPECT_LE(*read, (64u << 20) + (8u << 20));
  EXPECT_GE(*read, 64u << 20);
  ASSERT_TRUE(HasOpenFile(serve.pid(), "log.txt"));
  fs::remove(log);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (HasOpenFile(serve.pid(), "log.txt") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_FALSE(HasOpenFile(serve.pid(), "log.txt")) << serve.Log();
  const std::optional<uint64_t> after = settled();
  ASSERT_TRUE(after) << serve.Log();
  // At most one poll's budget (1 MiB) drained before the close.
  EXPECT_LE(*after - *read, (1u << 20) + (1u << 20));
  EXPECT_EQ(serve.Stop(), 0);
}

// Directory names are anyone's bytes: a job directory named with a newline
// and a fake log line after it, one with invalid UTF-8, and one named like
// more fields (issue 60). The text log stays one line per message, each
// value one logfmt field (quoted, control characters escaped), and every
// line of the JSON log is valid JSON (valid UTF-8) whose members are the
// fields. Before, the newline was written raw (a forged line), the JSON log
// held the raw bytes, and the fields of a name were read as fields.
TEST(ServeStepsTest, DirectoryNamesCannotForgeLogLines) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string forged = "2099-01-01T00:00:00.000Z error forged";
  const std::string evil = "jobX\n" + forged;
  const std::string bad_utf8 = "jobY\xff\xfe";
  const std::string fields = "evil reason=crashed training_job=victim";
  for (const std::string& job : {evil, bad_utf8, fields}) {
    WriteWindow(jobs, job);
    WriteFile(jobs + "/" + job + "/run1/log.txt", ConfigLines(2) + StepLine(1, "0.800"));
  }
  {
    Serve serve(tmp, FastFlags(jobs), "text");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    ASSERT_TRUE(serve.WaitForLog("training log found training_job=\"jobX")) << serve.Log();
    ASSERT_TRUE(serve.WaitForLog("training log found training_job=\"jobY\\xff\\xfe\""))
        << serve.Log();
    ASSERT_TRUE(serve.WaitForLog("training log found training_job=\"" + fields + "\" run=run1"))
        << serve.Log();
    EXPECT_EQ(serve.Stop(), 0);
    const std::string log = serve.Log();
    std::istringstream lines(log);
    std::string line;
    int found = 0;
    while (std::getline(lines, line)) {
      EXPECT_FALSE(line.starts_with(forged)) << log;
      // Every line is a message: it starts with its own time stamp.
      EXPECT_TRUE(line.size() > 24 && line[4] == '-' && line[10] == 'T' && line[23] == 'Z') << line;
      if (line.find("training log found training_job=\"jobX\\n" + forged + "\"") !=
          std::string::npos) {
        ++found;
      }
      EXPECT_EQ(line.find('\xff'), std::string::npos) << line;
    }
    EXPECT_EQ(found, 1) << log;
  }
  {
    Serve serve(
        tmp,
        [&] {
          std::vector<std::string> f = FastFlags(jobs);
          f.insert(f.end(), {"--log-format", "json"});
          return f;
        }(),
        "json");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    ASSERT_TRUE(serve.WaitForLog("\"training_job\":\"jobY")) << serve.Log();
    ASSERT_TRUE(serve.WaitForLog("\"training_job\":\"jobX\\n" + forged)) << serve.Log();
    ASSERT_TRUE(serve.WaitForLog("\"msg\":\"window analysed\",\"training_job\":\"evil "))
        << serve.Log();
    EXPECT_EQ(serve.Stop(), 0);
    std::istringstream lines(serve.Log());
    std::string line;
    int lines_read = 0;
    int evil_lines = 0;
    while (std::getline(lines, line)) {
      ++lines_read;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << line;
      if (line.find("\"training_job\":\"evil ") == std::string::npos) continue;
      // One training_job, the whole name, and no reason: the name's own
      // "key=value" text is no field (a reader keeps a duplicate key's last).
      ++evil_lines;
      size_t keys = 0;
      for (size_t at = line.find("\"training_job\":"); at != std::string::npos;
           at = line.find("\"training_job\":", at + 1)) {
        ++keys;
      }
      EXPECT_EQ(keys, 1u) << line;
      EXPECT_EQ(j.value("training_job", ""), fields) << line;
      EXPECT_FALSE(j.contains("reason")) << line;
    }
    EXPECT_GT(lines_read, 3);
    EXPECT_GE(evil_lines, 2) << "training log found, window analysed";
  }
}

}  // namespace
}  // namespace profwatch
