// Issue #49: what a run costs the operator's Prometheus. The real daemon
// over the real H200 runs (../shared/fixtures/real/h200): series and bytes
// per run within the budget by default, and exactly the counts the README's
// "Series per run" table states, with and without --metrics-detail.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/serve_harness.h"
#include "testing/test_util.h"

namespace profwatch {
namespace {

namespace fs = std::filesystem;
using testing::Sample;
using testing::Serve;
using testing::TempDir;

// The budget of issue #49, per run, on the default flags.
constexpr size_t kMaxSeriesPerRun = 90;
constexpr size_t kMaxBytesPerRun = 10 * 1024;

struct Cost {
  size_t series = 0;
  size_t bytes = 0;  // the run's sample lines, newlines included
  std::set<std::string> names;
};

// A README row: `| job/run | series | bytes | detail series | detail bytes |`.
struct Row {
  size_t series = 0, bytes = 0, detail_series = 0, detail_bytes = 0;
};

size_t Number(std::string text) {
  std::erase(text, ',');
  return static_cast<size_t>(std::stoul(text));
}

// The README's table of series per run, keyed by "job/run".
std::map<std::string, Row> ReadmeTable() {
  std::map<std::string, Row> rows;
  const std::string readme = testing::ReadFile(std::string(PROFWATCH_SOURCE_DIR) + "/README.md");
  const std::regex row(
      R"(^\| `([^`/]+/[^`]+)` \| ([0-9,]+) \| ([0-9,]+) \| ([0-9,]+) \| ([0-9,]+) \|$)");
  std::istringstream in(readme);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    rows[m[1]] = Row{Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])};
  }
  return rows;
}

// Every sample line of `text` carrying training_job="job",run="run".
Cost CostOf(const std::string& text, const std::string& key) {
  const size_t slash = key.find('/');
  const std::string labels =
      "{training_job=\"" + key.substr(0, slash) + "\",run=\"" + key.substr(slash + 1) + "\"";
  Cost c;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    if (brace == std::string::npos || line.compare(brace, labels.size(), labels) != 0) continue;
    const char next = line[brace + labels.size()];
    if (next != ',' && next != '}') continue;
    ++c.series;
    c.bytes += line.size() + 1;
    c.names.insert(line.substr(0, brace));
  }
  return c;
}

// The series of `text` (name and labels, without values).
std::set<std::string> SeriesSet(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.insert(line.substr(0, line.rfind(' ')));
  }
  return out;
}

// Serves the real runs until every run in `runs` exports a window and two
// scrapes a full scan apart have the same series (training logs read); the
// per-run cost of that scrape.
std::map<std::string, Cost> ServeRealRuns(const std::string& jobs,
                                          const std::map<std::string, Row>& runs, bool detail) {
  TempDir tmp;
  std::vector<std::string> flags = {"--watch",         jobs, "--settle",    "1s",
                                    "--poll-interval", "1s", "--retention", "36500d"};
  if (detail) flags.push_back("--metrics-detail");
  Serve serve(tmp, flags);
  EXPECT_GT(serve.port(), 0) << serve.Log();
  auto all_windows = [&](const std::string& text) {
    for (const auto& [key, row] : runs) {
      const size_t slash = key.find('/');
      if (!Sample(text, "profwatch_window_gpus",
                  {{"training_job", key.substr(0, slash)}, {"run", key.substr(slash + 1)}})) {
        return false;
      }
    }
    return true;
  };
  std::optional<std::string> m = serve.WaitFor(all_windows, std::chrono::seconds(60));
  EXPECT_TRUE(m.has_value()) << serve.Log();
  if (!m) return {};
  // Settled: the same series a whole scan later (two counted scans: the
  // first may have begun before `m`).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool settled = false;
  while (!settled && std::chrono::steady_clock::now() < deadline) {
    std::optional<std::string> next = serve.MetricsAfterScans(2);
    if (!next) break;
    settled = SeriesSet(*next) == SeriesSet(*m);
    m = std::move(next);
  }
  EXPECT_TRUE(settled) << "the series kept changing\n" << serve.Log();
  std::map<std::string, Cost> out;
  for (const auto& [key, row] : runs) out[key] = CostOf(*m, key);
  EXPECT_EQ(serve.Stop(), 0);
  return out;
}

// 7657 -> "7,657".
std::string Thousands(size_t n) {
  std::string digits = std::to_string(n);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(at, ",");
  return digits;
}

