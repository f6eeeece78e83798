// Integration tests of `profwatch serve`: the real binary on 127.0.0.1 with an
// ephemeral port, a temp jobs directory written step by step, and /metrics
// scraped over HTTP until a condition holds or a deadline passes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nsys_export.h"
#include "testing/diagnosis_window.h"
#include "testing/hostile_hlo.h"
#include "testing/serve_harness.h"
#include "testing/test_util.h"

namespace profwatch {
namespace {

// The daemon under test is built like this test. A sanitizer's allocator
// (ASan, TSan) keeps freed memory in its own quarantine and ignores
// malloc_trim, so there the daemon's RSS says nothing about the state it
// keeps: the RSS bounds hold for the plain build only.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerHeap = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerHeap = true;
#else
constexpr bool kSanitizerHeap = false;
#endif
#else
constexpr bool kSanitizerHeap = false;
#endif

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// --- trace content -------------------------------------------------------

// A small JAX/XLA-format trace: `gpus` devices, each with `kernels` GEMM
// kernels of `dur_us` and one NCCL kernel on a stream thread.
std::string JaxTrace(int gpus, int kernels, double dur_us) {
  std::ostringstream out;
  out << R"j({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)j";
  for (int g = 0; g < gpus; ++g) {
    const int pid = g + 1;
    out << R"j({"ph":"M","pid":)j" << pid
        << R"j(,"name":"process_name","args":{"name":"/device:GPU:)j" << g << R"j("}},)j";
    out << R"j({"ph":"M","pid":)j" << pid
        << R"j(,"tid":16,"name":"thread_name","args":{"name":"Stream #16(Kernel)"}},)j";
  }
  out << R"j({"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}},)j";
  for (int g = 0; g < gpus; ++g) {
    double ts = 10;
    for (int k = 0; k < kernels; ++k) {
      out << R"j({"ph":"X","pid":)j" << g + 1 << R"j(,"tid":16,"ts":)j" << ts << R"j(,"dur":)j"
          << dur_us << R"j(,"name":"Cijk_Alik_Bljk_HHS_BH_MT128x128x64_gemm","args":{}},)j";
      ts += dur_us + 1;
    }
    out << R"j({"ph":"X","pid":)j" << g + 1 << R"j(,"tid":16,"ts":)j" << ts << R"j(,"dur":)j"
        << dur_us
        << R"j(,"name":"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)","args":{}},)j";
  }
  out << "{}]}";
  return out.str();
}

void WriteTrace(const std::string& path, int gpus, int kernels = 6, double dur_us = 100) {
  WriteFile(path, testing::Gzip(JaxTrace(gpus, kernels, dur_us)));
}

using testing::HttpGet;
using testing::Labels;
using testing::ProfileDir;
using testing::Sample;
using testing::Serve;
using testing::WindowShown;

// Every sample line that belongs to a run (has a training_job label).
std::vector<std::string> RunLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#' && line.find("training_job=") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

// Settle and rescan fast, then `more`.
std::vector<std::string> FastFlags(const std::string& jobs,
                                   std::initializer_list<std::string> more = {}) {
  // Re-analysis paced like settling, at test speed (the pacing itself:
  // AssemblerTest on a fake clock).
  std::vector<std::string> flags = {
      "--watch", jobs, "--settle", "1s", "--poll-interval", "1s", "--reanalysis-interval", "1s"};
  flags.insert(flags.end(), more);
  return flags;
}

std::function<bool(const std::string&)> HasGpus(const std::string& job, const std::string& run,
                                                double gpus) {
  return [=](const std::string& m) {
    auto v = Sample(m, "profwatch_window_gpus", {{"training_job", job}, {"run", run}});
    return v && *v == gpus;
  };
}

// The nice value of each thread of `pid` (field 19 of /proc/PID/task/TID/stat).
std::multiset<int> ThreadNiceValues(pid_t pid) {
  std::multiset<int> out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    const std::string stat = testing::ReadFile(task.path().string() + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
      if (i == 19) out.insert(std::stoi(field));
    }
  }
  return out;
}

// How many threads of `pid` are named `name` (/proc/PID/task/TID/comm).
size_t ThreadsNamed(pid_t pid, const std::string& name) {
  size_t n = 0;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    if (testing::ReadFile(task.path().string() + "/comm") == name + "\n") ++n;
  }
  return n;
}

// --- tests ----------------------------------------------------------------

TEST(ServeTest, SlowlyWrittenSplitWindowAppearsOnceCompleteWithAllGpus) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.proc0.trace.json.gz", 1);
  const std::string slow = prof + "/2024_03_01_12_00_03/h0.proc1.trace.json.gz";
  const std::string gz = testing::Gzip(JaxTrace(1, 200, 50));
  WriteFile(slow, gz.substr(0, gz.size() / 2));

  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  EXPECT_NE(serve.Log().find("listening address=127.0.0.1:" + std::to_string(serve.port())),
            std::string::npos)
      << serve.Log();
  // While half written, the window is tried and held back (not skipped, not
  // published): wait for the retry decision, then nothing may be exported.
  ASSERT_TRUE(serve.WaitForLog("will retry path=" + slow + " reason=truncated")) << serve.Log();
  {
    auto m = serve.Metrics();
    ASSERT_TRUE(m.has_value());
    ASSERT_FALSE(Sample(*m, "profwatch_window_gpus", {{"run", "run1"}}).has_value()) << *m;
  }
  WriteFile(slow, gz);
  // The first value seen is the complete window.
  std::optional<double> first;
  auto m = serve.WaitFor([&](const std::string& text) {
    first = Sample(text, "profwatch_window_gpus", {{"run", "run1"}});
    return first.has_value();
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(*first, 2) << *m;
  Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  EXPECT_EQ(Sample(*m, "profwatch_window_trace_files", run), 2);
  EXPECT_EQ(Sample(*m, "profwatch_window_timestamp_dirs", run), 2);
  EXPECT_EQ(Sample(*m, "profwatch_window_incomplete", run), 0);
  EXPECT_EQ(WindowShown(*m, "2024_03_01_12_00_00"), 1);
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeTest, SecondWindowOfRunReplacesTheFirst) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  WriteTrace(prof + "/2024_03_01_12_00_01/h1.trace.json.gz", 2);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor(HasGpus("jobA", "run1", 4))) << serve.Log();
  // The next profile window, 30 minutes later, with 8 GPUs per host.
  WriteTrace(prof + "/2024_03_01_12_30_00/h0.trace.json.gz", 8);
  WriteTrace(prof + "/2024_03_01_12_30_01/h1.trace.json.gz", 8);
  auto m = serve.WaitFor(HasGpus("jobA", "run1", 16));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(WindowShown(*m, "2024_03_01_12_30_00"), 1);
  EXPECT_FALSE(WindowShown(*m, "2024_03_01_12_00_00"));
  EXPECT_EQ(Sample(*m, "profwatch_window_trace_files", {{"run", "run1"}}), 2);
  // A format that lists no agents has no idle-agent series (absent, not 0).
  EXPECT_FALSE(Sample(*m, "profwatch_window_idle_gpu_agents", {{"run", "run1"}}).has_value());
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeTest, StaleWindowTenMinutesOlderIsNotMerged) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.trace.json.gz", 4);
  WriteTrace(prof + "/2024_03_01_12_00_02/h1.trace.json.gz", 4);
  WriteTrace(prof + "/2024_03_01_12_10_00/h2.trace.json.gz", 2);
  WriteTrace(prof + "/2024_03_01_12_10_01/h3.trace.json.gz", 2);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return Sample(t, "profwatch_window_gpus", {{"run", "run1"}}).has_value();
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", run), 4);
  EXPECT_EQ(Sample(*m, "profwatch_window_trace_files", run), 2);
  EXPECT_EQ(Sample(*m, "profwatch_window_timestamp_dirs", run), 2);
  EXPECT_EQ(WindowShown(*m, "2024_03_01_12_10_00"), 1);
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeTest, CorruptFileCountsErrorAndDaemonKeepsServing) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  WriteFile(prof + "/2024_03_01_12_00_00/h1.trace.json.gz",
            testing::Gzip("this is not a trace {{{ [[[ \"unterminated"));
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto errors = [](const std::string& t) {
    double sum = 0;
    std::istringstream in(t);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("profwatch_window_errors_total{", 0) == 0) {
        sum += std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return sum;
  };
  // The analyses counter goes up just after the snapshot that publishes the
  // window (so a counted analysis is always shown): wait for both.
  auto m = serve.WaitFor([&](const std::string& t) {
    return errors(t) >= 1 && Sample(t, "profwatch_window_gpus", {{"run", "run1"}}).has_value() &&
           Sample(t, "profwatch_windows_analyzed_total", {{"result", "incomplete"}}).value_or(0) >=
               1.0;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_GE(Sample(*m, "profwatch_window_errors_total", {{"reason", "corrupt"}}).value_or(0), 1.0)
      << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "give_up"}}), 0.0) << *m;
  Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", run), 2);
  EXPECT_EQ(Sample(*m, "profwatch_window_incomplete", run), 1);
  // A corrupt file is a real failure: the run is flagged (ProfwatchWindowErrors).
  EXPECT_EQ(Sample(*m, "profwatch_window_failed", {{"run", "run1"}, {"reason", "corrupt"}}), 1)
      << *m;
  // Counted by outcome: the window was published incomplete.
  EXPECT_GE(Sample(*m, "profwatch_windows_analyzed_total", {{"result", "incomplete"}}).value_or(0),
            1.0)
      << *m;
  EXPECT_NE(serve.Log().find("h1.trace.json.gz"), std::string::npos);
  // Still serving: a new run appears.
  WriteTrace(ProfileDir(jobs, "jobA", "run2") + "/2024_03_01_13_00_00/h0.trace.json.gz", 3);
  EXPECT_TRUE(serve.WaitFor(HasGpus("jobA", "run2", 3))) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// Sum of every reason of a counter family in an exposition.
double SumOf(const std::string& text, const std::string& name) {
  double sum = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) == 0) sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A writer that finishes its file within the retry budget is no error: the
// held-back tries are retries, the new window replaces the old one, nothing
// is flagged: no truncated error is counted, so ProfwatchWindowErrors
// stays quiet (#29).
TEST(ServeTest, HalfWrittenFileFinishedWithinRetriesIsNoError) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  std::vector<std::string> flags = FastFlags(jobs, {"--max-retries", "8"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor(HasGpus("jobA", "run1", 2))) << serve.Log();

  const std::string next = prof + "/2024_03_01_12_30_00/h0.trace.json.gz";
  const std::string gz = testing::Gzip(JaxTrace(4, 200, 50));
  WriteFile(next, gz.substr(0, gz.size() / 2));
  ASSERT_TRUE(serve.WaitForLog("will retry path=" + next + " reason=truncated")) << serve.Log();
  WriteFile(next, gz);
  auto m = serve.WaitFor(HasGpus("jobA", "run1", 4));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  EXPECT_EQ(WindowShown(*m, "2024_03_01_12_30_00"), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_incomplete", run), 0) << *m;
  EXPECT_EQ(SumOf(*m, "profwatch_window_errors_total"), 0) << *m;
  EXPECT_GE(Sample(*m, "profwatch_window_retries_total", {{"reason", "truncated"}}).value_or(0), 1)
      << *m;
  EXPECT_FALSE(Sample(*m, "profwatch_window_failed", run).has_value()) << *m;
  const std::string log = serve.Log();
  EXPECT_EQ(log.find("file failed"), std::string::npos) << log;
  EXPECT_EQ(log.find("given up"), std::string::npos) << log;
  EXPECT_EQ(serve.Stop(), 0);
}

// A new window whose only file stays cut short past --max-retries leaves no
// kernel data: it must not replace the run's good window with zeros. The
// failure is counted and flagged, logged once; once the file is finished the
// window is exported and the flag clears.
TEST(ServeTest, WindowTruncatedPastRetriesKeepsThePreviousWindowAndIsFlagged) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  std::vector<std::string> flags = FastFlags(jobs, {"--max-retries", "2"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto good = serve.WaitFor(HasGpus("jobA", "run1", 2));
  ASSERT_TRUE(good.has_value()) << serve.Log();
  Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  const std::optional<double> kernel_s = Sample(*good, "profwatch_total_kernel_seconds", run);
  ASSERT_TRUE(kernel_s.has_value() && *kernel_s > 0) << *good;

  const std::string next = prof + "/2024_03_01_12_30_00/h0.trace.json.gz";
  const std::string gz = testing::Gzip(JaxTrace(4, 200, 50));
  WriteFile(next, gz.substr(0, 40));  // the gzip header and a few bytes: no event
  // Three analyses (the first window; the new one held back once, then its
  // file given up): the analyses counter goes up after each one's snapshot.
  auto m = serve.WaitFor([&](const std::string& t) {
    return SumOf(t, "profwatch_windows_analyzed_total") >= 3 &&
           Sample(t, "profwatch_window_errors_total", {{"reason", "give_up"}}).value_or(0) >= 1;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(SumOf(*m, "profwatch_windows_analyzed_total"), 3) << *m;
  // The alert's reason is the real cause, as the log says it (issue #38:
  // it said no_data while the log said truncated).
  EXPECT_EQ(Sample(*m, "profwatch_window_failed", {{"run", "run1"}, {"reason", "truncated"}}), 1)
      << *m;
  EXPECT_FALSE(Sample(*m, "profwatch_window_failed", {{"run", "run1"}, {"reason", "no_data"}}))
      << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", run), 2) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_total_kernel_seconds", run), kernel_s) << *m;
  EXPECT_EQ(WindowShown(*m, "2024_03_01_12_00_00"), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_incomplete", run), 0) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "give_up"}}), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "no_data"}}), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "truncated"}}), 0) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_retries_total", {{"reason", "truncated"}}), 1) << *m;
  {
    const std::string log = serve.Log();
    EXPECT_EQ(Count(log, "window not exported"), 1u) << log;
    EXPECT_NE(log.find("window not exported: no usable kernel data training_job=jobA run=run1 "
                       "window=2024_03_01_12_30_00 reason=truncated"),
              std::string::npos)
        << log;
    EXPECT_EQ(Count(log, "file given up path=" + next + " reason=truncated"), 1u) << log;
  }

  // The writer finishes after all: the window is read again and exported,
  // and the flag is gone.
  WriteFile(next, gz);
  m = serve.WaitFor(HasGpus("jobA", "run1", 4));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_FALSE(Sample(*m, "profwatch_window_failed", run).has_value()) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_incomplete", run), 0) << *m;
  EXPECT_EQ(WindowShown(*m, "2024_03_01_12_30_00"), 1) << *m;
  EXPECT_EQ(serve.Stop(), 0);
}

// The --window-timeout path: a window short of --expected-gpus is held, then
// published incomplete at the timeout; with no GPU at all it has no kernel
// data and must not replace the run's window with zeros either.
TEST(ServeTest, WindowWithoutGpusAtTheWindowTimeoutKeepsThePreviousWindow) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  std::vector<std::string> flags =
      FastFlags(jobs, {"--expected-gpus", "2", "--window-timeout", "3s"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto good = serve.WaitFor(HasGpus("jobA", "run1", 2));
  ASSERT_TRUE(good.has_value()) << serve.Log();
  Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  const std::optional<double> kernel_s = Sample(*good, "profwatch_total_kernel_seconds", run);

  WriteTrace(prof + "/2024_03_01_12_30_00/h0.trace.json.gz", 0);  // no GPU, no kernel
  // Three analyses: the first window; the new one held for its GPUs, then
  // taken at the timeout.
  auto m = serve.WaitFor(
      [&](const std::string& t) { return SumOf(t, "profwatch_windows_analyzed_total") >= 3; });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", run), 2) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_total_kernel_seconds", run), kernel_s) << *m;
  EXPECT_EQ(WindowShown(*m, "2024_03_01_12_00_00"), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_failed", {{"run", "run1"}, {"reason", "no_data"}}), 1)
      << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "no_data"}}), 1) << *m;
  EXPECT_EQ(Count(serve.Log(), "window not exported"), 1u) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// Alert rules take increase() of the error counter: every reason exists at 0
