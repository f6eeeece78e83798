// Per-file budgets through the whole read -> parse -> aggregate path: a gzip
// bomb stops at --file-max-bytes, a read past --file-max-seconds or after the
// stop flag ends with reason over_budget, and a window keeps its good files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "testing/test_util.h"

namespace profwatch::analysis {
namespace {

using testing::TempDir;

// ~`inflated` bytes of `{}` events in one gzip member of about 1/1000 the size.
std::string Bomb(const TempDir& tmp, uint64_t inflated) {
  const std::string path = tmp.Sub("bomb/h0.trace.json.gz");
  testing::WriteFile(path, testing::GzipBomb("{\"traceEvents\":[", "{},", inflated, "{}]}"));
  return path;
}

// A Kineto trace of one kernel on GPU 0.
std::string Good(const TempDir& tmp) {
  const std::string path = tmp.Sub("good/h1.trace.json.gz");
  testing::WriteFile(path, testing::Gzip(R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k",)"
                                         R"("pid":0,"tid":7,"ts":10,"dur":5}]})"));
  return path;
}

AnalyzeOptions Options(uint64_t max_bytes) {
  AnalyzeOptions o;
  o.threads = 1;
  o.limits.max_bytes = max_bytes;
  return o;
}

TEST(BudgetAnalysisTest, GzipBombOfEmptyEventsStopsAtTheByteBudget) {
  TempDir tmp;
  const std::string bomb = Bomb(tmp, 512ull << 20);
  ASSERT_LT(testing::ReadFile(bomb).size(), 1u << 20);
  auto r = AnalyzeFiles({bomb}, Options(4 << 20));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kOverBudget) << r.error().ToString();
  EXPECT_NE(r.error().context.find("--file-max-bytes"), std::string::npos) << r.error().context;
  EXPECT_NE(r.error().context.find(bomb), std::string::npos) << r.error().context;
  // Within the budget the same kind of file reads to its end.
  const std::string small = tmp.Sub("small/h0.trace.json.gz");
  testing::WriteFile(small, testing::GzipBomb("{\"traceEvents\":[", "{},", 2 << 20, "{}]}"));
  auto ok = AnalyzeFiles({small}, Options(4 << 20));
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_TRUE(ok->errors.empty());
}

TEST(BudgetAnalysisTest, WindowKeepsItsGoodFileBesideTheOneOverBudget) {
  TempDir tmp;
  auto r = AnalyzeFiles({Bomb(tmp, 64ull << 20), Good(tmp)}, Options(1 << 20));
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].error.code, ErrorCode::kOverBudget);
  EXPECT_EQ(r->stats.gpus(), 1);
}

TEST(BudgetAnalysisTest, TimeLimitAndStopFlagEndTheReadWithOverBudget) {
  TempDir tmp;
  const std::string bomb = Bomb(tmp, 1ull << 30);
  AnalyzeOptions timed = Options(0);
  timed.limits.max_time = std::chrono::milliseconds(1);
  auto r = AnalyzeFiles({bomb}, timed);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kOverBudget);
  EXPECT_NE(r.error().context.find("--file-max-seconds"), std::string::npos) << r.error().context;

  std::atomic<bool> stop{true};
  AnalyzeOptions stopped = Options(0);
  stopped.limits.stop = &stop;
  auto s = AnalyzeFiles({bomb, Good(tmp)}, stopped);
  ASSERT_FALSE(s);  // no file is read at all
  EXPECT_EQ(s.error().code, ErrorCode::kOverBudget);
  EXPECT_NE(s.error().context.find("stopped"), std::string::npos) << s.error().context;
}

// A Kineto trace of `kernels` kernels on GPU 0, none touching the next (so
// they stay separate intervals).
std::string ManyKernels(const TempDir& tmp, const std::string& name, int kernels) {
  std::string json = R"({"traceEvents":[)";
  for (int i = 0; i < kernels; ++i) {
    if (i > 0) json += ',';
    json += R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" +
            std::to_string(10 * i) + R"(,"dur":5})";
  }
  json += "]}";
  const std::string path = tmp.Sub("many/" + name + ".trace.json.gz");
  testing::WriteFile(path, testing::Gzip(json));
  return path;
}

