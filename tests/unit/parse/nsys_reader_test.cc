// The nsys SQLite export reader: the real 2020 export's kernels exactly,
// both schema generations alike, NVTX ranks and steps, and every kind of bad
// input (not SQLite, truncated, no kernel table, missing column, an export
// still being written) as a clear error without temp files next to it.
#include "parse/nsys_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "nsys_export.h"
#include "parse/sniff.h"
#include "testing/test_util.h"

namespace profwatch::parse {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using tracegen::NsysExportWriter;
using tracegen::NsysKernel;
using tracegen::NsysRange;
using tracegen::NsysSchema;

struct Kernel {
  std::string name;
  int64_t pid, device, stream, ts_ps, dur_ps;
  auto operator<=>(const Kernel&) const = default;
};
struct Step {
  int64_t pid;
  std::string step;
  int64_t ts_ps, dur_ps;
  auto operator<=>(const Step&) const = default;
};

class Collect : public EventSink {
 public:
  void OnEvent(const TraceEvent& e) override {
    ASSERT_EQ(e.ph, 'X');
    ASSERT_TRUE(e.has_ts && e.has_dur && e.dur_exact);
    if (e.cat == kNsysKernelCat) {
      ASSERT_TRUE(e.has_args_device);
      kernels.insert({std::string(e.name), e.pid.num, e.args_device, e.tid.num, e.ts_ps, e.dur_ps});
    } else if (e.cat == kNsysMemopCat) {
      ASSERT_TRUE(e.has_args_device);
      memops.insert({std::string(e.name), e.pid.num, e.args_device, e.tid.num, e.ts_ps, e.dur_ps});
    } else {
      ASSERT_EQ(e.cat, kNsysStepCat);
      steps.insert({e.pid.num, std::string(e.name), e.ts_ps, e.dur_ps});
    }
  }
  std::multiset<Kernel> kernels;
  std::multiset<Kernel> memops;
  std::multiset<Step> steps;
};

std::string Write(const std::string& path, NsysSchema schema, const std::vector<NsysKernel>& ks,
                  const std::vector<NsysRange>& rs = {}) {
  std::string error;
  auto w = NsysExportWriter::Create(path, schema, &error);
  EXPECT_TRUE(w) << error;
  if (!w) return path;
  for (const auto& k : ks) EXPECT_TRUE(w->AddKernel(k));
  for (const auto& r : rs) EXPECT_TRUE(w->AddRange(r));
  EXPECT_TRUE(w->Finish(&error)) << error;
  return path;
}

std::set<std::string> Listing(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

TEST(NsysReaderTest, RealExportGivesItsFiveKernelsExactly) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/nsys/a100_saxpy_mpi_2020.sqlite");
  Collect sink;
  auto summary = ReadNsysExport(path, sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  EXPECT_EQ(summary->schema, TraceSchema::kNsys);
  EXPECT_EQ(summary->events, 20u);              // 5 kernels, 15 memcpys
  EXPECT_TRUE(summary->process_ranks.empty());  // "MPI Rank 0" is not rank=N
  EXPECT_TRUE(sink.steps.empty());
  // sqlite3 ... "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL": pid
  // 302119223558144 / 0x1000000 % 0x1000000 = 1230493, device 0, stream 7.
  const std::string saxpy = "saxpy(double *, double *, double *, double, int)";
  const std::multiset<Kernel> want = {
      {saxpy, 1230493, 0, 7, 924922186000, (942626994 - 924922186) * 1000LL},
      {saxpy, 1230493, 0, 7, 1196058242000, (1213791658 - 1196058242) * 1000LL},
      {saxpy, 1230493, 0, 7, 1449177557000, (1466878365 - 1449177557) * 1000LL},
      {saxpy, 1230493, 0, 7, 1696275954000, (1713996442 - 1696275954) * 1000LL},
      {saxpy, 1230493, 0, 7, 1947782617000, (1965496577 - 1947782617) * 1000LL}};
  EXPECT_EQ(sink.kernels, want);
  // sqlite3 ... "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY": 15, 284699600.
  ASSERT_EQ(sink.memops.size(), 15u);
  int64_t memop_ps = 0;
  for (const Kernel& m : sink.memops) {
    EXPECT_EQ(m.name, "Memcpy");
    EXPECT_EQ(m.pid, 1230493);
    memop_ps += m.dur_ps;
  }
  EXPECT_EQ(memop_ps, 284699600LL * 1000);
}

TEST(NsysReaderTest, BothSchemaGenerationsReadAlikeWithRanksStepsAndNoInitRows) {
  TempDir tmp;
  const std::vector<NsysKernel> ks = {
      {100, 300, 11, 0, 7, "gemm_a", "void gemm_a<float>(int)"},
      {-900, -800, 11, 0, 20, "ncclDevKernel_AllReduce", ""},  // NCCL init: skipped
      {250, 400, 11, 0, 20, "ncclDevKernel_AllReduce", ""},
      {120, 220, 12, 1, 7, "gemm_a", "void gemm_a<float>(int)"},
      {50, 60, 12, 1, 7, "elt", ""}};
  const std::vector<NsysRange> rs = {
      {10, 20, 11, "rank=4; pp=0 dp=4", false},
      {5, 8, 12, "tp=0, rank=5", true},  // text NULL, textId into StringIds
      {30, 20000, 12, "rank=9", false},  // later than rank=5: not the rank
      {100, 500, 11, "step 7", false},
      {100, 450, 12, "Step_7", true},
      {600, std::nullopt, 11, "step 8", false},  // a mark: no end, no span
      {-50, 10, 11, "step 6", false}};           // before the profiler started
  std::vector<std::multiset<Kernel>> kernels;
  for (NsysSchema schema : {NsysSchema::k2020, NsysSchema::k2024}) {
    const std::string path =
        Write(tmp.Sub(schema == NsysSchema::k2020 ? "a.sqlite" : "b.sqlite"), schema, ks, rs);
    Collect sink;
    auto summary = ReadNsysExport(path, sink);
    ASSERT_TRUE(summary) << summary.error().ToString();
    EXPECT_EQ(summary->events, 6u);  // 4 kernels + 2 step ranges
    EXPECT_EQ(summary->drops.at("before_profiler_start"), 1u);
    EXPECT_EQ(summary->process_ranks, (std::map<int64_t, int64_t>{{11, 4}, {12, 5}}));
    EXPECT_EQ(sink.steps,
              (std::multiset<Step>{{11, "7", 100000, 400000}, {12, "7", 100000, 350000}}));
    kernels.push_back(sink.kernels);
  }
  const std::multiset<Kernel> want = {{"void gemm_a<float>(int)", 11, 0, 7, 100000, 200000},
                                      {"ncclDevKernel_AllReduce", 11, 0, 20, 250000, 150000},
                                      {"void gemm_a<float>(int)", 12, 1, 7, 120000, 100000},
                                      {"elt", 12, 1, 7, 50000, 10000}};
  EXPECT_EQ(kernels[0], want);
  EXPECT_EQ(kernels[1], want);
}

TEST(NsysReaderTest, NvtxTextRules) {
  EXPECT_EQ(RankOfNvtxText("rank=3; pp=0 dp=3"), 3);
  EXPECT_EQ(RankOfNvtxText("tp=1, rank=12"), 12);
  EXPECT_EQ(RankOfNvtxText("x rank=0"), 0);
  EXPECT_EQ(RankOfNvtxText("local_rank=2"), std::nullopt);
  EXPECT_EQ(RankOfNvtxText("rank=2x"), std::nullopt);
  EXPECT_EQ(RankOfNvtxText("rank="), std::nullopt);
  EXPECT_EQ(RankOfNvtxText("MPI Rank 0"), std::nullopt);
  EXPECT_EQ(RankOfNvtxText("rank=99999999999999999999"), std::nullopt);
  EXPECT_EQ(StepOfNvtxText("step 12"), 12);
  EXPECT_EQ(StepOfNvtxText("STEP#3"), 3);
  EXPECT_EQ(StepOfNvtxText("step=0"), 0);
  EXPECT_EQ(StepOfNvtxText("step12"), 12);
  EXPECT_EQ(StepOfNvtxText("step"), std::nullopt);
  EXPECT_EQ(StepOfNvtxText("step 1 fwd"), std::nullopt);
  EXPECT_EQ(StepOfNvtxText("steps 1"), std::nullopt);
  EXPECT_EQ(StepOfNvtxText("step  1"), std::nullopt);
}

TEST(NsysReaderTest, SniffTellsSqliteFromOtherFormats) {
  EXPECT_EQ(SniffFormat(std::string(kSqliteHeader) + "rest"), FileFormat::kSqlite);
  EXPECT_EQ(SniffFormat("SQLite format 2"), FileFormat::kUnknown);
}

class NsysBadInputTest : public ::testing::Test {
 protected:
  // Reads `path`, expects `code` with `text` in the message, and that the
  // directory holds exactly the same names afterwards (no journal, no temp).
  void ExpectError(const std::string& path, ErrorCode code, const std::string& text) {
    const auto before = Listing(tmp_.path());
    Collect sink;
    auto r = ReadNsysExport(path, sink);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, code) << r.error().ToString();
    EXPECT_NE(r.error().ToString().find(text), std::string::npos) << r.error().ToString();
    EXPECT_NE(r.error().ToString().find(path), std::string::npos) << r.error().ToString();
    EXPECT_EQ(Listing(tmp_.path()), before);
  }
  TempDir tmp_;
};

TEST_F(NsysBadInputTest, NotSqliteTruncatedAndGarbage) {
  testing::WriteFile(tmp_.Sub("text.sqlite"), "this is a log file, not a database\n");
  ExpectError(tmp_.Sub("text.sqlite"), ErrorCode::kCorrupt, "not an SQLite database");
  const std::string good = Write(tmp_.Sub("good.sqlite"), NsysSchema::k2024,
                                 {{1, 2, 1, 0, 7, "k", ""}, {3, 4, 1, 0, 7, "k", ""}});
  const std::string bytes = testing::ReadFile(good);
  ASSERT_GT(bytes.size(), 4096u);
  testing::WriteFile(tmp_.Sub("cut.sqlite"), bytes.substr(0, bytes.size() / 2));
  ExpectError(tmp_.Sub("cut.sqlite"), ErrorCode::kCorrupt, "malformed");
  std::string scrambled = bytes;
  for (size_t i = 100; i < scrambled.size(); i += 7) scrambled[i] = static_cast<char>(i * 31);
  testing::WriteFile(tmp_.Sub("scrambled.sqlite"), scrambled);
  Collect sink;
  auto r = ReadNsysExport(tmp_.Sub("scrambled.sqlite"), sink);  // no crash; an error
  EXPECT_FALSE(r);
  fs::remove(good);
  ExpectError(tmp_.Sub("missing.sqlite"), ErrorCode::kNotFound, "cannot open");
}

TEST_F(NsysBadInputTest, DatabaseWithoutKernelsOrAColumnIsNamed) {
  std::string error;
  auto w =
      NsysExportWriter::Create(tmp_.Sub("nocuda.sqlite"), NsysSchema::k2024, &error, true, false);
  ASSERT_TRUE(w && w->Finish(&error)) << error;
  w.reset();
  ExpectError(tmp_.Sub("nocuda.sqlite"), ErrorCode::kUnsupported,
              "not an nsys export, or exported without CUDA trace");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(tmp_.Sub("odd.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, "
                         "deviceId INTEGER, globalPid INTEGER, shortName INTEGER)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ExpectError(tmp_.Sub("odd.sqlite"), ErrorCode::kUnsupported, "no column 'streamId'");
}

TEST_F(NsysBadInputTest, ExportStillBeingWrittenIsRetriableNotRead) {
  const std::string path =
      Write(tmp_.Sub("node0.sqlite"), NsysSchema::k2024, {{1, 2, 1, 0, 7, "k", ""}});
  // A writer in the middle of a transaction: its rollback journal is beside
  // the file and the main file may hold half of its pages.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE; DELETE FROM StringIds",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_TRUE(fs::exists(path + "-journal"));
  ExpectError(path, ErrorCode::kIo, "still being written");
  ASSERT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  ASSERT_FALSE(fs::exists(path + "-journal"));
  Collect sink;
  auto r = ReadNsysExport(path, sink);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(sink.kernels.size(), 1u);
}

// A database made by `sql` at `path` (sqlite3_exec must accept it).
std::string MakeDb(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err != nullptr ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return path;
}

constexpr const char* kStrings =
    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT INTO StringIds VALUES (1, 'k');";
// An endless recursive query, as a view body: `filter` empty yields endless
// rows, "WHERE x < 0" none ever (endless CPU).
std::string EndlessKernels(const std::string& filter) {
  return "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x AS start, "
         "x + 1 AS end, 0 AS deviceId, 7 AS streamId, 16777216 AS globalPid, 1 AS demangledName, "
         "1 AS shortName FROM r " +
         filter;
}

// A small export's worth of views, the way a 36 KB file can hold one: only
// real tables are read, so neither the endless-rows nor the endless-CPU view
// runs, whatever the budget (none given here).
TEST_F(NsysBadInputTest, KernelViewOverEndlessRecursionIsRefusedNotRun) {
  for (const std::string filter : {"", "WHERE x < 0"}) {
    const std::string path =
        MakeDb(tmp_.Sub(filter.empty() ? "rows.sqlite" : "cpu.sqlite"),
               std::string(kStrings) + "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS " +
                   EndlessKernels(filter));
    ExpectError(path, ErrorCode::kUnsupported, "CUPTI_ACTIVITY_KIND_KERNEL is a view, not a table");
  }
}

// The optional tables as views are left unread (NVTX, memory ops), and a
// StringIds view is refused: a real kernel table must not reach a view
// through its name look-ups either.
TEST_F(NsysBadInputTest, OtherTablesAsViewsAreNeverRun) {
  const std::string kernels =
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
      "streamId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 7, 16777216, 1, 1);";
  const std::string views =
      "CREATE VIEW NVTX_EVENTS AS SELECT x AS start, x AS end, 1 AS globalTid, 'step 1' AS text, "
      "NULL AS textId FROM (" +
      EndlessKernels("") +
      ");"
      "CREATE VIEW CUPTI_ACTIVITY_KIND_MEMCPY AS " +
      EndlessKernels("WHERE x < 0") + ";";
  Collect sink;
  auto r = ReadNsysExport(MakeDb(tmp_.Sub("nvtx.sqlite"), kStrings + kernels + views), sink);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(sink.kernels.size(), 1u);
  EXPECT_TRUE(sink.steps.empty());
  EXPECT_TRUE(sink.memops.empty());
  ExpectError(MakeDb(tmp_.Sub("strings.sqlite"),
                     kernels + "CREATE VIEW StringIds AS SELECT x AS id, 'k' AS value FROM (" +
                         EndlessKernels("WHERE x < 0") + ");"),
              ErrorCode::kUnsupported, "StringIds is a view, not a table");
}

// Sets the stop flag at the first event it gets.
class StopAtFirst : public EventSink {
 public:
  explicit StopAtFirst(std::atomic<bool>& stop) : stop_(stop) {}
  void OnEvent(const TraceEvent&) override {
    ++events;
    stop_ = true;
  }
  uint64_t events = 0;

 private:
  std::atomic<bool>& stop_;
};

// The budget bounds every query of a real table too: the file's size counts
// as bytes read, the time limit and the stop flag are checked by SQLite's
// progress handler while a query runs.
TEST_F(NsysBadInputTest, BudgetStopsAQueryOfARealTable) {
  constexpr int kRows = 200000;
  const std::string path = MakeDb(
      tmp_.Sub("big.sqlite"),
      std::string(kStrings) +
          "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId "
          "INTEGER, streamId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName "
          "INTEGER);"
          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL "
          "SELECT x + 1 FROM r WHERE x < " +
          std::to_string(kRows) + ") SELECT x, x + 1, 0, 7, 16777216, 1, 1 FROM r;");
  {  // stop flag: the next progress tick ends the query
    std::atomic<bool> stop{false};
    FileLimits limits;
    limits.stop = &stop;
    FileBudget budget(limits);
    StopAtFirst sink(stop);
    auto r = ReadNsysExport(path, sink, &budget);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kOverBudget) << r.error().ToString();
    EXPECT_NE(r.error().ToString().find("stopped"), std::string::npos) << r.error().ToString();
    EXPECT_GE(sink.events, 1u);
    EXPECT_LT(sink.events, static_cast<uint64_t>(kRows) / 10);
  }
  {  // bytes: the database file is larger than the budget
    FileLimits limits;
    limits.max_bytes = 4096;
    FileBudget budget(limits);
    Collect sink;
    auto r = ReadNsysExport(path, sink, &budget);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kOverBudget);
    EXPECT_NE(r.error().ToString().find("--file-max-bytes"), std::string::npos);
    EXPECT_TRUE(sink.kernels.empty());
  }
  {  // time: a limit already passed
    FileLimits limits;
    limits.max_time = std::chrono::nanoseconds(1);
    FileBudget budget(limits);
    Collect sink;
    auto r = ReadNsysExport(path, sink, &budget);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kOverBudget);
    EXPECT_NE(r.error().ToString().find("--file-max-seconds"), std::string::npos);
  }
  {  // a budget that holds: every row
    FileBudget budget;
    Collect sink;
    auto r = ReadNsysExport(path, sink, &budget);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->events, static_cast<uint64_t>(kRows));
  }
}

}  // namespace
}  // namespace profwatch::parse