// from the first scrape, before any error (a first error is then an increase).
TEST(ServeTest, EveryErrorReasonIsExportedAtZeroBeforeAnyError) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  std::filesystem::create_directories(jobs);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  std::optional<std::string> m = serve.Metrics();
  ASSERT_TRUE(m.has_value()) << serve.Log();
  for (const char* reason :
       {"not_found", "permission", "io", "truncated", "corrupt", "unsupported", "too_large",
        "over_budget", "config", "internal", "give_up", "no_data"}) {
    EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", reason}}), 0.0)
        << reason << "\n"
        << *m;
  }
  for (const char* reason : {"not_found", "io", "truncated"}) {
    EXPECT_EQ(Sample(*m, "profwatch_window_retries_total", {{"reason", reason}}), 0.0)
        << reason << "\n"
        << *m;
  }
  EXPECT_EQ(serve.Stop(), 0);
}

// A root that does not exist yet is a warning naming it and a 0 gauge, not a
// healthy-looking daemon; once created it is walked and the gauge turns 1.
TEST(ServeTest, MissingWatchRootIsReportedUntilItAppears) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto readable = [&](double want) {
    return [=](const std::string& m) {
      return Sample(m, "profwatch_watch_root_readable", {{"root", jobs}}) == want;
    };
  };
  ASSERT_TRUE(serve.WaitFor(readable(0))) << serve.Log();
  EXPECT_TRUE(serve.WaitForLog("watch root missing path=" + jobs)) << serve.Log();
  WriteTrace(ProfileDir(jobs, "jobM", "runM") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  ASSERT_TRUE(serve.WaitFor(readable(1))) << serve.Log();
  EXPECT_TRUE(serve.WaitFor(HasGpus("jobM", "runM", 2))) << serve.Log();
  EXPECT_TRUE(serve.WaitForLog("watch root readable path=" + jobs)) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// --log-format json: the key=value fields are JSON keys a log store can
// filter on (training_job, run, window, path), not text inside "msg".
TEST(ServeTest, JsonLogsCarryFieldsAsKeys) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  std::vector<std::string> flags = FastFlags(jobs, {"--log-format", "json"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  EXPECT_TRUE(serve.WaitForLog(R"("msg":"watch root missing","path":")" + jobs + "\""))
      << serve.Log();
  WriteTrace(ProfileDir(jobs, "jobJ", "runJ") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  EXPECT_TRUE(serve.WaitForLog(
      R"("msg":"window analysed","training_job":"jobJ","run":"runJ","window":"2024_03_01_12_00_00")"))
      << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// A JSON + xplane pair of one host is one trace file, read in one format:
// the "window analysed" log line and profwatch_window_trace_files agree (1),
// and the log names the two files on disk apart.
TEST(ServeTest, JsonAndXplanePairIsOneTraceFileInLogAndMetric) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string dir = ProfileDir(jobs, "jobP", "runP") + "/2024_03_01_12_00_00";
  WriteFile(dir + "/h0.trace.json.gz",
            ReadFile(testing::ProjectFixture("xplane/two_gpus_steps.trace.json.gz")));
  WriteFile(dir + "/h0.xplane.pb",
            ReadFile(testing::ProjectFixture("xplane/two_gpus_steps.xplane.pb")));
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto metrics = serve.WaitFor([](const std::string& m) {
    return Sample(m, "profwatch_window_trace_files", {{"training_job", "jobP"}}).has_value();
  });
  ASSERT_TRUE(metrics) << serve.Log();
  EXPECT_EQ(Sample(*metrics, "profwatch_window_trace_files", {{"training_job", "jobP"}}), 1.0);
  EXPECT_TRUE(serve.WaitForLog("window analysed training_job=jobP run=runP"));
  EXPECT_NE(serve.Log().find("files=1 files_present=2 "), std::string::npos) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// Idle and slow clients (port scanners, half-open load balancer checks, a
// client trickling its request) must not hold a scrape back: with 100 of
// them connected (half silent, half with a request line but no end of
// headers), /metrics and /-/healthy answer within 3 s. Each such client
// holds a civetweb worker for up to the 1 s request timeout, so a server
// with fewer workers than clients needs a request timeout per round of
// them (clients / workers rounds); the bound leaves room for a loaded
// machine and is still far below that.
TEST(ServeTest, IdleConnectionsDoNotBlockTheScrape) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(serve.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    if (i % 2 == 1) {
      const std::string partial = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
      ASSERT_EQ(send(fd, partial.data(), partial.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(partial.size()));
    }
    idle.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::string> m = serve.Metrics();
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_NE(m->find("profwatch_build_info"), std::string::npos);
  EXPECT_LT(took, 3s * testing::kTimeFactor);
  EXPECT_EQ(testing::HttpGet(serve.port(), "/-/healthy"), "OK\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s * testing::kTimeFactor);
  for (int fd : idle) close(fd);
  EXPECT_EQ(serve.Stop(), 0);
}

// An idle daemon stops promptly on SIGTERM (exit 0, state saved): an
// orchestrator's stop or restart does not wait on it.
TEST(ServeTest, SigtermStopsAnIdleDaemonPromptly) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  std::vector<std::string> flags = FastFlags(jobs, {"--state", tmp.Sub("state.json")});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1)) << serve.Log();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(serve.Stop(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms * testing::kTimeFactor) << serve.Log();
  EXPECT_TRUE(fs::exists(tmp.Sub("state.json")));
  EXPECT_NE(serve.Log().find("stopped abandoned_windows=0"), std::string::npos) << serve.Log();
}

// Beside /metrics: a landing page, liveness and readiness for probes.
TEST(ServeTest, ServesLandingPageHealthAndReadiness) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  EXPECT_EQ(testing::HttpGet(serve.port(), "/-/healthy"), "OK\n");
  // Ready once the first scan is published (bounded wait).
  ASSERT_TRUE(serve.WaitFor([](const std::string& m) {
    return Sample(m, "profwatch_last_scan_timestamp_seconds").has_value();
  })) << serve.Log();
  EXPECT_EQ(testing::HttpGet(serve.port(), "/-/ready"), "OK\n");
  std::optional<std::string> landing = testing::HttpGet(serve.port(), "/");
  ASSERT_TRUE(landing.has_value());
  EXPECT_NE(landing->find("href=\"/metrics\""), std::string::npos) << *landing;
  EXPECT_FALSE(testing::HttpGet(serve.port(), "/no-such-page").has_value());
  // /metrics gzip-compressed for a client that accepts it (as Prometheus
  // does): curl decodes the two gzip members into the plain exposition.
  const std::string url = "http://127.0.0.1:" + std::to_string(serve.port()) + "/metrics";
  auto gz = testing::RunCommand("curl -sS -D " + tmp.Sub("headers") + " --compressed " + url);
  ASSERT_EQ(gz.exit_code, 0) << gz.err;
  EXPECT_NE(ReadFile(tmp.Sub("headers")).find("Content-Encoding: gzip"), std::string::npos);
  EXPECT_TRUE(Sample(gz.out, "profwatch_last_scan_timestamp_seconds").has_value()) << gz.out;
  EXPECT_TRUE(Sample(gz.out, "process_resident_memory_bytes").has_value()) << gz.out;
  // `profwatch probe` (systemd's ExecStartPost): 0 on 200, else 1 naming why.
  const std::string probe = "'" + testing::BinaryPath("profwatch") +
                            "' probe --listen 0.0.0.0:" + std::to_string(serve.port());
  EXPECT_EQ(testing::RunCommand(probe).exit_code, 0);
  EXPECT_EQ(testing::RunCommand(probe + " --path /-/ready").exit_code, 0);
  // The probe retries until a 200 or its timeout: a failing one lasts its
  // whole timeout, which must still let the first try be answered.
  auto missing = testing::RunCommand(probe + " --path /nope --timeout " +
                                     std::to_string(testing::kTimeFactor) + "s");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nope: HTTP 404"), std::string::npos) << missing.err;
  EXPECT_EQ(serve.Stop(), 0);
  auto stopped = testing::RunCommand(probe + " --timeout 300ms");
  EXPECT_EQ(stopped.exit_code, 1);
  EXPECT_NE(stopped.err.find("Connection refused"), std::string::npos) << stopped.err;
}

TEST(ServeTest, RestartWithStateServesIdenticalValuesWithoutReanalysis) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string state = tmp.Sub("state/profwatch.json");
  fs::create_directories(tmp.Sub("state"));
  WriteTrace(ProfileDir(jobs, "jobA", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  WriteTrace(ProfileDir(jobs, "jobB", "run9") + "/2024_03_01_12_00_00/h0.trace.json.gz", 3);
  std::vector<std::string> flags = FastFlags(jobs, {"--state", state});
  std::vector<std::string> before;
  {
    Serve serve(tmp, flags, "first");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    auto m = serve.WaitFor([](const std::string& t) {
      return HasGpus("jobA", "run1", 2)(t) && HasGpus("jobB", "run9", 3)(t);
    });
    ASSERT_TRUE(m.has_value()) << serve.Log();
    before = RunLines(*m);
    ASSERT_EQ(serve.Stop(), 0);
  }
  ASSERT_TRUE(fs::exists(state));
  Serve again(tmp, flags, "second");
  ASSERT_GT(again.port(), 0) << again.Log();
  auto first = again.Metrics();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(RunLines(*first), before);
  // Two seconds of scans later (two 1 s polls, past the 1 s settle) nothing
  // has been analysed again.
  const double start_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto later = again.WaitFor([&](const std::string& t) {
    auto scan = Sample(t, "profwatch_last_scan_timestamp_seconds");
    return scan && *scan >= start_unix + 2.0;
  });
  ASSERT_TRUE(later.has_value()) << again.Log();
  for (const char* result : {"ok", "incomplete", "error"}) {
    EXPECT_EQ(Sample(*later, "profwatch_windows_analyzed_total", {{"result", result}}), 0)
        << result << again.Log();
  }
  EXPECT_EQ(RunLines(*later), before);
  EXPECT_EQ(again.Stop(), 0);
}

// A restart on the --state of 300 runs: from the moment the process
// starts, every 200 answer of /metrics holds every restored run. One
// served before the file is restored would hold none, and Prometheus would
// mark every run's series stale and resolve their alerts. The runs of the
// file are one run's entry and window copied under 299 more jobs, each
// beside a hard link of its trace (same device, inode, size and mtime:
// restored, not analysed again).
TEST(ServeTest, EveryMetricsAnswerAfterARestartHoldsEveryRestoredRun) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string state = tmp.Sub("state.json");
  const std::string tail = "/2024_03_01_12_00_00/h0.trace.json.gz";
  const std::string trace = ProfileDir(jobs, "job000", "run") + tail;
  WriteTrace(trace, 2);
  std::vector<std::string> flags = FastFlags(jobs, {"--state", state});
  {
    Serve serve(tmp, flags, "first");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    ASSERT_TRUE(serve.WaitFor(HasGpus("job000", "run", 2)).has_value()) << serve.Log();
    ASSERT_EQ(serve.Stop(), 0);
  }
  constexpr int kRuns = 300;
  nlohmann::json file = nlohmann::json::parse(ReadFile(state));
  ASSERT_EQ(file["snapshot"]["runs"].size(), 1u);
  ASSERT_EQ(file["windows"].size(), 1u);
  const nlohmann::json run0 = file["snapshot"]["runs"][0];
  const nlohmann::json window0 = file["windows"][0];
  const auto renamed = [](std::string path, const std::string& job) {
    const size_t at = path.find("/job000/");
    return at == std::string::npos ? path : path.replace(at + 1, 6, job);
  };
  for (int i = 1; i < kRuns; ++i) {
    char job[16];
    std::snprintf(job, sizeof job, "job%03d", i);
    const std::string copy = ProfileDir(jobs, job, "run") + tail;
    fs::create_directories(fs::path(copy).parent_path());
    fs::create_hard_link(trace, copy);
    nlohmann::json run = run0;
    run["training_job"] = job;
    file["snapshot"]["runs"].push_back(run);
    nlohmann::json window = window0;
    window["training_job"] = job;
    window["first_dir"] = renamed(window["first_dir"], job);
    window["run_dir"] = renamed(window["run_dir"], job);
    for (nlohmann::json& f : window["files"]) f["path"] = renamed(f["path"], job);
    file["windows"].push_back(window);
  }
  WriteFile(state, file.dump());

  const int port = testing::FreeLoopbackPort();
  ASSERT_GT(port, 0);
  flags.insert(flags.end(), {"--listen", "127.0.0.1:" + std::to_string(port)});
  Serve again(tmp, flags, "second");
  int answers = 0;
  std::optional<std::string> last;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  // Until the answers have seen two scans of the roots after the restart.
  while (std::chrono::steady_clock::now() < deadline) {
    std::optional<std::string> m = testing::HttpGet(port, "/metrics");
    if (!m) {
      std::this_thread::sleep_for(5ms);  // polling interval of a deadline-bounded wait
      continue;
    }
    ++answers;
    std::set<std::string> shown;
    for (const std::string& l : RunLines(*m)) {
      if (l.rfind("profwatch_window_gpus{", 0) != 0) continue;
      const size_t at = l.find("training_job=\"");
      if (at != std::string::npos) shown.insert(l.substr(at + 14, 6));
    }
    ASSERT_EQ(shown.size(), static_cast<size_t>(kRuns))
        << "answer " << answers << " of /metrics lacks restored runs\n"
        << again.Log();
    last = m;
    const std::optional<double> scans = Sample(*m, "profwatch_scans_total");
    if (scans && *scans >= 2) break;
  }
  ASSERT_TRUE(last.has_value()) << again.Log();
  EXPECT_GE(Sample(*last, "profwatch_scans_total"), 2) << again.Log();
  EXPECT_EQ(Sample(*last, "profwatch_windows_analyzed_total", {{"result", "ok"}}), 0)
      << again.Log();
  EXPECT_EQ(testing::HttpGet(port, "/-/ready"), "OK\n");
  EXPECT_EQ(again.Stop(), 0);
}

// The state file is saved while the daemon runs (at most once a second as
// results land, not once per result), so a daemon killed without a chance to
// save at stop still restarts without re-analysing.
TEST(ServeTest, StateIsSavedWhileRunningSoAKillLosesNothing) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string state = tmp.Sub("state.json");
  for (int i = 0; i < 5; ++i) {
    WriteTrace(ProfileDir(jobs, "job" + std::to_string(i), "run1") +
                   "/2024_03_01_12_00_00/h0.trace.json.gz",
               1);
  }
  std::vector<std::string> flags = FastFlags(jobs, {"--state", state});
  {
    Serve serve(tmp, flags, "first");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    auto m = serve.WaitFor([](const std::string& t) {
      auto n = Sample(t, "profwatch_windows_analyzed_total", {{"result", "ok"}});
      return n && *n == 5;
    });
    ASSERT_TRUE(m.has_value()) << serve.Log();
    // Bounded wait for the deferred save that follows the last result.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool saved = false;
    while (!saved && std::chrono::steady_clock::now() < deadline) {
      const std::string text = fs::exists(state) ? ReadFile(state) : "";
      saved = !text.empty();
      for (int i = 0; i < 5; ++i) {
        saved = saved && text.find("\"job" + std::to_string(i) + "\"") != std::string::npos;
      }
      if (!saved) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(saved) << serve.Log();
    serve.Signal(SIGKILL);
  }
  Serve again(tmp, flags, "second");
  ASSERT_GT(again.port(), 0) << again.Log();
  auto m = again.MetricsAfterScans(2);
  ASSERT_TRUE(m.has_value()) << again.Log();
  for (const char* result : {"ok", "incomplete", "error"}) {
    EXPECT_EQ(Sample(*m, "profwatch_windows_analyzed_total", {{"result", result}}), 0)
        << result << again.Log();
  }
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(HasGpus("job" + std::to_string(i), "run1", 1)(*m)) << i;
  }
  EXPECT_EQ(again.Stop(), 0);
}

// A state file that cannot be written is counted and logged; serving goes on.
TEST(ServeTest, FailedStateSaveIsCountedAndServingGoesOn) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  // Writable at start (an unwritable one fails the start: CliOptionsTest),
  // then the state file's parent becomes a file.
  fs::create_directories(tmp.Sub("not_a_dir"));
  const std::string state = tmp.Sub("not_a_dir/state.json");
  std::vector<std::string> flags = FastFlags(jobs, {"--state", state});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  fs::remove_all(tmp.Sub("not_a_dir"));
  WriteFile(tmp.Sub("not_a_dir"), "x");
  // The window lands after that, so its first save fails.
  WriteTrace(ProfileDir(jobs, "jobS", "runS") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  auto m = serve.WaitFor([](const std::string& t) {
    return Sample(t, "profwatch_state_save_errors_total").value_or(0) >= 1 &&
           HasGpus("jobS", "runS", 2)(t);
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_TRUE(serve.WaitForLog("state not saved path=" + state)) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_state_last_save_successful"), 0) << *m;
  // Not ready while the last save failed, naming it; ready again once a
  // save succeeds (the one after the next window).
  const auto ready = testing::RunCommand(
      "curl -sS -w ' %{http_code}' http://127.0.0.1:" + std::to_string(serve.port()) + "/-/ready");
  EXPECT_EQ(ready.out.rfind("not ready: the last save of --state failed: ", 0), 0u) << ready.out;
  EXPECT_EQ(ready.out.substr(ready.out.size() - 4), " 503") << ready.out;
  fs::remove(tmp.Sub("not_a_dir"));
  fs::create_directories(tmp.Sub("not_a_dir"));
  WriteTrace(ProfileDir(jobs, "jobT", "runT") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  EXPECT_TRUE(serve
                  .WaitFor([&](const std::string& t) {
                    return HasGpus("jobT", "runT", 1)(t) &&
                           Sample(t, "profwatch_state_last_save_successful") == 1 &&
                           testing::HttpGet(serve.port(), "/-/ready") == "OK\n";
                  })
                  .has_value())
      << serve.Log();
  EXPECT_TRUE(fs::exists(state));
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeTest, CorruptStateFileIsSetAsideNotFatal) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string state = tmp.Sub("state.json");
  WriteFile(state, "{\"schema\": \"profwatch.daemon.v1\", \"snapshot\": [");
  WriteTrace(ProfileDir(jobs, "jobA", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  std::vector<std::string> flags = FastFlags(jobs, {"--state", state});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor(HasGpus("jobA", "run1", 2))) << serve.Log();
  bool set_aside = false;
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    if (e.path().filename().string().rfind("state.json.corrupt-", 0) == 0) set_aside = true;
  }
  EXPECT_TRUE(set_aside);
  EXPECT_NE(serve.Log().find("state file unusable"), std::string::npos);
  EXPECT_EQ(serve.Stop(), 0);
}

// Job directories whose names are not UTF-8 (issue 60): `x\xff` and `x\xfe`
// were one key once bad bytes became U+FFFD, the restart found a duplicate
// run and set the whole state aside, every owner's runs with it. Kept
// reversibly (core/text.h ReversibleUtf8), they are two runs in the file and
// two series; the victim beside them is restored, not analysed again.
TEST(ServeTest, JobNamesThatAreNotUtf8StayApartAcrossARestart) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string state = tmp.Sub("state.json");
  WriteTrace(ProfileDir(jobs, "x\xff", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  WriteTrace(ProfileDir(jobs, "x\xfe", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  WriteTrace(ProfileDir(jobs, "victim", "run1") + "/2024_03_01_12_00_00/h0.trace.json.gz", 3);
  std::vector<std::string> flags = FastFlags(jobs, {"--state", state});
  // Label values as the exposition text writes them (its `\` is `\\`).
  const std::string ff = "x\\\\xff", fe = "x\\\\xfe";
  {
    Serve serve(tmp, flags, "first");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    auto m = serve.WaitFor([](const std::string& t) {
      auto ok = Sample(t, "profwatch_windows_analyzed_total", {{"result", "ok"}});
      return ok && *ok == 3 && HasGpus("victim", "run1", 3)(t);
    });
    ASSERT_TRUE(m.has_value()) << serve.Log();
    ASSERT_EQ(serve.Stop(), 0);
  }
  ASSERT_TRUE(fs::exists(state));
  Serve again(tmp, flags, "second");
  ASSERT_GT(again.port(), 0) << again.Log();
  auto m = again.MetricsAfterScans(2);
  ASSERT_TRUE(m.has_value()) << again.Log();
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename().string().find("state.json.corrupt-"), std::string::npos)
        << e.path() << again.Log();
  }
  EXPECT_EQ(again.Log().find("state file unusable"), std::string::npos) << again.Log();
  // Restored from the file: nothing analysed again, the victim above all.
  EXPECT_EQ(Sample(*m, "profwatch_windows_analyzed_total", {{"result", "ok"}}), 0) << again.Log();
  EXPECT_EQ(again.Log().find("window analysed training_job=victim"), std::string::npos)
      << again.Log();
  EXPECT_TRUE(HasGpus("victim", "run1", 3)(*m)) << *m;
  // Two runs, two series, each with its own window.
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", {{"training_job", ff}, {"run", "run1"}}), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", {{"training_job", fe}, {"run", "run1"}}), 2) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_state_entries_dropped_total", {{"reason", "duplicate"}}), 0)
      << *m;
  EXPECT_EQ(again.Stop(), 0);
}

TEST(ServeTest, TwoJobsAndTwoRunsAreLabelledApart) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteTrace(ProfileDir(jobs, "101-llama", "run-a") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  WriteTrace(ProfileDir(jobs, "101-llama", "run-b") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  WriteTrace(ProfileDir(jobs, "202-gpt", "run-a") + "/2024_03_01_12_00_00/h0.trace.json.gz", 3);
  WriteTrace(ProfileDir(jobs, "202-gpt", "run-b") + "/2024_03_01_12_00_00/h0.trace.json.gz", 4);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return HasGpus("101-llama", "run-a", 1)(t) && HasGpus("101-llama", "run-b", 2)(t) &&
           HasGpus("202-gpt", "run-a", 3)(t) && HasGpus("202-gpt", "run-b", 4)(t);
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  std::set<std::string> gpu_lines;
  for (const std::string& l : RunLines(*m)) {
    if (l.rfind("profwatch_window_gpus{", 0) == 0) gpu_lines.insert(l);
  }
  EXPECT_EQ(gpu_lines.size(), 4u);
  EXPECT_EQ(serve.Stop(), 0);
}

// Issue #49: no label is named after a directory above a watch root. Under
// a root of jobs, a window at the root itself is the root's own job with
// run "-" (it took the root's parent's name), one directly in a job dir is
// that job's with run "-" (it took the root's name as job); a root of one
// job (--watch JOB=DIR) labels its runs JOB, whatever the dir is called.
TEST(ServeTest, WindowsAtARootAndInAJobDirAreLabelledFromBelowTheRoot) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("outputs");
  const std::string one = tmp.Sub("elsewhere/4711-llama");
  WriteTrace(jobs + "/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  WriteTrace(jobs + "/jobK/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  WriteTrace(jobs + "/jobK/r1/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", 3);
  WriteTrace(ProfileDir(tmp.Sub("elsewhere"), "4711-llama", "base") +
                 "/2024_03_01_12_00_00/h0.trace.json.gz",
             4);
  Serve serve(tmp, FastFlags(jobs, {"--watch", "llama=" + one}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return HasGpus("outputs", "-", 1)(t) && HasGpus("jobK", "-", 2)(t) &&
           HasGpus("jobK", "r1", 3)(t) && HasGpus("llama", "base", 4)(t);
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  std::set<std::string> gpu_lines;
  for (const std::string& l : RunLines(*m)) {
    if (l.rfind("profwatch_window_gpus{", 0) == 0) gpu_lines.insert(l);
  }
  EXPECT_EQ(gpu_lines.size(), 4u) << ::testing::PrintToString(gpu_lines);
  EXPECT_EQ(m->find("training_job=\"" + fs::path(tmp.path()).filename().string()),
            std::string::npos);
  EXPECT_EQ(m->find("training_job=\"4711-llama\""), std::string::npos);
  EXPECT_EQ(serve.Stop(), 0);
}

// A run whose xplane holds a crafted HLO module (a fusion calling itself,
// issue #37) beside its trace.json.gz of CUDA-graph kernels: with the one
// analysis worker, it is analysed like any window (its kernels exported,
// the module skipped as too complex, logged) and another run's window is
// exported too.
TEST(ServeTest, HostileHloModuleNeitherHoldsTheWorkerNorHidesTheWindow) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string bad = ProfileDir(jobs, "jobH", "hostile") + "/2024_03_01_12_00_00";
  std::string trace =
      R"j({"displayTimeUnit":"ns","traceEvents":[)j"
      R"j({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)j"
      R"j({"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"Stream #7(Compute)"}})j";
  for (int i = 0; i < 4; ++i) {
    trace += R"j(,{"ph":"X","pid":1,"tid":7,"ts":)j" + std::to_string(100 + i * 20) +
             R"j(,"dur":10,"name":"loop_add_fusion_1","args":{"hlo_module":"jit_step"}})j";
  }
  WriteFile(bad + "/h0.trace.json.gz", testing::Gzip(trace + "]}"));
  WriteFile(bad + "/h0.xplane.pb",
            testing::MetadataPlane({testing::SelfCallingFusionHlo("jit_step")}));
  WriteTrace(ProfileDir(jobs, "jobH", "good") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  auto flags = FastFlags(jobs, {"--workers", "1"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return HasGpus("jobH", "good", 2)(t) && HasGpus("jobH", "hostile", 1)(t);
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_TRUE(serve.WaitForLog("hlo module skipped reason=too_complex")) << serve.Log();
  EXPECT_NE(serve.Log().find("module=jit_step detail=\"computation 10 calls itself"),
            std::string::npos)
      << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// --- Nsight Systems exports ------------------------------------------------

// `profwatch analyze --format json <dir>` of the same files, for comparison.
nlohmann::json AnalyzeJson(const std::string& dir, const std::string& flags = "") {
  auto r = testing::RunCommand(testing::BinaryPath("profwatch") + " analyze --format json " +
                               flags + " " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

void WriteNsysNode(const std::string& path, int first_rank, int64_t kernels) {
  tracegen::NsysSynthetic p;
  p.ranks = 8;
  p.first_rank = first_rank;
  p.kernels = kernels;
  p.seed = static_cast<uint64_t>(first_rank + kernels);
  std::string error;
  ASSERT_TRUE(tracegen::WriteSyntheticNsysExport(p, path, &error)) << error;
}

TEST(ServeTest, NsysNodeExportsFormOneWindowGarbageIsCountedAndRewritesAreReanalysed) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string capture = jobs + "/llm-70b/run-7/capture-nsys-profile";
  std::filesystem::create_directories(capture);
  WriteNsysNode(capture + "/profile_node0.sqlite", 0, 4000);
  WriteNsysNode(capture + "/profile_node1.sqlite", 8, 4000);
  const nlohmann::json want = AnalyzeJson(capture);
  ASSERT_EQ(want["gpus"], 16) << want.dump();
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels run = {{"training_job", "llm-70b"}, {"run", "run-7"}};
  auto m = serve.WaitFor(HasGpus("llm-70b", "run-7", 16));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  // Two node files of 8 ranks each: one window of 16 GPUs, one per process.
  EXPECT_EQ(Sample(*m, "profwatch_window_trace_files", run), 2);
  EXPECT_EQ(
      Sample(*m, "profwatch_window_info",
             {{"training_job", "llm-70b"}, {"launcher_mode", "1-GPU/proc"}, {"format", "nsys"}}),
      1)
      << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_profile_steps", run), 3);  // NVTX "step K" ranges
  // Each rank's NCCL init row before cudaProfilerStart: dropped and counted.
  EXPECT_EQ(Sample(*m, "profwatch_window_dropped_events",
                   {{"training_job", "llm-70b"}, {"reason", "before_profiler_start"}}),
            16);
  auto near = [](std::optional<double> got, double expected) {
    return got && std::abs(*got - expected) <= 1e-9 * std::max(1.0, std::abs(expected));
  };
  EXPECT_TRUE(near(Sample(*m, "profwatch_total_kernel_seconds", run),
                   want["total_kernel_seconds_per_gpu_step"].get<double>()))
      << *m;
  EXPECT_TRUE(near(Sample(*m, "profwatch_exposed_comm_seconds", run),
                   want["exposed_comm_seconds_per_gpu_step"].get<double>()))
      << *m;
  EXPECT_GT(want["exposed_comm_seconds_per_gpu_step"].get<double>(), 0);
  EXPECT_TRUE(near(Sample(*m, "profwatch_family_kernel_seconds",
                          {{"training_job", "llm-70b"}, {"family", "nccl"}}),
                   want["families"][0]["seconds_per_gpu_step"].get<double>()))
      << *m << want["families"][0].dump();

  // A non-SQLite file named .sqlite joins the window: counted, named in the
  // log, and the 16 GPUs already exported stay.
  WriteFile(capture + "/profile_node2.sqlite", "not a database, just text\n");
  m = serve.WaitFor([](const std::string& t) {
    return Sample(t, "profwatch_window_errors_total", {{"reason", "corrupt"}}).value_or(0) >= 1;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", run), 16);
  EXPECT_TRUE(serve.WaitForLog("profile_node2.sqlite")) << serve.Log();

  // nsys export --force-overwrite rewrites node 1 in place: analysed again.
  std::filesystem::remove(capture + "/profile_node2.sqlite");
  WriteNsysNode(capture + "/profile_node1.sqlite", 8, 8000);
  const nlohmann::json again = AnalyzeJson(capture);
  ASSERT_NE(again["total_kernel_seconds_per_gpu_step"], want["total_kernel_seconds_per_gpu_step"]);
  m = serve.WaitFor([&](const std::string& t) {
    return near(Sample(t, "profwatch_total_kernel_seconds", run),
                again["total_kernel_seconds_per_gpu_step"].get<double>()) &&
           Sample(t, "profwatch_window_incomplete", run) == 0.0;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log() << again.dump();
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", run), 16);
  EXPECT_EQ(serve.Stop(), 0);
}

// rocprofv3 JSON outputs of one node (tracegen rocprof): one window of the
// processes' GPUs, every figure equal to the generator's manifest.
// rocprofv3 outputs of one node (`output` picks gzipped JSON or rocpd
// databases) served as one window whose figures equal the manifest.
void ExpectRocprofWindowEqualsTheManifest(const std::string& output) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string dir = jobs + "/mi300-llm/run-3/rocprof";
  auto gen = testing::RunCommand(testing::BinaryPath("profwatch-tracegen") +
                                 " rocprof --gpus 8 --ranks 8 --steps 3 --kernels-per-step 40 " +
                                 output + " --out " + dir + " --manifest " + tmp.Sub("m.json"));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const nlohmann::json m = nlohmann::json::parse(testing::ReadFile(tmp.Sub("m.json")));
  int64_t kernel_ps = 0, exposed_ps = 0, comm_ps = 0, idle_agents = 0;
  for (const auto& f : m["files"]) {
    idle_agents += f["idle_gpu_agents"].get<int64_t>();
    kernel_ps += f["kernel_ps"].get<int64_t>();
    exposed_ps += f["exposed_comm_ps"].get<int64_t>();
    comm_ps += f["comm_ps"].get<int64_t>();
  }
  const double gpu_steps = 8.0 * 3.0;
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels run = {{"training_job", "mi300-llm"}, {"run", "run-3"}};
  auto m2 = serve.WaitFor(HasGpus("mi300-llm", "run-3", 8));
  ASSERT_TRUE(m2.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m2, "profwatch_window_trace_files", run), 8);
  EXPECT_EQ(
      Sample(
          *m2, "profwatch_window_info",
          {{"training_job", "mi300-llm"}, {"launcher_mode", "1-GPU/proc"}, {"format", "rocprof"}}),
      1)
      << *m2;
  EXPECT_EQ(Sample(*m2, "profwatch_window_profile_steps", run), 3);  // roctx "step K" ranges
  // Each process's seven other GPU agents: seen, not counted, exported.
  EXPECT_EQ(idle_agents, 8 * 7);
  EXPECT_EQ(Sample(*m2, "profwatch_window_idle_gpu_agents", run), idle_agents) << *m2;
  auto near = [](std::optional<double> got, double expected) {
    return got && std::abs(*got - expected) <= 1e-9 * std::max(1.0, std::abs(expected));
  };
  EXPECT_TRUE(near(Sample(*m2, "profwatch_total_kernel_seconds", run),
                   static_cast<double>(kernel_ps) * 1e-12 / gpu_steps))
      << *m2;
  EXPECT_TRUE(near(Sample(*m2, "profwatch_exposed_comm_seconds", run),
                   static_cast<double>(exposed_ps) * 1e-12 / gpu_steps))
      << *m2;
  EXPECT_TRUE(near(Sample(*m2, "profwatch_family_kernel_seconds",
                          {{"training_job", "mi300-llm"}, {"family", "nccl"}}),
                   static_cast<double>(comm_ps) * 1e-12 / gpu_steps))
      << *m2;
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeTest, RocprofOutputsFormOneWindowEqualToTheManifest) {
  ExpectRocprofWindowEqualsTheManifest("--gzip");
}

// ROCm 7's default output: `<pid>_results.db` rocpd databases.
TEST(ServeTest, RocpdDatabasesFormOneWindowEqualToTheManifest) {
  ExpectRocprofWindowEqualsTheManifest("--format rocpd");
}

TEST(ServeTest, RetentionRemovesAnOldRun) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteTrace(ProfileDir(jobs, "jobA", "old") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  // Long enough for the window to be analysed first on a busy machine (a
  // sanitizer build's start, the first scan, the settle time).
  std::vector<std::string> flags = FastFlags(jobs, {"--retention", "15s"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor(HasGpus("jobA", "old", 2), 15s)) << serve.Log();
  // No new window arrives: the run ages out 15 s after its newest file.
  auto m = serve.WaitFor(
      [](const std::string& t) {
        return !Sample(t, "profwatch_window_gpus", {{"run", "old"}}).has_value();
      },
      60s);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_TRUE(RunLines(*m).empty()) << *m;
  EXPECT_NE(serve.Log().find("run expired training_job=jobA run=old"), std::string::npos);
  EXPECT_EQ(serve.Stop(), 0);
}

// --- hostile trees (issue #37) ------------------------------------------------

// Waits (bounded) until the daemon's log holds `text` at least `n` times.
bool WaitForLogCount(const Serve& serve, const std::string& text, size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (Count(serve.Log(), text) < n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);  // polling interval of a bounded wait
  }
  return true;
}

// `n` empty files <dir>/e<i>.trace.json.gz.
void CreateEmptyTraceFiles(const std::string& dir, int n) {
  fs::create_directories(dir);
  for (int i = 0; i < n; ++i) {
    const std::string path = dir + "/e" + std::to_string(i) + ".trace.json.gz";
    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << path;
    close(fd);
  }
}

// The caps are tested at a small cap: what 100,000 files cost the daemon
// (RSS and CPU, refused at the default caps or tracked past raised ones, and
// what it hands back when they go) is measured by bench/run.py
// --flood-files, docs/performance.md.

// 100 empty *.trace.json.gz in one <ts> dir, three times over, with
// --max-files-per-window 20 and --max-files-per-dir 1000: the <ts> dir is one
// window, so the window cap refuses it whole though the directory cap alone
// would not; it is counted and logged once per time it appears, nothing of it
// is tracked or read (no pending window, no error, no figure), and the real
// job beside it keeps being served.
TEST(ServeBoundsTest, EmptyFilesPastTheWindowCapInOneTsDirAreRefusedOnceAndNeverRead) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteTrace(ProfileDir(jobs, "good", "r") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  Serve serve(tmp,
              FastFlags(jobs, {"--max-files-per-dir", "1000", "--max-files-per-window", "20"}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor(HasGpus("good", "r", 2))) << serve.Log();
  const std::string flood = ProfileDir(jobs, "evil", "r") + "/2024_03_01_12_00_00";
  const Labels cap = {{"reason", "dir_file_cap"}};
  for (int round = 1; round <= 3; ++round) {
    CreateEmptyTraceFiles(flood, 100);
    auto m = serve.WaitFor([&](const std::string& t) {
      return Sample(t, "profwatch_scan_refused_total", cap) == round;
    });
    ASSERT_TRUE(m.has_value()) << "round " << round << "\n" << serve.Log();
    m = serve.MetricsAfterScans(2);
    ASSERT_TRUE(m.has_value()) << serve.Log();
    EXPECT_EQ(Sample(*m, "profwatch_scan_refused_total", cap), round) << "counted once";
    EXPECT_FALSE(Sample(*m, "profwatch_pending_windows", {{"training_job", "evil"}}).has_value())
        << *m;
    EXPECT_EQ(SumOf(*m, "profwatch_window_errors_total"), 0) << *m;
    EXPECT_EQ(Sample(*m, "profwatch_window_gpus", {{"training_job", "good"}}), 2) << *m;
    EXPECT_FALSE(Sample(*m, "profwatch_window_gpus", {{"training_job", "evil"}}).has_value());
    fs::remove_all(flood);
    ASSERT_TRUE(
        WaitForLogCount(serve, "directory back under its file cap", static_cast<size_t>(round)))
        << serve.Log();
    ASSERT_TRUE(serve.WaitScans(1));
  }
  EXPECT_EQ(Count(serve.Log(), "directory holds too many trace files"), 3u) << serve.Log();
  EXPECT_EQ(Count(serve.Log(), "files_more_than=20 cap=20 "), 3u) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// Files under the caps are tracked (state per file; --settle 1h: never
// analysed here) and that state is dropped once they are deleted, round
// after round: the window pending on them leaves the exposition. 1,100
// files, so the scan that sees them go drops more than the 1,024 after which
// the daemon hands the freed heap back to the kernel (malloc_trim) and that
// path runs here too.
TEST(ServeBoundsTest, StateOfTrackedFilesIsDroppedWhenTheyGo) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(tmp, {"--watch", jobs, "--settle", "1h", "--poll-interval", "1s",
                    "--max-files-per-dir", "2000", "--max-files-per-window", "2000"});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1));
  const std::string flood = ProfileDir(jobs, "big", "r") + "/2024_03_01_12_00_00";
  for (int round = 1; round <= 2; ++round) {
    CreateEmptyTraceFiles(flood, 1100);
    ASSERT_TRUE(serve.WaitFor([](const std::string& t) {
      return Sample(t, "profwatch_pending_windows", {{"training_job", "big"}}) == 1;
    })) << "round "
        << round << "\n"
        << serve.Log();
    fs::remove_all(flood);
    ASSERT_TRUE(serve.WaitFor([](const std::string& t) {
      return !Sample(t, "profwatch_pending_windows", {{"training_job", "big"}}).has_value();
    })) << "round "
        << round << "\n"
        << serve.Log();
    ASSERT_TRUE(serve.WaitScans(1));
  }
  EXPECT_EQ(Count(serve.Log(), "too many trace files"), 0u) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// A trace file linked into a run from outside the watch root is not read:
// nothing is exported for its run, the refusal is counted once and logged;
// a link whose target lies inside the root is read as usual.
TEST(ServeBoundsTest, TraceFileLinkedFromOutsideTheRootIsNotRead) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteTrace(tmp.Sub("outside/secret.trace.json.gz"), 2);
  WriteTrace(jobs + "/store/inside.bin", 3);
  const std::string ts_a = ProfileDir(jobs, "jobA", "r") + "/2024_03_01_12_00_00";
  const std::string ts_b = ProfileDir(jobs, "jobB", "r") + "/2024_03_01_12_00_00";
  fs::create_directories(ts_a);
  fs::create_directories(ts_b);
  fs::create_symlink(tmp.Sub("outside/secret.trace.json.gz"), ts_a + "/h0.trace.json.gz");
  fs::create_symlink(jobs + "/store/inside.bin", ts_b + "/h0.trace.json.gz");
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor(HasGpus("jobB", "r", 3));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  m = serve.MetricsAfterScans(2);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_scan_refused_total", {{"reason", "outside_root"}}), 1) << *m;
  EXPECT_FALSE(Sample(*m, "profwatch_window_gpus", {{"training_job", "jobA"}}).has_value()) << *m;
  EXPECT_EQ(SumOf(*m, "profwatch_window_errors_total"), 0) << *m;
  EXPECT_EQ(Count(serve.Log(), "trace file links out of the watch root not read"), 1u)
      << serve.Log();
  EXPECT_NE(serve.Log().find(ts_a + "/h0.trace.json.gz"), std::string::npos);
  EXPECT_EQ(serve.Stop(), 0);
}

// Issue #38: a run's new window with fewer files than its previous one waits
// up to --window-timeout for the rest. The wait is visible: one info line
// with the counts, where the expectation comes from and the deadline, and
// profwatch_pending_windows{training_job,run} counts it for its run.
TEST(ServeTest, WindowShortOfFilesSaysWhyItWaitsAndForWhichRun) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  WriteTrace(prof + "/2024_03_01_12_00_00/h1.trace.json.gz", 1);
  std::vector<std::string> flags = FastFlags(jobs, {"--window-timeout", "1h"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels run = {{"training_job", "jobA"}, {"run", "run1"}};
  auto good = serve.WaitFor(HasGpus("jobA", "run1", 2));
  ASSERT_TRUE(good.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*good, "profwatch_pending_windows", run), 0) << *good;
  // The daemon's own series are unlabelled; this one is per run only.
  EXPECT_EQ(good->find("\nprofwatch_pending_windows "), std::string::npos) << *good;

  const double dropped_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  WriteTrace(prof + "/2024_03_01_12_30_00/h0.trace.json.gz", 1);
  const std::string held =
      "window held: fewer files than expected, waiting for the rest until the window timeout "
      "training_job=jobA run=run1 window=2024_03_01_12_30_00 files=1 expected_files=2 "
      "expected_from=\"previous window\" until_unix=";
  ASSERT_TRUE(serve.WaitForLog(held, 15s)) << serve.Log();
  auto m = serve.WaitFor(
      [&](const std::string& t) { return Sample(t, "profwatch_pending_windows", run) == 1.0; });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(2)) << serve.Log();
  const std::string log = serve.Log();
  EXPECT_EQ(Count(log, "window held: fewer files"), 1u) << log;
  // Until first seen + 1 h (first seen between the drop and the line).
  const size_t at = log.find(held) + held.size();
  const double until = std::stod(log.substr(at, log.find(' ', at) - at));
  EXPECT_GE(until, dropped_unix + 3600 - 1) << log;
  EXPECT_LE(until, dropped_unix + 3600 + 60) << log;
  EXPECT_NE(log.find("window_timeout_s=3600", at), std::string::npos) << log;
  // The old window is still the exported one.
  EXPECT_EQ(WindowShown(*m, "2024_03_01_12_00_00"), 1) << *m;

  // The missing file lands: the window is analysed, nothing is pending.
  WriteTrace(prof + "/2024_03_01_12_30_00/h1.trace.json.gz", 1);
  m = serve.WaitFor([&](const std::string& t) {
    return WindowShown(t, "2024_03_01_12_30_00") == 1.0 &&
           Sample(t, "profwatch_pending_windows", run) == 0.0;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_gpus", run), 2) << *m;
  EXPECT_EQ(serve.Stop(), 0);
}

// Issue #38: retention is the run's, the same with or without --state. A
// run whose files and log are older than --retention is not exported, with
// or without a --state file that has it, and the daemon says once why; a run
// whose log is alive exports its latest window either way, however old the
// window itself. On the real JAX run, its training log included.
TEST(ServeTest, RunOlderThanRetentionIsLeftOutAndLoggedWithOrWithoutState) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(fixture, "real/h200/jobs/4242-llama-h200/base");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string old_run = jobs + "/4242-llama-h200/base";
  fs::create_directories(jobs + "/4242-llama-h200");
  fs::copy(fixture, old_run, fs::copy_options::recursive);
  const auto three_days_ago = fs::file_time_type::clock::now() - 72h;
  for (const auto& e : fs::recursive_directory_iterator(old_run)) {
    if (e.is_regular_file()) fs::last_write_time(e.path(), three_days_ago);
  }
  WriteTrace(ProfileDir(jobs, "jobN", "new") + "/2024_03_01_12_00_00/h0.trace.json.gz", 1);
  const std::string state = tmp.Sub("state.json");
  const Labels old_labels = {{"training_job", "4242-llama-h200"}, {"run", "base"}};
  // A daemon keeping runs for 30 days exports it and saves it in the state.
  {
    std::vector<std::string> flags = FastFlags(jobs, {"--retention", "30d", "--state", state});
    Serve keep(tmp, flags, "keep");
    ASSERT_GT(keep.port(), 0) << keep.Log();
    ASSERT_TRUE(keep.WaitFor(
        [&](const std::string& t) {
          return Sample(t, "profwatch_window_gpus", old_labels).has_value() &&
                 HasGpus("jobN", "new", 1)(t);
        },
        60s))
        << keep.Log();
    ASSERT_EQ(keep.Stop(), 0);
  }
  for (const bool with_state : {false, true}) {
    SCOPED_TRACE(with_state ? "with --state" : "without --state");
    std::vector<std::string> flags = FastFlags(jobs);
    if (with_state) flags.insert(flags.end(), {"--state", state});
    Serve serve(tmp, flags, with_state ? "with_state" : "without_state");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    // From the very first scrape on: the default retention (24 h) leaves it out.
    auto first = serve.Metrics();
    ASSERT_TRUE(first.has_value()) << serve.Log();
    EXPECT_EQ(first->find("training_job=\"4242-llama-h200\""), std::string::npos) << *first;
    ASSERT_TRUE(serve.WaitFor(HasGpus("jobN", "new", 1))) << serve.Log();
    auto m = serve.MetricsAfterScans(2);
    ASSERT_TRUE(m.has_value()) << serve.Log();
    EXPECT_EQ(m->find("training_job=\"4242-llama-h200\""), std::string::npos) << *m;
    const std::string log = serve.Log();
    const std::string said = with_state ? "run expired training_job=4242-llama-h200 run=base"
                                        : "window not analysed: older than --retention "
                                          "training_job=4242-llama-h200 run=base";
    EXPECT_EQ(Count(log, said), 1u) << log;
    EXPECT_EQ(serve.Stop(), 0);
  }
  // The training log written now: the run is alive, and its latest window
  // is exported either way, however old its trace files (with --state it
  // was; without, its window was never analysed).
  fs::last_write_time(old_run + "/log.txt", fs::file_time_type::clock::now());
  for (const bool with_state : {false, true}) {
    SCOPED_TRACE(with_state ? "live log, with --state" : "live log, without --state");
    std::vector<std::string> flags = FastFlags(jobs);
    if (with_state) flags.insert(flags.end(), {"--state", state});
    Serve serve(tmp, flags, with_state ? "live_with_state" : "live_without_state");
    ASSERT_GT(serve.port(), 0) << serve.Log();
    auto m = serve.WaitFor([&](const std::string& t) {
      return Sample(t, "profwatch_window_gpus", old_labels) == 1.0 &&
             Sample(t, "profwatch_training_step", old_labels).has_value();
    });
    EXPECT_TRUE(m.has_value()) << serve.Log();
    EXPECT_EQ(serve.Stop(), 0);
  }
}

TEST(ServeTest, PollingModeFindsAWindowWithoutInotify) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  std::vector<std::string> flags = FastFlags(jobs);
  flags.push_back("--no-inotify");
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.Metrics().has_value());
  // Created after start: only the timed rescan can find it.
  WriteTrace(ProfileDir(jobs, "jobP", "runP") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  ASSERT_TRUE(serve.WaitFor(HasGpus("jobP", "runP", 2))) << serve.Log();
  EXPECT_NE(serve.Log().find("backend=poll"), std::string::npos);
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeTest, NewJobCreatedLaterIsPickedUpWithInotify) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  // A long poll interval: discovery must come from inotify hints.
  Serve serve(tmp, {"--watch", jobs, "--settle", "1s", "--poll-interval", "1h"});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.Metrics().has_value());
  WriteTrace(ProfileDir(jobs, "jobI", "runI") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  ASSERT_TRUE(serve.WaitFor(HasGpus("jobI", "runI", 2), 15s)) << serve.Log();
  EXPECT_NE(serve.Log().find("backend=inotify"), std::string::npos);
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeTest, ConfigFileIsReadAndReloadedOnSighup) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string cfg = tmp.Sub("profwatch.yaml");
  WriteFile(cfg, "watch: [" + jobs +
                     "]\nsettle: 1s\npoll-interval: 1s\nexpected-gpus: 4\nwindow-timeout: 3s\n");
  WriteTrace(ProfileDir(jobs, "jobC", "runC") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  Serve serve(tmp, {"--config", cfg});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  // 2 of 4 GPUs: held (not exported) until the window timeout, then exported
  // incomplete.
  ASSERT_TRUE(serve.WaitForLog("window held: fewer gpus than --expected-gpus")) << serve.Log();
  {
    auto held = serve.Metrics();
    ASSERT_TRUE(held.has_value());
    EXPECT_FALSE(Sample(*held, "profwatch_window_gpus", {{"run", "runC"}}).has_value()) << *held;
  }
  auto m = serve.WaitFor(HasGpus("jobC", "runC", 2));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  Labels run = {{"training_job", "jobC"}, {"run", "runC"}};
  EXPECT_EQ(Sample(*m, "profwatch_window_expected_gpus", run), 4);
  EXPECT_EQ(Sample(*m, "profwatch_window_incomplete", run), 1);
  EXPECT_NE(serve.Log().find("gpu count differs from expected"), std::string::npos);
  // Reload with another expectation; a new window is judged by it.
  WriteFile(cfg, "watch: [" + jobs +
                     "]\nsettle: 1s\npoll-interval: 1s\nexpected-gpus: 2\nwindow-timeout: 3s\n");
  serve.Signal(SIGHUP);
  ASSERT_TRUE(serve.WaitForLog("configuration reloaded")) << serve.Log();
  WriteTrace(ProfileDir(jobs, "jobC", "runC") + "/2024_03_01_13_00_00/h0.trace.json.gz", 2);
  m = serve.WaitFor(
      [&](const std::string& t) { return WindowShown(t, "2024_03_01_13_00_00").has_value(); });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_expected_gpus", run), 2);
  EXPECT_EQ(Sample(*m, "profwatch_window_incomplete", run), 0);
  // A broken file on reload: one warning naming it, the daemon keeps going.
  WriteFile(cfg, "watch: [" + jobs + "]\ncolour: blue\n");
  serve.Signal(SIGHUP);
  EXPECT_TRUE(
      serve.WaitForLog("reload failed, keeping the running configuration error=\"config file " +
                       cfg + ": unknown flag 'colour'"))
      << serve.Log();
  EXPECT_EQ(serve.Log().find("profwatch serve: config file"), std::string::npos) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeTest, MetricsPassPromtoolCheck) {
  if (testing::RunCommand("command -v promtool").exit_code != 0) {
    GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  }
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string prof = ProfileDir(jobs, "jobA", "run1");
  WriteTrace(prof + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  WriteFile(prof + "/2024_03_01_12_00_00/h1.trace.json.gz", testing::Gzip("garbage"));
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return HasGpus("jobA", "run1", 2)(t) &&
           Sample(t, "profwatch_window_errors_total").has_value() &&
           Sample(t, "profwatch_analysis_duration_seconds_count").has_value();
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  WriteFile(tmp.Sub("metrics.txt"), *m);
  testing::CommandResult r =
      testing::RunCommand("promtool check metrics < '" + tmp.Sub("metrics.txt") + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");
  EXPECT_EQ(serve.Stop(), 0);
}

// Issue #22: the daemon exports the diagnosis of a window with a serial
// blocker and a stretched GPU with the values `analyze --format json` reports.
TEST(ServeTest, DiagnosisMetricsEqualWhatAnalyzeReports) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string ts = ProfileDir(jobs, "diag", "r1") + "/2026_11_25_10_00_00";
  std::filesystem::create_directories(ts);
  const testing::DiagnosisWindow w = testing::WriteDiagnosisWindow(ts, 9);
  const nlohmann::json want = AnalyzeJson(ts, "--rules nvidia");
  ASSERT_EQ(want["gpus"], 8) << want.dump();
  // The per-family and per-region figures are detail (issue #49).
  std::vector<std::string> flags = FastFlags(jobs, {"--rules", "nvidia", "--metrics-detail"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor(HasGpus("diag", "r1", 8));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  auto near = [](std::optional<double> got, double expected) {
    return got && std::abs(*got - expected) <= 1e-12 * std::max(1.0, std::abs(expected));
  };
  const Labels run = {{"training_job", "diag"}, {"run", "r1"}};
  bool blocker_seen = false;
  for (const auto& f : want["families"]) {
    Labels l = run;
    l["family"] = f["family"];
    // A family that ran nothing is null in the JSON (issue #65); detail
    // exports its series at 0.
    auto figure = [&](const char* key) { return f[key].is_null() ? 0.0 : f[key].get<double>(); };
    EXPECT_TRUE(near(Sample(*m, "profwatch_family_exclusive_seconds", l),
                     figure("exclusive_seconds_per_gpu_step")))
        << f.dump();
    EXPECT_TRUE(near(Sample(*m, "profwatch_family_idle_before_seconds", l),
                     figure("idle_before_seconds_per_gpu_step")))
        << f.dump();
    blocker_seen = blocker_seen ||
                   (f["family"] == "nccl" && f["exclusive_seconds_per_gpu_step"].get<double>() > 0);
  }
  EXPECT_TRUE(blocker_seen) << want["families"].dump();
  ASSERT_EQ(want["regions"].size(), w.region_ps.size()) << want["regions"].dump();
  for (const auto& r : want["regions"]) {
    Labels l = run;
    l["region"] = r["region"];
    EXPECT_TRUE(near(Sample(*m, "profwatch_region_kernel_seconds", l),
                     r["kernel_seconds_per_gpu_step"].get<double>()))
        << r.dump();
  }
  EXPECT_TRUE(
      near(Sample(*m, "profwatch_straggler_ratio", run), want["straggler"]["ratio"].get<double>()))
      << *m;
  EXPECT_EQ(Sample(*m, "profwatch_straggler_info",
                   {{"training_job", "diag"}, {"host", w.slow_host}, {"device", w.slow_device}}),
            1.0)
      << *m;
  for (const auto& [quantile, key] :
       std::map<std::string, std::string>{{"0", "min"}, {"0.5", "median"}, {"1", "max"}}) {
    Labels l = run;
    l["quantile"] = quantile;
    EXPECT_TRUE(near(Sample(*m, "profwatch_gpu_compute_busy_seconds", l),
                     want["gpu_compute_busy_seconds"][key].get<double>()))
        << quantile << "\n"
        << *m;
  }
}

// --- profiling cycles (issue #32) -------------------------------------------

constexpr const char* kStallFirst = "vm_1481.1795652969892807939.pt.trace.json.gz";
constexpr const char* kStallSecond = "vm_1481.1795652970610113897.pt.trace.json.gz";

// The history file's lines.
std::vector<std::string> HistoryLines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// The "window" of every history line, sorted.
std::vector<std::string> HistoryWindows(const std::string& path) {
  std::vector<std::string> out;
  for (const std::string& l : HistoryLines(path)) {
    out.push_back(nlohmann::json::parse(l)["window"].get<std::string>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Copies one torch cycle file of the real stalled run into the watched run.
void LandCycle(const std::string& fixture_run, const std::string& run, const char* name) {
  fs::create_directories(run + "/profiler");
  // Written under a hidden name and renamed, as a finished file lands.
  const std::string tmp = run + "/profiler/." + name;
  fs::copy_file(fixture_run + "/profiler/" + name, tmp);
  fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write);
  fs::rename(tmp, run + "/profiler/" + name);
}

const Labels kTorchRun = {{"training_job", "4343-gpt-h200-torch"}, {"run", "stall20"}};

// The torch run exports the cycle captured at `ns` (its file name's
// time.time_ns()): the window's start is that second.
std::function<bool(const std::string&)> ExportsWindow(const std::string& ns) {
  return [=](const std::string& m) {
    return Sample(m, "profwatch_window_start_timestamp_seconds", kTorchRun) ==
           static_cast<double>(std::stoll(ns) / 1'000'000'000);
  };
}

TEST(ServeCyclesTest, TwoTorchCyclesLandingTogetherAreTwoWindowsLatestExported) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(fixture, "real/h200/jobs/4343-gpt-h200-torch/stall20");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  const std::string history = tmp.Sub("history.jsonl");
  std::vector<std::string> flags = FastFlags(jobs, {"--history", history});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1)) << serve.Log();
  const std::string run = jobs + "/4343-gpt-h200-torch/stall20";
  LandCycle(fixture, run, kStallFirst);
  LandCycle(fixture, run, kStallSecond);
  // Both cycles analysed (each to --history), the second one exported.
  auto m = serve.WaitFor([&](const std::string& text) {
    return ExportsWindow("1795652970610113897")(text) && HistoryLines(history).size() == 2;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_trace_files", kTorchRun), 1);
  EXPECT_EQ(HistoryWindows(history),
            (std::vector<std::string>{"1795652969892807939", "1795652970610113897"}));
  for (const std::string& l : HistoryLines(history)) {
    const nlohmann::json j = nlohmann::json::parse(l);
    int64_t kernels = 0;
    for (const auto& d : j["report"]["devices"]) kernels += d["kernels"].get<int64_t>();
    EXPECT_EQ(kernels, 699) << j["window"];
  }
  EXPECT_EQ(Sample(*m, "profwatch_windows_superseded_total"), 0);
  EXPECT_EQ(serve.Stop(), 0);
}

// Copies a fixture file or tree beside the watched root and renames it into
// place, as a finished file lands.
void LandCopy(const TempDir& tmp, const std::string& from, const std::string& to) {
  const std::string staged = tmp.Sub("staged");
  fs::remove_all(staged);
  fs::copy(from, staged, fs::copy_options::recursive);
  fs::create_directories(fs::path(to).parent_path());
  fs::rename(staged, to);
}

// `profwatch analyze --format json RUN`: what serve must export.
nlohmann::json AnalyzeRunJson(const std::string& run) {
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                               "' analyze --format json '" + run + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out.substr(0, r.out.find('\n')))
                          : nlohmann::json::object();
}

// Issue #32: the daemon exports the regions `analyze` finds in the real JAX
// run whose step ran as one CUDA graph (placed by the HLO schedule).
TEST(ServeRegionsTest, CommandBufferRunExportsWhatAnalyzeReports) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(fixture, "real/h200/jobs/4242-llama-h200/base");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(tmp, FastFlags(jobs, {"--metrics-detail"}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1)) << serve.Log();
  const std::string run = jobs + "/4242-llama-h200/base";
  LandCopy(tmp, fixture + "/tensorboard", run + "/tensorboard");
  const Labels labels = {{"training_job", "4242-llama-h200"}, {"run", "base"}};
  auto m = serve.WaitFor([&](const std::string& text) {
    return Sample(text, "profwatch_region_coverage_ratio", labels).has_value();
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  const nlohmann::json j = AnalyzeRunJson(run);
  EXPECT_GE(j["region_coverage"].get<double>(), 0.75);
  EXPECT_NEAR(*Sample(*m, "profwatch_region_coverage_ratio", labels),
              j["region_coverage"].get<double>(), 1e-9);
  for (const auto& region : j["regions"]) {
    Labels l = labels;
    l["region"] = region["region"];
    const auto exported = Sample(*m, "profwatch_region_kernel_seconds", l);
    ASSERT_TRUE(exported.has_value()) << region.dump();
    EXPECT_NEAR(*exported, region["kernel_seconds_per_gpu_step"].get<double>(), 1e-9);
  }
  EXPECT_EQ(serve.Stop(), 0);
}

// Issue #33: the daemon exports the FLOP figures `analyze` reports for the
// real PyTorch run profiled with record_shapes (its log gives the step).
TEST(ServeFlopsTest, RecordShapesRunExportsWhatAnalyzeReports) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(fixture, "real/h200/jobs/4545-gpt-h200-flops/flops");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1)) << serve.Log();
  const std::string run = jobs + "/4545-gpt-h200-flops/flops";
  LandCopy(tmp, fixture + "/log.txt", run + "/log.txt");
  const std::string latest = "/profiler/vm_442.1795655714547247741.pt.trace.json.gz";
  LandCopy(tmp, fixture + latest, run + latest);
  const Labels labels = {{"training_job", "4545-gpt-h200-flops"}, {"run", "flops"}};
  auto m = serve.WaitFor([&](const std::string& text) {
    return Sample(text, "profwatch_mfu_ratio", labels).has_value();
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  const nlohmann::json f = AnalyzeRunJson(run)["flops"];
  ASSERT_TRUE(f.is_object());
  for (const char* kind : {"matmul", "attention"}) {
    Labels l = labels;
    l["kind"] = kind;
    EXPECT_NEAR(*Sample(*m, "profwatch_window_flops_per_gpu_step", l),
                f[std::string(kind) + "_per_gpu_step"].get<double>(), 1.0)
        << kind;
  }
  // No convolution ran: a kind with no FLOPs counted is not exported by
  // default (issue #49), never 0.
  EXPECT_EQ(f["conv_per_gpu_step"].get<double>(), 0.0);
  Labels conv = labels;
  conv["kind"] = "conv";
  EXPECT_FALSE(Sample(*m, "profwatch_window_flops_per_gpu_step", conv).has_value());
  EXPECT_NEAR(*Sample(*m, "profwatch_model_flops_per_second", labels),
              f["model_per_second"].get<double>(), 1e3);
  EXPECT_NEAR(*Sample(*m, "profwatch_mfu_ratio", labels), f["mfu"].get<double>(), 1e-9);
  for (const auto& fam : f["families"]) {
    Labels l = labels;
    l["family"] = fam["family"];
    EXPECT_NEAR(*Sample(*m, "profwatch_achieved_flops_per_second", l),
                fam["achieved_per_second"].get<double>(), 1e3);
  }
  // Issue #51: the raw bytes sums of every family with a bytes model, none
  // for a family without one.
  const nlohmann::json j = AnalyzeRunJson(run);
  int with_bytes = 0;
  for (const auto& fam : j["families"]) {
    Labels l = labels;
    l["family"] = fam["family"];
    const auto bytes = Sample(*m, "profwatch_family_bytes_per_gpu_step", l);
    const auto seconds = Sample(*m, "profwatch_family_bytes_modeled_seconds_per_gpu_step", l);
    if (!fam["bytes_per_gpu_step"].is_number()) {
      EXPECT_FALSE(bytes.has_value()) << fam["family"];
      EXPECT_FALSE(seconds.has_value()) << fam["family"];
      continue;
    }
    ++with_bytes;
    ASSERT_TRUE(bytes.has_value() && seconds.has_value()) << fam["family"];
    EXPECT_NEAR(*bytes, fam["bytes_per_gpu_step"].get<double>(), 1.0) << fam["family"];
    EXPECT_NEAR(*seconds, fam["bytes_modeled_seconds_per_gpu_step"].get<double>(), 1e-12);
  }
  EXPECT_GE(with_bytes, 4) << j["families"].dump();
  EXPECT_NEAR(*Sample(*m, "profwatch_bytes_coverage_ratio", labels),
              j["bytes"]["bytes_coverage"].get<double>(), 1e-9);
  EXPECT_EQ(*Sample(*m, "profwatch_peak_hbm_bytes_per_second", labels), 4.8e12);
  EXPECT_EQ(serve.Stop(), 0);
}

// Issue #38, absent is absent: the PyTorch run profiled without
// record_shapes counted no FLOP, so the daemon exports no FLOP figure (and,
// issue #51, no bytes series for any of its families) for
// it (it exported profwatch_mfu_ratio 0 and profwatch_model_flops_per_second
// 0: a dashboard at 0% MFU for a run at ~45%); the JAX run's MFU is there
// by default (its device named by the xplane beside the JSON read), the
// figure analyze reports.
TEST(ServeFlopsTest, NoFlopMetricForARunWithoutShapesAndJaxMfuByDefault) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(torch, "real/h200/jobs/4343-gpt-h200-torch/stall20");
  PROFWATCH_REQUIRE_SHARED_FIXTURE(jax, "real/h200/jobs/4242-llama-h200/base");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1)) << serve.Log();
  const std::string torch_run = jobs + "/4343-gpt-h200-torch/stall20";
  LandCopy(tmp, torch + "/log.txt", torch_run + "/log.txt");
  LandCycle(torch, torch_run, kStallSecond);
  const std::string jax_run = jobs + "/4242-llama-h200/base";
  LandCopy(tmp, jax + "/log.txt", jax_run + "/log.txt");
  LandCopy(tmp, jax + "/tensorboard", jax_run + "/tensorboard");
  const Labels jax_labels = {{"training_job", "4242-llama-h200"}, {"run", "base"}};
  auto m = serve.WaitFor([&](const std::string& text) {
    return ExportsWindow("1795652970610113897")(text) &&
           Sample(text, "profwatch_step_minus_kernel_seconds", kTorchRun).has_value() &&
           Sample(text, "profwatch_mfu_ratio", jax_labels).has_value();
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  for (const char* name :
       {"profwatch_mfu_ratio", "profwatch_model_flops_per_second",
        "profwatch_window_flops_per_gpu_step", "profwatch_achieved_flops_per_second",
        "profwatch_family_bytes_per_gpu_step",
        "profwatch_family_bytes_modeled_seconds_per_gpu_step", "profwatch_bytes_coverage_ratio",
        "profwatch_peak_hbm_bytes_per_second"}) {
    for (const std::string& line : RunLines(*m)) {
      EXPECT_FALSE(line.starts_with(std::string(name) + "{") &&
                   line.find("run=\"stall20\"") != std::string::npos)
          << line;
    }
  }
  const nlohmann::json f = AnalyzeRunJson(jax_run)["flops"];
  EXPECT_NEAR(f["mfu"].get<double>(), 0.537, 0.0005);
  EXPECT_NEAR(*Sample(*m, "profwatch_mfu_ratio", jax_labels), f["mfu"].get<double>(), 1e-9);
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeCyclesTest, CyclesLandingSecondsApartAreNamedByCaptureTime) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(fixture, "real/h200/jobs/4343-gpt-h200-torch/stall20");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  const std::string history = tmp.Sub("history.jsonl");
  std::vector<std::string> flags = FastFlags(jobs, {"--history", history});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const std::string run = jobs + "/4343-gpt-h200-torch/stall20";
  LandCycle(fixture, run, kStallFirst);
  ASSERT_TRUE(serve.WaitFor(ExportsWindow("1795652969892807939"))) << serve.Log();
  // The second cycle lands after the first was analysed: its file's mtime is
  // seconds later, its name still carries its capture time.
  ASSERT_TRUE(serve.WaitScans(2)) << serve.Log();
  LandCycle(fixture, run, kStallSecond);
  auto m = serve.WaitFor([&](const std::string& text) {
    return ExportsWindow("1795652970610113897")(text) && HistoryLines(history).size() == 2;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_trace_files", kTorchRun), 1);
  EXPECT_EQ(HistoryWindows(history),
            (std::vector<std::string>{"1795652969892807939", "1795652970610113897"}));
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeCyclesTest, OlderCycleFoundAtStartupIsCountedAndLoggedNotAnalysed) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(fixture, "real/h200/jobs/4343-gpt-h200-torch/stall20");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string run = jobs + "/4343-gpt-h200-torch/stall20";
  LandCycle(fixture, run, kStallFirst);
  LandCycle(fixture, run, kStallSecond);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor(ExportsWindow("1795652970610113897"));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_windows_superseded_total"), 1);
  EXPECT_TRUE(serve.WaitForLog("older window found at startup not analysed")) << serve.Log();
  EXPECT_NE(serve.Log().find("1795652969892807939"), std::string::npos) << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

// --- serve --shard (issue 31) ----------------------------------------------

// job-00 .. job-11 and the shard each has under Prometheus' hashmod, computed
// independently of profwatch with Python:
//   int.from_bytes(hashlib.md5(job.encode()).digest()[8:], "big") % n
constexpr int kShardJobs = 12;
constexpr int kShardOf3[kShardJobs] = {2, 0, 2, 1, 2, 1, 1, 0, 2, 0, 1, 1};
constexpr int kShardOf2[kShardJobs] = {0, 1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1};

std::string ShardJob(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "job-%02d", i);
  return name;
}

// The training_job of every profwatch_window_gpus sample, repeats kept.
std::multiset<std::string> ExportedJobs(const std::string& text) {
  std::multiset<std::string> jobs;
  for (const std::string& l : RunLines(text)) {
    if (l.rfind("profwatch_window_gpus{", 0) != 0) continue;
    const size_t at = l.find("training_job=\"") + 14;
    jobs.insert(l.substr(at, l.find('"', at) - at));
  }
  return jobs;
}

// The jobs `shard` of `shards` owns (from the tables above).
std::multiset<std::string> OwnedJobs(const int* table, int shard) {
  std::multiset<std::string> jobs;
  for (int i = 0; i < kShardJobs; ++i) {
    if (table[i] == shard) jobs.insert(ShardJob(i));
  }
  return jobs;
}

std::vector<std::string> ShardFlags(const std::string& jobs, const std::string& shard,
                                    const std::string& state) {
  std::vector<std::string> f = FastFlags(jobs, {"--shard", shard, "--state", state});
  return f;
}

// Three daemons over one root export every job exactly once, each on its
// hashmod shard; re-sharding 3 -> 2 (two of them restarted with /2 and their
// old state files, as StatefulSet pods keep theirs) covers every job exactly
// once again, and neither restarted daemon exports, even from its state file
// before its first scan, a job it no longer owns.
TEST(ServeShardTest, ThreeShardsExportEveryJobOnceAndResharding3To2CoversEveryJobOnce) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  for (int i = 0; i < kShardJobs; ++i) {
    WriteTrace(ProfileDir(jobs, ShardJob(i), "run-a") + "/2024_03_01_12_00_00/h0.trace.json.gz",
               1 + i % 4);
  }
  auto state_of = [&](int i) { return tmp.Sub("state-" + std::to_string(i) + ".json"); };
  std::multiset<std::string> all;
  {
    std::vector<std::unique_ptr<Serve>> shards;
    for (int i = 0; i < 3; ++i) {
      // The pod-name form for one of them, as the StatefulSet passes it.
      const std::string shard = i == 2 ? "profwatch-2/3" : std::to_string(i) + "/3";
      shards.push_back(std::make_unique<Serve>(tmp, ShardFlags(jobs, shard, state_of(i)),
                                               "shard" + std::to_string(i) + "of3"));
      ASSERT_GT(shards.back()->port(), 0) << shards.back()->Log();
    }
    for (int i = 0; i < 3; ++i) {
      const std::multiset<std::string> want = OwnedJobs(kShardOf3, i);
      auto m = shards[i]->WaitFor([&](const std::string& t) { return ExportedJobs(t) == want; });
      ASSERT_TRUE(m.has_value()) << shards[i]->Log();
      EXPECT_EQ(Sample(*m, "profwatch_shard_info", {{"shard", std::to_string(i)}, {"shards", "3"}}),
                1);
      EXPECT_TRUE(shards[i]->WaitForLog("shard shard=" + std::to_string(i) + " shards=3"));
      auto landing = HttpGet(shards[i]->port(), "/");
      ASSERT_TRUE(landing.has_value());
      EXPECT_NE(landing->find("Shard " + std::to_string(i) + " of 3"), std::string::npos);
      // A full scan later, still exactly its own jobs.
      ASSERT_TRUE(shards[i]->WaitScans(1));
      auto again = shards[i]->Metrics();
      ASSERT_TRUE(again.has_value());
      const std::multiset<std::string> got = ExportedJobs(*again);
      EXPECT_EQ(got, want);
      all.insert(got.begin(), got.end());
    }
    for (auto& s : shards) EXPECT_EQ(s->Stop(), 0);
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(kShardJobs));
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), static_cast<size_t>(kShardJobs));

  // Re-sharding 3 -> 2: shards 0 and 1 restart as 0/2 and 1/2 with their
  // state files; shard 2 is gone.
  std::multiset<std::string> after;
  std::vector<std::unique_ptr<Serve>> shards;
  for (int i = 0; i < 2; ++i) {
    shards.push_back(
        std::make_unique<Serve>(tmp, ShardFlags(jobs, std::to_string(i) + "/2", state_of(i)),
                                "shard" + std::to_string(i) + "of2"));
    ASSERT_GT(shards.back()->port(), 0) << shards.back()->Log();
    const std::multiset<std::string> want = OwnedJobs(kShardOf2, i);
    // What the state file restored, before the first scan: only owned jobs.
    auto first = shards[i]->Metrics();
    ASSERT_TRUE(first.has_value());
    for (const std::string& job : ExportedJobs(*first)) {
      EXPECT_EQ(want.count(job), 1u) << job << " restored by shard " << i << "/2";
    }
  }
  for (int i = 0; i < 2; ++i) {
    const std::multiset<std::string> want = OwnedJobs(kShardOf2, i);
    auto m = shards[i]->WaitFor([&](const std::string& t) { return ExportedJobs(t) == want; });
    ASSERT_TRUE(m.has_value()) << shards[i]->Log();
    after.insert(want.begin(), want.end());
  }
  EXPECT_EQ(after.size(), static_cast<size_t>(kShardJobs));
  EXPECT_EQ(std::set<std::string>(after.begin(), after.end()).size(),
            static_cast<size_t>(kShardJobs));
  for (auto& s : shards) EXPECT_EQ(s->Stop(), 0);
  // Each state file keeps only its own runs.
  for (int i = 0; i < 2; ++i) {
    const std::string state = ReadFile(state_of(i));
    for (int j = 0; j < kShardJobs; ++j) {
      const bool present = state.find("\"" + ShardJob(j) + "\"") != std::string::npos;
      EXPECT_EQ(present, kShardOf2[j] == i) << ShardJob(j) << " in " << state_of(i);
    }
  }
}

// Issue #40: the daemon exports the collective figures `analyze` reports for
// the real 2-rank NCCL sample (all-reduce and broadcast with sizes); kinds
// that did not run have no series.
TEST(ServeCollectivesTest, NcclRunExportsWhatAnalyzeReports) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(fixture, "real/kineto/a100x2_nccl_data.json.gz");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1)) << serve.Log();
  const std::string run = jobs + "/ddp-a100/r1";
  LandCopy(tmp, fixture, run + "/profiler/node0_2910249.1795655714547247741.pt.trace.json.gz");
  const Labels labels = {{"training_job", "ddp-a100"}, {"run", "r1"}};
  Labels all_reduce = labels;
  all_reduce["collective"] = "all_reduce";
  auto m = serve.WaitFor([&](const std::string& text) {
    return Sample(text, "profwatch_collective_bus_bandwidth_bytes_per_second", all_reduce)
        .has_value();
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  const nlohmann::json j = AnalyzeRunJson(run);
  ASSERT_EQ(j["collectives"].size(), 2u) << j.dump();
  for (const auto& c : j["collectives"]) {
    Labels l = labels;
    l["collective"] = c["collective"];
    EXPECT_NEAR(*Sample(*m, "profwatch_collective_seconds", l),
                c["kernel_seconds_per_gpu_step"].get<double>(), 1e-12);
    EXPECT_NEAR(*Sample(*m, "profwatch_collective_exposed_seconds", l),
                c["exposed_seconds_per_gpu_step"].get<double>(), 1e-12);
    EXPECT_NEAR(*Sample(*m, "profwatch_collective_calls", l), c["calls_per_gpu_step"].get<double>(),
                1e-12);
    EXPECT_NEAR(*Sample(*m, "profwatch_collective_bytes", l), c["bytes_per_gpu_step"].get<double>(),
                1e-3);
    EXPECT_NEAR(*Sample(*m, "profwatch_collective_bus_bandwidth_bytes_per_second", l),
                c["busbw_bytes_per_second"].get<double>(), 1e-3);
    EXPECT_NEAR(*Sample(*m, "profwatch_collective_algorithm_bandwidth_bytes_per_second", l),
                c["algbw_bytes_per_second"].get<double>(), 1e-3);
  }
  Labels gather = labels;
  gather["collective"] = "all_gather";
  EXPECT_FALSE(Sample(*m, "profwatch_collective_seconds", gather).has_value());
  EXPECT_EQ(serve.Stop(), 0);
}

// Issue #40: a generated Kineto window with collectives of every kind
// (profwatch-tracegen kineto): the daemon exports, per kind, what `analyze`
// reports; `other` (no size) has no bytes or bandwidth series.
TEST(ServeCollectivesTest, GeneratedEveryKindWindowExportsWhatAnalyzeReports) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  const std::string generated = tmp.Sub("gen/node0_1.1.pt.trace.json.gz");
  auto gen = testing::RunCommand("'" + testing::BinaryPath("profwatch-tracegen") +
                                 "' kineto --gpus 2 --steps 3 --seed 9 --out '" + generated + "'");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1)) << serve.Log();
  const std::string run = jobs + "/gen-kinds/r1";
  LandCopy(tmp, generated, run + "/profiler/node0_1.1.pt.trace.json.gz");
  const Labels labels = {{"training_job", "gen-kinds"}, {"run", "r1"}};
  Labels reduce = labels;
  reduce["collective"] = "reduce";
  auto m = serve.WaitFor([&](const std::string& text) {
    return Sample(text, "profwatch_collective_bus_bandwidth_bytes_per_second", reduce).has_value();
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  const nlohmann::json j = AnalyzeRunJson(run);
  ASSERT_EQ(j["collectives"].size(), 8u) << j.dump();
  for (const auto& c : j["collectives"]) {
    SCOPED_TRACE(c.dump());
    Labels l = labels;
    l["collective"] = c["collective"];
    auto near = [&](const char* metric, const nlohmann::json& want) {
      const auto got = Sample(*m, metric, l);
      if (want.is_null()) {
        EXPECT_FALSE(got.has_value()) << metric;
        return;
      }
      ASSERT_TRUE(got.has_value()) << metric;
      EXPECT_NEAR(*got, want.get<double>(), std::abs(want.get<double>()) * 1e-9) << metric;
    };
    near("profwatch_collective_seconds", c["kernel_seconds_per_gpu_step"]);
    near("profwatch_collective_exposed_seconds", c["exposed_seconds_per_gpu_step"]);
    near("profwatch_collective_calls", c["calls_per_gpu_step"]);
    near("profwatch_collective_bytes", c["bytes_per_gpu_step"]);
    near("profwatch_collective_bus_bandwidth_bytes_per_second", c["busbw_bytes_per_second"]);
    near("profwatch_collective_algorithm_bandwidth_bytes_per_second", c["algbw_bytes_per_second"]);
  }
  EXPECT_EQ(serve.Stop(), 0);
}

// --- what a window keeps, and no crash loop (issue #45) ----------------------

// Peak resident set of a live process, MiB (/proc/<pid>/status VmHWM).
double PeakRssMiB(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

// A command's exit code, peak resident set (MiB, getrusage of the child:
// its VmHWM at exit) and stderr; killed (exit -1) past `limit`.
struct Measured {
  int exit_code = -1;
  double peak_mib = -1;
  double seconds = 0;
  std::string err;
};
Measured RunMeasured(const std::vector<std::string>& argv, const TempDir& tmp,
                     std::chrono::seconds limit) {
  const std::string err_path = tmp.Sub("measured.err");
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open("/dev/null", O_WRONLY);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  Measured m;
  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, WNOHANG, &usage) == 0) {
    if (std::chrono::steady_clock::now() - start > limit) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &usage);
      m.err = "killed past the limit";
      return m;
    }
    std::this_thread::sleep_for(20ms);  // polling interval of a bounded wait
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  m.err = ReadFile(err_path);
  return m;
}

// profwatch-tracegen with `args`; its exit code is checked by the caller.
testing::CommandResult Tracegen(const std::string& args) {
  return testing::RunCommand("'" + testing::BinaryPath("profwatch-tracegen") + "' " + args);
}

// The hostile Kineto trace of the issue: distinct kernel names of 1 MiB each
// (64 times the 16 KiB name cap, each spanning many read chunks), landed at
// `to` whole. The plain build writes 600 of them (600 MB of JSON in under
// 3 MB of gzip): more than kKeepPeakMiB, so a reader that held what it read
// would fail the RSS bound. Under a sanitizer that bound is not checked (see
// kSanitizerHeap) and the volume buys nothing but time: 60 names there, each
// still cut and counted the same way.
constexpr int kLongNames = kSanitizerHeap ? 60 : 600;

void LandLongNames(const TempDir& tmp, const std::string& to) {
  const std::string gen = tmp.Sub("gen/long.pt.trace.json.gz");
  auto r = Tracegen("long-names --names " + std::to_string(kLongNames) +
                    " --name-bytes 1048576 --out '" + gen + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  LandCopy(tmp, gen, to);
}

constexpr double kKeepPeakMiB = 300;

// The analysis workers run --worker-nice above the daemon's own nice value
// (training and the scrape path go first); 0 keeps them at its priority.
// The workers and the scan thread are named.
TEST(ServeTest, WorkerNiceIsTheAnalysisThreadsPriority) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  for (const int nice : {7, 0}) {
    Serve serve(tmp, FastFlags(jobs, {"--workers", "3", "--worker-nice", std::to_string(nice)}),
                "nice" + std::to_string(nice));
    ASSERT_GT(serve.port(), 0) << serve.Log();
    const int own = getpriority(PRIO_PROCESS, static_cast<id_t>(serve.pid()));
    std::multiset<int> seen;
    // Each worker sets its priority and name as it starts, the scan thread
    // its name: wait for all of them.
    auto m = serve.WaitFor([&](const std::string&) {
      seen = ThreadNiceValues(serve.pid());
      return seen.count(own + nice) >= 3 && ThreadsNamed(serve.pid(), "profwatch-scan") == 1;
    });
    ASSERT_TRUE(m.has_value()) << "nice " << nice << ": " << ::testing::PrintToString(seen);
    if (nice != 0) {
      EXPECT_EQ(seen.count(own + nice), 3u) << ::testing::PrintToString(seen);
      EXPECT_GE(seen.count(own), 1u) << "the scrape path keeps the daemon's priority";
    }
    // The threads are named (top -H, perf, bench/run.py's CPU per scan).
    EXPECT_EQ(ThreadsNamed(serve.pid(), "profwatch-work"), 3u);
    EXPECT_EQ(ThreadsNamed(serve.pid(), "profwatch-scan"), 1u);
    EXPECT_EQ(serve.Stop(), 0);
  }
}

// "Max open files" of /proc/PID/limits: {soft, hard}.
std::pair<std::string, std::string> OpenFileLimits(pid_t pid) {
  std::istringstream in(testing::ReadFile("/proc/" + std::to_string(pid) + "/limits"));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("Max open files")) continue;
    std::istringstream fields(line.substr(std::string("Max open files").size()));
    std::string soft, hard;
    fields >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

// Issue #49: each followed training log holds a descriptor, so the default
// --max-followed-logs (4,096) alone is past the usual soft limit of 1,024
// (systemd's, most shells'): serve raises its soft limit to the hard one at
// start, and says so when even the hard limit is short of what it may hold.
TEST(ServeTest, OpenFileLimitIsRaisedToTheHardLimitAndAShortOneIsNamed) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  rlimit mine{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &mine), 0);
  if (mine.rlim_max <= 1024) GTEST_SKIP() << "hard open-file limit " << mine.rlim_max;
  rlimit low = mine;
  low.rlim_cur = 1024;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::optional<std::pair<std::string, std::string>> limits;
  std::string log;
  {
    // The daemon inherits the soft limit of 1,024.
    Serve serve(tmp, FastFlags(jobs), "nofile");
    setrlimit(RLIMIT_NOFILE, &mine);
    ASSERT_GT(serve.port(), 0) << serve.Log();
    limits = OpenFileLimits(serve.pid());
    log = serve.Log();
    EXPECT_EQ(serve.Stop(), 0);
  }
  ASSERT_TRUE(limits.has_value());
  EXPECT_EQ(limits->second, std::to_string(mine.rlim_max));
  EXPECT_EQ(limits->first, limits->second) << "soft limit not raised to the hard one";
  if (mine.rlim_max >= 4096 + 1024) {
    EXPECT_EQ(log.find("open-file limit below"), std::string::npos) << log;
  }
  // More logs to follow than the hard limit allows: named at start.
  const std::string logs = std::to_string(mine.rlim_max);
  Serve short_of(tmp, FastFlags(jobs, {"--max-followed-logs", logs}), "nofile-short");
  ASSERT_GT(short_of.port(), 0) << short_of.Log();
  EXPECT_TRUE(short_of.WaitForLog("open-file limit below what serve may hold")) << short_of.Log();
  const std::string text = short_of.Log();
  EXPECT_NE(text.find("limit=" + logs), std::string::npos) << text;
  EXPECT_NE(text.find("need=" + std::to_string(mine.rlim_max + 1024)), std::string::npos) << text;
  EXPECT_EQ(short_of.Stop(), 0);
}