// A window of two files parks each file's intervals beyond
// FileAggregator::kParkedIntervals in its spill file while the other is
// read: the bytes are counted (profwatch_spill_bytes_total). A spill
// directory that cannot be written is named per file (the daemon's
// profwatch_spill_errors_total and log line), and the figures are the same.
TEST(BudgetAnalysisTest, SpilledBytesAndSpillErrorsAreReported) {
  TempDir tmp;
  const int kernels = 70'000;  // above kParkedIntervals (65,536)
  const std::vector<std::string> files = {ManyKernels(tmp, "h0", kernels),
                                          ManyKernels(tmp, "h1", kernels)};
  AnalyzeOptions o = Options(0);
  o.spill_dir = tmp.Sub("spill");
  std::filesystem::create_directories(o.spill_dir);
  auto spilled = AnalyzeFiles(files, o);
  ASSERT_TRUE(spilled) << spilled.error().ToString();
  EXPECT_TRUE(spilled->spill_errors.empty());
  // Each file keeps kParkedIntervals in memory and spills the rest.
  EXPECT_GE(spilled->spilled_bytes, 2u * (kernels - 65'536) * 16);

  o.spill_dir = tmp.Sub("no-such-dir");
  auto kept = AnalyzeFiles(files, o);
  ASSERT_TRUE(kept) << kept.error().ToString();
  EXPECT_EQ(kept->spilled_bytes, 0u);
  ASSERT_EQ(kept->spill_errors.size(), 2u);
  EXPECT_EQ(kept->spill_errors[0].path, files[0]);
  EXPECT_NE(kept->spill_errors[0].error.context.find(o.spill_dir), std::string::npos)
      << kept->spill_errors[0].error.context;
  EXPECT_EQ(kept->stats.gpus(), spilled->stats.gpus());
  EXPECT_EQ(kept->stats.total_kernel_ps, spilled->stats.total_kernel_ps);

  // One file alone is not parked: nothing spills below the interval budget.
  o.spill_dir = tmp.Sub("spill");
  auto alone = AnalyzeFiles({files[0]}, o);
  ASSERT_TRUE(alone) << alone.error().ToString();
  EXPECT_EQ(alone->spilled_bytes, 0u);
}

// --window-max-seconds: a window of files that each stay within their own
// budget still ends at the window's; the error names the window budget.
TEST(BudgetAnalysisTest, WindowTimeBudgetEndsEveryFileOfTheWindow) {
  TempDir tmp;
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) {
    const std::string path = tmp.Sub("w/h" + std::to_string(i) + ".trace.json.gz");
    testing::WriteFile(path, testing::GzipBomb("{\"traceEvents\":[", "{},", 1ull << 30, "{}]}"));
    files.push_back(path);
  }
  AnalyzeOptions o = Options(0);
  o.limits.max_time = std::chrono::hours(1);
  o.limits.window_max_time = std::chrono::milliseconds(1);
  auto r = AnalyzeFiles(files, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kOverBudget);
  EXPECT_NE(r.error().context.find("--window-max-seconds"), std::string::npos) << r.error().context;
  EXPECT_NE(r.error().context.find("and 2 more failed files"), std::string::npos)
      << r.error().context;
}

// Read once: a window naming one file through several hard links reads it
// once and counts it once (the same figures and bytes as the file alone).
TEST(BudgetAnalysisTest, HardLinksOfOneFileAreReadAndCountedOnce) {
  TempDir tmp;
  const std::string good = Good(tmp);
  std::vector<std::string> files = {good};
  for (int i = 0; i < 4; ++i) {
    const std::string link = tmp.Sub("good/h" + std::to_string(i + 2) + ".trace.json.gz");
    ASSERT_EQ(::link(good.c_str(), link.c_str()), 0) << link;
    files.push_back(link);
  }
  auto one = AnalyzeFiles({good}, Options(0));
  auto linked = AnalyzeFiles(files, Options(0));
  ASSERT_TRUE(one) << one.error().ToString();
  ASSERT_TRUE(linked) << linked.error().ToString();
  EXPECT_EQ(linked->duplicate_files, 4u);
  EXPECT_EQ(one->duplicate_files, 0u);
  EXPECT_EQ(linked->bytes_read, one->bytes_read);
  EXPECT_EQ(linked->stats.gpus(), one->stats.gpus());
  EXPECT_EQ(linked->stats.files.size(), one->stats.files.size());
}

// Crafted rocprofv3 JSON (gzipped, as a bomb): a huge agents array, nesting
// a gigabyte deep, a huge array of dispatches with absurd timestamps. Each
// ends at the byte budget (or the time budget) with over_budget.
TEST(BudgetAnalysisTest, CraftedRocprofOutputsEndWithinTheirBudget) {
  TempDir tmp;
  const std::string head = R"({"rocprofiler-sdk-tool":[{"metadata":{"pid":1},)";
  struct Case {
    std::string name, prefix, unit, suffix;
  };
  const Case cases[] = {
      {"agents", head + R"("agents":[)", R"({"id":{"handle":7},"type":2},)", "{}]}]}"},
      {"nesting", head + R"("counters":)", "[", "]"},
      {"times",
       head +
           R"("agents":[{"id":{"handle":1},"type":2}],"kernel_symbols":[{"kernel_id":1,"kernel_name":"k"}],"buffer_records":{"kernel_dispatch":[)",
       R"({"start_timestamp":18446744073709551615,"end_timestamp":1,"dispatch_info":{"agent_id":{"handle":1},"kernel_id":1}},)",
       "{}]}}]}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = tmp.Sub(c.name + "/x_results.json.gz");
    testing::WriteFile(path, testing::GzipBomb(c.prefix, c.unit, 256ull << 20, c.suffix));
    auto r = AnalyzeFiles({path}, Options(4 << 20));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kOverBudget) << r.error().ToString();
    EXPECT_NE(r.error().context.find("--file-max-bytes"), std::string::npos) << r.error().context;
    AnalyzeOptions timed = Options(0);
    timed.limits.max_time = std::chrono::milliseconds(1);
    auto t = AnalyzeFiles({path}, timed);
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code, ErrorCode::kOverBudget) << t.error().ToString();
  }
}

}  // namespace
}  // namespace profwatch::analysis
