#include "expose/process_collectable.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>

#include "expose/metric_names.h"
#include "testing/test_util.h"

namespace profwatch::expose {
namespace {

using ::profwatch::testing::RunCommand;
using ::profwatch::testing::TempDir;
using ::profwatch::testing::WriteFile;

std::map<std::string, double> Values(const std::vector<prometheus::MetricFamily>& fams) {
  std::map<std::string, double> out;
  for (const auto& f : fams) {
    EXPECT_EQ(f.metric.size(), 1u) << f.name;
    const auto& m = f.metric.at(0);
    out[f.name] = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
  }
  return out;
}

double NowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(ProcessCollectableTest, ReportsSaneValuesForThisProcess) {
  const auto v = Values(ProcessCollectable().Collect());
  ASSERT_EQ(v.size(), 6u);
  EXPECT_GT(v.at("process_resident_memory_bytes"), 0);
  EXPECT_GE(v.at("process_virtual_memory_bytes"), v.at("process_resident_memory_bytes"));
  EXPECT_GE(v.at("process_open_fds"), 3);  // stdin, stdout, stderr at least
  EXPECT_GE(v.at("process_max_fds"), v.at("process_open_fds"));
  EXPECT_GE(v.at("process_cpu_seconds_total"), 0);
  const double start = v.at("process_start_time_seconds");
  EXPECT_LE(start, NowUnix() + 1);
  EXPECT_GT(start, NowUnix() - 3600);
}

// The CPU counter follows the CPU this process uses: 50 ms of it (by
// clock(), the process's own CPU time) is several of the kernel's 10 ms
// ticks.
TEST(ProcessCollectableTest, CpuSecondsGrowWithTheCpuThisProcessUses) {
  const double before = Values(ProcessCollectable().Collect()).at("process_cpu_seconds_total");
  const std::clock_t from = std::clock();
  volatile uint64_t spin = 0;
  while (std::clock() - from < CLOCKS_PER_SEC / 20) spin = spin + 1;
  const double after = Values(ProcessCollectable().Collect()).at("process_cpu_seconds_total");
  EXPECT_GE(after - before, 0.03) << before << " -> " << after;
}

TEST(ProcessCollectableTest, TypesAndHelpFollowTheProcessTable) {
  const auto fams = ProcessCollectable().Collect();
  for (const auto& f : fams) {
    const ProcessMetricSpec* spec = FindProcessMetric(f.name);
    ASSERT_NE(spec, nullptr) << f.name;
    EXPECT_EQ(f.help, spec->help);
    EXPECT_EQ(f.type, spec->type == MetricType::kCounter ? prometheus::MetricType::Counter
                                                         : prometheus::MetricType::Gauge);
    EXPECT_TRUE(f.metric.at(0).label.empty());
  }
}

TEST(ProcessCollectableTest, OpenFdsCountsANewlyOpenedDescriptor) {
  const double before = Values(ProcessCollectable().Collect()).at("process_open_fds");
  const int fd = ::dup(2);
  ASSERT_GE(fd, 0);
  const double during = Values(ProcessCollectable().Collect()).at("process_open_fds");
  ::close(fd);
  EXPECT_EQ(during, before + 1);
}

TEST(ProcessCollectableTest, PromtoolAcceptsOutput) {
  const char* promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) GTEST_SKIP() << "promtool not installed";
  TempDir dir;
  WriteFile(dir.Sub("m.txt"),
            prometheus::TextSerializer().Serialize(ProcessCollectable().Collect()));
  auto r = RunCommand(std::string(promtool) + " check metrics < '" + dir.Sub("m.txt") + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");
}

TEST(ProcessCollectableTest, MissingProcTreeOmitsMetricsWithoutThrowing) {
  TempDir dir;
  EXPECT_TRUE(ProcessCollectable(dir.Sub("nonexistent")).Collect().empty());
}

TEST(ProcessCollectableTest, FakeProcTreeGivesExactValues) {
  TempDir dir;
  // Fields 14/15 utime/stime, 22 starttime, 23 vsize, 24 rss (pages).
  WriteFile(dir.Sub("self/stat"),
            "42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 "
            "250 150 0 0 20 0 3 0 1000 8192000 300 18446744073709551615\n");
  WriteFile(dir.Sub("stat"), "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n");
  WriteFile(dir.Sub("self/limits"),
            "Limit                     Soft Limit           Hard Limit           Units\n"
            "Max open files            1024                 524288               files\n");
  WriteFile(dir.Sub("self/fd/0"), "");
  WriteFile(dir.Sub("self/fd/1"), "");
  const double tck = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  const auto v = Values(ProcessCollectable(dir.path().string()).Collect());
  EXPECT_DOUBLE_EQ(v.at("process_cpu_seconds_total"), 400 / tck);
  EXPECT_DOUBLE_EQ(v.at("process_virtual_memory_bytes"), 8192000);
  EXPECT_DOUBLE_EQ(v.at("process_resident_memory_bytes"), 300 * page);
  EXPECT_DOUBLE_EQ(v.at("process_start_time_seconds"), 1700000000 + 1000 / tck);
  EXPECT_DOUBLE_EQ(v.at("process_max_fds"), 1024);
  EXPECT_DOUBLE_EQ(v.at("process_open_fds"), 2);
}

TEST(ProcessCollectableTest, GarbageStatOmitsOnlyDependentMetrics) {
  TempDir dir;
  WriteFile(dir.Sub("self/stat"), "garbage with no paren");
  WriteFile(dir.Sub("stat"), "btime 1700000000\n");
  WriteFile(dir.Sub("self/limits"), "Max open files            unlimited   unlimited   files\n");
  WriteFile(dir.Sub("self/fd/0"), "");
  const auto v = Values(ProcessCollectable(dir.path().string()).Collect());
  EXPECT_EQ(v.size(), 1u);
  EXPECT_DOUBLE_EQ(v.at("process_open_fds"), 1);
}

TEST(ProcStatParseTest, RejectsMalformedText) {
  EXPECT_EQ(ParseProcStat("").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(ParseProcStat("1 (x) S 1 2").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(ParseProcStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 u s 0 0 20 0 1 0 5 6 7").error().code,
            ErrorCode::kCorrupt);
  auto ok = ParseProcStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 10 20 0 0 20 0 1 0 5 6 7");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->utime_ticks, 10u);
  EXPECT_EQ(ok->stime_ticks, 20u);
  EXPECT_EQ(ok->starttime_ticks, 5u);
  EXPECT_EQ(ok->vsize_bytes, 6u);
  EXPECT_EQ(ok->rss_pages, 7);
}

TEST(ProcStatParseTest, BootTimeAndLimitsNeedTheirLines) {
  EXPECT_EQ(ParseBootTime("cpu 1 2\n").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(ParseBootTime("btime x\n").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(*ParseBootTime("cpu 1\nbtime 12\n"), 12u);
  EXPECT_EQ(ParseMaxOpenFiles("Max processes 5 5\n").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(ParseMaxOpenFiles("Max open files unlimited unlimited files\n").error().code,
            ErrorCode::kUnsupported);
  EXPECT_EQ(*ParseMaxOpenFiles("Max open files 4096 8192 files"), 4096u);
}

}  // namespace
}  // namespace profwatch::expose