// Names of 1 MiB beside a good run: the daemon stays up, exports the good
// run, keeps each name cut (counted) and never holds what it read.
TEST(ServeKeepTest, MegabyteKernelNamesBesideAGoodRunAreCutAndTheDaemonStaysSmall) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string evil = jobs + "/evil/r1/profiler/node0_1.1.pt.trace.json.gz";
  LandLongNames(tmp, evil);
  WriteTrace(ProfileDir(jobs, "good", "r1") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  // The claim is what is cut and kept, not scheduling: the workers keep the
  // daemon's priority, so a CPU-bound job beside the suite (which the
  // default nice would let go first) does not stretch the wait.
  Serve serve(tmp, FastFlags(jobs, {"--worker-nice", "0"}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels evil_run = {{"training_job", "evil"}, {"run", "r1"}};
  auto m = serve.WaitFor(
      [&](const std::string& t) {
        return HasGpus("good", "r1", 2)(t) && Sample(t, "profwatch_window_gpus", evil_run) == 1;
      },
      60s);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  Labels cut = evil_run;
  cut["reason"] = "name_cut";
  EXPECT_EQ(Sample(*m, "profwatch_window_dropped_events", cut), kLongNames) << *m;
  const double peak = PeakRssMiB(serve.pid());
  if (!kSanitizerHeap) {
    EXPECT_LE(peak, kKeepPeakMiB) << "VmHWM of the daemon";
  }
  EXPECT_NE(serve.Log().find("trace file over a keep cap, cut or summed under other path=" + evil +
                             " name_cut=" + std::to_string(kLongNames)),
            std::string::npos)
      << serve.Log();
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(ServeKeepTest, AnalyzeOfMegabyteKernelNamesStaysSmall) {
  TempDir tmp;
  const std::string file = tmp.Sub("long.pt.trace.json.gz");
  LandLongNames(tmp, file);
  const Measured m = RunMeasured({testing::BinaryPath("profwatch"), "analyze", file}, tmp, 60s);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  if (!kSanitizerHeap) {
    EXPECT_LE(m.peak_mib, kKeepPeakMiB) << "peak RSS of analyze";
  }
  EXPECT_NE(m.err.find("name_cut=" + std::to_string(kLongNames)), std::string::npos) << m.err;
}

// An xplane whose collective instructions carry 2,000,000 empty tuple
// shapes (4 MB on disk): the module is skipped as too complex at the
// HloLimits bound on shape leaves, in bounded time and memory; the trace's
// kernels are still counted.
TEST(ServeKeepTest, AnalyzeOfTwoMillionEmptyTupleShapesEndsSoonAndSmall) {
  TempDir tmp;
  const std::string out = tmp.Sub("w");
  auto r = Tracegen("jax-collectives --empty-tuple-shapes 2000000 --out '" + out + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string window = out + "/2025_01_15_10_00_00";
  const Measured m = RunMeasured(
      {testing::BinaryPath("profwatch"), "analyze", "--format", "json", window}, tmp, 60s);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  if (!kSanitizerHeap) {
    EXPECT_LE(m.peak_mib, kKeepPeakMiB) << "peak RSS of analyze";
  }
  EXPECT_NE(m.err.find("hlo module skipped reason=too_complex"), std::string::npos) << m.err;
  EXPECT_NE(m.err.find("shape leaves"), std::string::npos) << m.err;
}

// The journal's record of `window`, or null.
std::optional<nlohmann::json> JournalRecord(const std::string& journal, const std::string& window) {
  if (!fs::exists(journal)) return std::nullopt;
  std::istringstream in(ReadFile(journal));
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("window", "") == window) return j;
  }
  return std::nullopt;
}

// Waits (bounded) until the journal names `window` in flight: an analysis
// of it has begun and not ended.
// Waits until the journal names `window` in flight after `deaths` deaths:
// written by this daemon, not left by the one killed before it (the port
// is announced before the journal is read).
bool WaitInFlight(const std::string& journal, const std::string& window, int deaths) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = JournalRecord(journal, window);
    if (r && r->value("in_flight", false) && r->value("deaths", -1) == deaths) return true;
    std::this_thread::sleep_for(5ms);  // polling interval of a bounded wait
  }
  return false;
}