TEST(SeriesBudgetTest, RealRunsStayWithinTheBudgetAndMatchTheReadme) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(jobs, "real/h200/jobs");
  const std::map<std::string, Row> readme = ReadmeTable();
  std::set<std::string> fixture_runs;
  for (const auto& job : fs::directory_iterator(jobs)) {
    for (const auto& run : fs::directory_iterator(job.path())) {
      fixture_runs.insert(job.path().filename().string() + "/" + run.path().filename().string());
    }
  }
  std::set<std::string> table_runs;
  for (const auto& [key, row] : readme) table_runs.insert(key);
  ASSERT_EQ(table_runs, fixture_runs) << "README's Series per run table names every real run";

  const std::map<std::string, Cost> plain = ServeRealRuns(jobs, readme, false);
  const std::map<std::string, Cost> detail = ServeRealRuns(jobs, readme, true);
  ASSERT_EQ(plain.size(), readme.size());
  ASSERT_EQ(detail.size(), readme.size());
  for (const auto& [key, row] : readme) {
    const Cost& p = plain.at(key);
    const Cost& d = detail.at(key);
    // The measured row, as the README writes it (to update the table).
    std::cout << "| `" << key << "` | " << p.series << " | " << Thousands(p.bytes) << " | "
              << d.series << " | " << Thousands(d.bytes) << " |\n";
    EXPECT_LE(p.series, kMaxSeriesPerRun) << key;
    EXPECT_LE(p.bytes, kMaxBytesPerRun) << key;
    EXPECT_EQ(p.series, row.series) << key << ": README's default series";
    EXPECT_EQ(d.series, row.detail_series) << key << ": README's --metrics-detail series";
    // Bytes move with the digits of the timestamps and values: within 1%.
    EXPECT_NEAR(static_cast<double>(p.bytes), static_cast<double>(row.bytes), row.bytes / 100.0)
        << key;
    EXPECT_NEAR(static_cast<double>(d.bytes), static_cast<double>(row.detail_bytes),
                row.detail_bytes / 100.0)
        << key;
    // The detail metrics appear only with the flag.
    for (const char* name : {"profwatch_kernel_seconds", "profwatch_family_exclusive_seconds",
                             "profwatch_family_idle_before_seconds"}) {
      EXPECT_EQ(p.names.count(name), 0u) << key << " " << name;
      EXPECT_EQ(d.names.count(name), 1u) << key << " " << name;
    }
  }
}

// The series of one run in `text` (name and labels, without values).
std::set<std::string> RunSeries(const std::string& text, const std::string& job,
                                const std::string& run) {
  const std::string labels = "{training_job=\"" + job + "\",run=\"" + run + "\"";
  std::set<std::string> out;
  for (const std::string& s : SeriesSet(text)) {
    const size_t brace = s.find('{');
    if (brace != std::string::npos && s.compare(brace, labels.size(), labels) == 0) out.insert(s);
  }
  return out;
}

// Copies one profiling cycle of the real PyTorch run into the watched run,
// written under a hidden name and renamed, as a finished file lands.
void LandCycle(const std::string& fixture_run, const std::string& run, const std::string& name) {
  fs::create_directories(run + "/profiler");
  const std::string tmp = run + "/profiler/." + name;
  fs::copy_file(fixture_run + "/profiler/" + name, tmp);
  fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write);
  fs::rename(tmp, run + "/profiler/" + name);
}

// A run's series set is fixed by its first window: no label changes with the
// window (the old window_info{window}), and nothing appears only from the
// second window on (the old profwatch_window_expected_gpus).
TEST(SeriesSetTest, ARunExportsTheSameSeriesAfterItsSecondWindow) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(fixture, "real/h200/jobs/4343-gpt-h200-torch/stall20");
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(
      tmp, {"--watch", jobs, "--settle", "1s", "--poll-interval", "1s", "--retention", "36500d"});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  ASSERT_TRUE(serve.WaitScans(1)) << serve.Log();
  const std::string run = jobs + "/4343-gpt-h200-torch/stall20";
  auto analysed = [](int n) {
    return [n](const std::string& text) {
      return Sample(text, "profwatch_windows_analyzed_total", {{"result", "ok"}}) == n;
    };
  };
  LandCycle(fixture, run, "vm_1481.1795652969892807939.pt.trace.json.gz");
  ASSERT_TRUE(serve.WaitFor(analysed(1), std::chrono::seconds(60))) << serve.Log();
  const std::optional<std::string> first = serve.MetricsAfterScans(1);
  ASSERT_TRUE(first.has_value()) << serve.Log();
  LandCycle(fixture, run, "vm_1481.1795652970610113897.pt.trace.json.gz");
  ASSERT_TRUE(serve.WaitFor(analysed(2), std::chrono::seconds(60))) << serve.Log();
  const std::optional<std::string> second = serve.MetricsAfterScans(1);
  ASSERT_TRUE(second.has_value()) << serve.Log();
  const std::set<std::string> a = RunSeries(*first, "4343-gpt-h200-torch", "stall20");
  const std::set<std::string> b = RunSeries(*second, "4343-gpt-h200-torch", "stall20");
  EXPECT_GT(a.size(), 40u) << *first;
  std::vector<std::string> only_first, only_second;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only_first));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(only_second));
  EXPECT_TRUE(only_first.empty()) << "gone after the second window: " << only_first.front();
  EXPECT_TRUE(only_second.empty()) << "new with the second window: " << only_second.front();
  EXPECT_EQ(serve.Stop(), 0);
}

}  // namespace
}  // namespace profwatch