// A daemon killed (SIGKILL, as the kernel's OOM killer does) twice while
// analysing the same window: the next one does not analyse it again (no
// worker busy on it, nothing analysed), fails it with reason crashed for
// its run, and exports the good run. The window is slow by construction
// (kLongNames names of 1 MiB); each kill waits on the journal naming it in flight, and
// the journal after the kill still does (the kill was mid-analysis).
TEST(ServeKeepTest, KilledTwiceWhileAnalysingTheSameWindowItIsFailedNotAnalysedAgain) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string state = tmp.Sub("state.json");
  const std::string journal = state + ".inflight";
  const std::string window = "2024_03_01_12_00_00";
  LandLongNames(tmp, ProfileDir(jobs, "evil", "r1") + "/" + window + "/h0.trace.json.gz");
  WriteTrace(ProfileDir(jobs, "good", "r1") + "/2024_03_01_13_00_00/h0.trace.json.gz", 2);
  const std::vector<std::string> flags = FastFlags(jobs, {"--state", state});
  for (int death = 1; death <= 2; ++death) {
    Serve serve(tmp, flags, "life" + std::to_string(death));
    ASSERT_GT(serve.port(), 0) << serve.Log();
    ASSERT_TRUE(WaitInFlight(journal, window, death - 1)) << serve.Log();
    serve.Signal(SIGKILL);
    ASSERT_TRUE(serve.Stop() == -1) << "killed";
    auto r = JournalRecord(journal, window);
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->value("in_flight", false)) << "killed while analysing it";
    EXPECT_EQ(r->value("deaths", -1), death - 1) << r->dump();
    if (death == 2) {
      EXPECT_NE(serve.Log().find("window in flight when the daemon died, analysed again alone "
                                 "training_job=evil run=r1 window=" +
                                 window + " deaths=1"),
                std::string::npos)
          << serve.Log();
    }
  }
  Serve serve(tmp, flags, "life3");
  ASSERT_GT(serve.port(), 0) << serve.Log();
  const Labels crashed = {{"training_job", "evil"}, {"run", "r1"}, {"reason", "crashed"}};
  auto m = serve.WaitFor(
      [&](const std::string& t) {
        return Sample(t, "profwatch_window_failed", crashed) == 1 && HasGpus("good", "r1", 2)(t);
      },
      30s);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  // A fresh scrape: an error is counted before the snapshot that shows its
  // window is published, and a scrape collects the counters first.
  m = serve.Metrics();
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "crashed"}}), 1) << *m;
  m = serve.MetricsAfterScans(2);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_workers_busy"), 0) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "crashed"}}), 1) << *m;
  EXPECT_FALSE(Sample(*m, "profwatch_window_gpus", {{"training_job", "evil"}}).has_value());
  const std::string log = serve.Log();
  EXPECT_NE(log.find("the daemon died while analysing a window training_job=evil run=r1 window=" +
                     window + " deaths=2 next=\"failed as crashed"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("window analysis failed training_job=evil run=r1 window=" + window +
                     " reason=crashed"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("window analysed training_job=evil"), std::string::npos) << log;
  auto r = JournalRecord(journal, window);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->value("in_flight", true)) << "never begun a third time";
  EXPECT_EQ(serve.Stop(), 0);
}

}  // namespace
// --- budgets: one hostile file never holds the daemon ----------------------

// A gzip bomb of `{}` events: ~`inflated` bytes of JSON in about 1/1000 of it.
void WriteBomb(const std::string& path, uint64_t inflated) {
  testing::WriteFile(path, testing::GzipBomb("{\"traceEvents\":[", "{},", inflated, "{}]}"));
}

std::function<bool(const std::string&)> Busy(double n) {
  return [=](const std::string& m) { return Sample(m, "profwatch_workers_busy") == n; };
}

// SIGTERM while a worker is in the middle of a file that would take minutes
// (8 GiB of JSON, no budget reached): the stop flag ends the read at its next
// chunk and the process exits within the shutdown deadline; the window is
// left for the next start, not recorded as analysed or failed.
TEST(ServeTest, SigtermMidFileExitsWithinTheShutdownDeadline) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteBomb(ProfileDir(jobs, "jobB", "runB") + "/2024_03_01_12_00_00/h0.trace.json.gz", 8ull << 30);
  std::vector<std::string> flags = FastFlags(jobs, {"--state", tmp.Sub("state.json")});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor(Busy(1))) << serve.Log();
  EXPECT_EQ(serve.Stop(5s), 0) << serve.Log();
  EXPECT_NE(serve.Log().find("window analysis abandoned at shutdown"), std::string::npos)
      << serve.Log();
  EXPECT_EQ(serve.Log().find("reason=over_budget"), std::string::npos) << serve.Log();
}

// With the default workers, a run whose window takes long (a bomb within the
// default budgets) does not hold another run's window: the good run is
// exported while the bad window is still being read.
TEST(ServeTest, HostileWindowDoesNotHoldAGoodRun) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteBomb(ProfileDir(jobs, "jobBad", "runBad") + "/2024_03_01_12_00_00/h0.trace.json.gz",
            8ull << 30);
  Serve serve(tmp, FastFlags(jobs));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitFor(Busy(1))) << serve.Log();
  WriteTrace(ProfileDir(jobs, "jobGood", "runGood") + "/2024_03_01_12_00_00/h0.trace.json.gz", 2);
  // The good window's worker publishes it while still counted busy, and is
  // counted free in the next snapshot: wait for that one.
  auto m = serve.WaitFor([](const std::string& t) {
    return HasGpus("jobGood", "runGood", 2)(t) && Sample(t, "profwatch_workers_busy") == 1;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  // The bad window is still in its worker; nothing of it is exported.
  EXPECT_EQ(Sample(*m, "profwatch_workers_busy"), 1) << *m;
  EXPECT_FALSE(Sample(*m, "profwatch_window_gpus", {{"training_job", "jobBad"}}).has_value());
  EXPECT_EQ(serve.Stop(5s), 0) << serve.Log();
}

// A file past --file-max-bytes fails with its own reason, once: counted,
// logged once, not retried while it does not change; the window's other
// file is exported. Healthy windows leave the stuck gauge at 0 and
// /-/ready at 200.
TEST(ServeTest, FileOverBudgetIsOneErrorOfItsOwnReasonNeverRetried) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string dir = ProfileDir(jobs, "jobO", "runO") + "/2024_03_01_12_00_00";
  WriteBomb(dir + "/h0.trace.json.gz", 64ull << 20);
  WriteTrace(dir + "/h1.trace.json.gz", 2);
  std::vector<std::string> flags = FastFlags(jobs, {"--file-max-bytes", "1048576"});
  Serve serve(tmp, flags);
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor(HasGpus("jobO", "runO", 2));
  ASSERT_TRUE(m.has_value()) << serve.Log();
  // A fresh scrape: an error is counted before the snapshot that shows its
  // window is published, and a scrape collects the counters first.
  m = serve.Metrics();
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "over_budget"}}), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_window_failed", {{"reason", "over_budget"}}), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_workers_stuck"), 0) << *m;
  EXPECT_EQ(testing::HttpGet(serve.port(), "/-/ready"), "OK\n");
  m = serve.MetricsAfterScans(3);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_window_errors_total", {{"reason", "over_budget"}}), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_workers_busy"), 0) << *m;
  const std::string log = serve.Log();
  const size_t first = log.find("reason=over_budget");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("reason=over_budget", first + 1), std::string::npos) << log;
  EXPECT_NE(log.find("--file-max-bytes"), std::string::npos) << log;
  EXPECT_EQ(serve.Stop(), 0);
}

}  // namespace profwatch
