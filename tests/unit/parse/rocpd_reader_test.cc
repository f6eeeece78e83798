// The rocpd SQLite reader on databases made with rocprofiler-sdk's own DDL
// (tools/tracegen/rocpd_schema.h, cited there): what it emits, what it
// drops, what it refuses, and the budgets.
#include "parse/rocpd_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "nsys_export.h"
#include "parse/nsys_reader.h"
#include "parse/sniff.h"
#include "rocpd_schema.h"
#include "testing/test_util.h"

namespace profwatch::parse {
// Named for this file: the unity build compiles it with its neighbours.
namespace rocpd_reader_test {

using testing::TempDir;

constexpr const char* kSuffix = "_0195a1b2_c3d4_7e5f_8a9b_0c1d2e3f4a5b";

void Replace(std::string& s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

// A database with the cited schema (tables suffixed with a UUID, and the
// views), then `sql` with `@` standing for the suffix, foreign keys off.
std::string MakeRocpd(const std::string& path, std::string sql, bool schema = true) {
  std::string ddl;
  if (schema) {
    ddl = std::string(tracegen::kRocpdTablesSql) + "\n" + tracegen::kRocpdViewsSql;
    Replace(ddl, "{{uuid}}", kSuffix);
    Replace(ddl, "{{guid}}", "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
  }
  Replace(sql, "@", kSuffix);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 1, nullptr);
  char* message = nullptr;
  // Foreign keys off: crafted rows name agents and kernels that do not
  // exist (a hostile file need not keep them either).
  const std::string all = ddl + "\nPRAGMA foreign_keys = OFF;\nBEGIN;\n" + sql + "\nCOMMIT;";
  EXPECT_EQ(sqlite3_exec(db, all.c_str(), nullptr, nullptr, &message), SQLITE_OK)
      << (message != nullptr ? message : "");
  sqlite3_free(message);
  sqlite3_close(db);
  return path;
}

// A process 77 with two CPU agents and two GPUs (agent ids 2 and 3, node
// ids 2 and 3), kernels 5 and 6.
constexpr const char* kProcess =
    "INSERT INTO rocpd_info_node@ (id, hash, machine_id) VALUES (1, 1, 'm');"
    "INSERT INTO rocpd_info_process@ (id, nid, pid) VALUES (77, 1, 77);"
    "INSERT INTO rocpd_info_agent@ (id, nid, pid, type, absolute_index, name, product_name) "
    "VALUES (0, 1, 77, 'CPU', 0, 'EPYC', 'AMD EPYC'), (1, 1, 77, 'CPU', 1, 'EPYC', 'AMD EPYC'), "
    "(3, 1, 77, 'GPU', 3, 'gfx942', 'AMD Instinct MI300X'), "
    "(2, 1, 77, 'GPU', 2, 'gfx942', 'AMD Instinct MI300X');"
    "INSERT INTO rocpd_info_code_object@ (id, nid, pid, agent_id) VALUES (1, 1, 77, 2);"
    "INSERT INTO rocpd_info_kernel_symbol@ (id, nid, pid, code_object_id, kernel_name, "
    "display_name) VALUES (5, 1, 77, 1, '_Z4gemmv', 'gemm_kernel'), "
    "(6, 1, 77, 1, '_Z4ncclv', NULL);";

std::string Dispatch(int64_t agent, int64_t kernel, int64_t queue, int64_t start, int64_t end) {
  return "INSERT INTO rocpd_kernel_dispatch@ (nid, pid, tid, agent_id, kernel_id, dispatch_id, "
         "queue_id, stream_id, start, end, workgroup_size_x, workgroup_size_y, "
         "workgroup_size_z, grid_size_x, grid_size_y, grid_size_z) VALUES (1, 77, 77, " +
         std::to_string(agent) + ", " + std::to_string(kernel) + ", 1, " + std::to_string(queue) +
         ", 0, " + std::to_string(start) + ", " + std::to_string(end) + ", 1, 1, 1, 1, 1, 1);";
}

struct Event {
  std::string cat, name;
  int64_t pid, device, tid, ts_ps, dur_ps, bytes;
  auto operator<=>(const Event&) const = default;
};

class Collect : public EventSink {
 public:
  void OnEvent(const TraceEvent& e) override {
    ASSERT_EQ(e.ph, 'X');
    ASSERT_TRUE(e.has_ts && e.has_dur && e.dur_exact);
    events.insert({std::string(e.cat), std::string(e.name), e.pid.num,
                   e.has_args_device ? e.args_device : -1, e.tid.num, e.ts_ps, e.dur_ps,
                   e.args_bytes});
  }
  std::multiset<Event> events;
};

TEST(RocpdReaderTest, ReadsTheCitedSchemasDispatchesCopiesAndMarkers) {
  TempDir tmp;
  constexpr int64_t t0 = 320'000'000'000'000'123;  // years of uptime: ps overflow int64
  const std::string path = MakeRocpd(
      tmp.Sub("77_results.db"),
      std::string(kProcess) + Dispatch(3, 5, 9, t0, t0 + 1000) +
          Dispatch(3, 6, 4, t0 + 500, t0 + 2500) + Dispatch(3, 5, 9, t0 + 3000, t0 + 3100) +
          "INSERT INTO rocpd_string@ (id, string) VALUES (1, 'hipLaunchKernel'), (2, 'step 7'), "
          "(3, 'rank=3; tp=0'), (4, 'MEMORY_COPY_HOST_TO_DEVICE');"
          "INSERT INTO rocpd_region@ (nid, pid, tid, start, end, name_id) VALUES "
          "(1, 77, 77, " +
          std::to_string(t0 - 100) + ", " + std::to_string(t0 - 50) + ", 1), (1, 77, 77, " +
          std::to_string(t0) + ", " + std::to_string(t0 + 4000) + ", 2), (1, 77, 77, " +
          std::to_string(t0 - 20) + ", " + std::to_string(t0 + 9000) + ", 3);" +
          "INSERT INTO rocpd_memory_copy@ (nid, pid, start, end, name_id, dst_agent_id, "
          "src_agent_id, size) VALUES (1, 77, " +
          std::to_string(t0 + 10) + ", " + std::to_string(t0 + 60) + ", 4, 3, 0, 4096);");
  EXPECT_EQ(SniffFormat(testing::ReadFile(path).substr(0, 64)), FileFormat::kSqlite);
  Collect sink;
  auto s = ReadSqliteTrace(path, sink);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->schema, TraceSchema::kRocprof);
  EXPECT_EQ(s->events, 5u);
  EXPECT_TRUE(s->drops.empty());
  // Times: ns x 1000 relative to the first row's start floored to a us.
  const int64_t base = t0 / 1000 * 1000;
  EXPECT_EQ(s->time_base_us, t0 / 1000);
  const int64_t at = (t0 - base) * 1000;
  const std::multiset<Event> want = {
      // GPU agent 3 is the process's second GPU (by node id); queues are
      // numbered per agent in order of first sight.
      {std::string(kNsysKernelCat), "gemm_kernel", 77, 1, 0, at, 1'000'000, -1},
      {std::string(kNsysKernelCat), "_Z4ncclv", 77, 1, 1, at + 500'000, 2'000'000, -1},
      {std::string(kNsysKernelCat), "gemm_kernel", 77, 1, 0, at + 3'000'000, 100'000, -1},
      {std::string(kNsysMemopCat), "Memcpy", 77, 1, 0, at + 10'000, 50'000, 4096},
      {std::string(kNsysStepCat), "7", 77, -1, 0, at, 4'000'000, -1},
  };
  EXPECT_EQ(sink.events, want);
  EXPECT_EQ(s->process_ranks, (std::map<int64_t, int64_t>{{77, 3}}));
  EXPECT_EQ(s->device_names, std::vector<std::string>{"AMD Instinct MI300X"});
  EXPECT_EQ(s->idle_gpu_agents, 1);  // agent 2 dispatched nothing: seen, not counted
  EXPECT_EQ(s->idle_gpu_agent_names,
            std::vector<std::string>{"pid 77 GPU 0 (AMD Instinct MI300X)"});
}

TEST(RocpdReaderTest, RowsItCannotPlaceAreCountedNotGuessed) {
  TempDir tmp;
  const std::string path =
      MakeRocpd(tmp.Sub("bad.db"), std::string(kProcess) + Dispatch(3, 5, 1, 1000, 2000) +
                                       Dispatch(1, 5, 1, 1000, 2000) +   // a CPU agent
                                       Dispatch(42, 5, 1, 1000, 2000) +  // no such agent
                                       Dispatch(3, 99, 1, 1000, 2000) +  // no such kernel
                                       Dispatch(3, 5, 1, 3000, 2000) +   // ends before it starts
                                       Dispatch(3, 5, 1, 0, 2000) +      // a time of 0
                                       Dispatch(3, 5, 1, -5000, 2000));  // before the epoch
  Collect sink;
  auto s = ReadRocpdDatabase(path, sink);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->events, 1u);
  EXPECT_EQ(s->drops, (std::map<std::string, uint64_t>{
                          {"unknown_agent", 2}, {"unknown_kernel", 1}, {"bad_time", 3}}));
}

TEST(RocpdReaderTest, RefusesWhatIsNotARocpdDatabase) {
  TempDir tmp;
  Collect sink;
  {  // another SQLite database: nothing of rocpd
    const std::string path = MakeRocpd(tmp.Sub("other.db"), "CREATE TABLE t (x);", false);
    auto r = ReadRocpdDatabase(path, sink);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported) << r.error().ToString();
    EXPECT_NE(r.error().ToString().find("no rocpd_kernel_dispatch table"), std::string::npos);
    auto n = ReadSqliteTrace(path, sink);  // then it is tried as an nsys export
    ASSERT_FALSE(n);
    EXPECT_NE(n.error().ToString().find("CUPTI_ACTIVITY_KIND_KERNEL"), std::string::npos);
  }
  {  // only a view of that name: views are never read
    const std::string path =
        MakeRocpd(tmp.Sub("view.db"),
                  "CREATE VIEW rocpd_kernel_dispatch AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL "
                  "SELECT x + 1 FROM r) SELECT x AS start FROM r;",
                  false);
    auto r = ReadRocpdDatabase(path, sink);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  }
  {  // the dispatch table without its agents
    const std::string path = MakeRocpd(tmp.Sub("noagents.db"),
                                       "DROP VIEW rocpd_info_agent; DROP TABLE rocpd_info_agent@;");
    auto r = ReadRocpdDatabase(path, sink);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported) << r.error().ToString();
  }
  {  // garbage after an SQLite header
    const std::string path = tmp.Sub("garbage.db");
    std::ofstream(path) << std::string(kSqliteHeader) << std::string(5000, '\x5a');
    auto r = ReadSqliteTrace(path, sink);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kCorrupt) << r.error().ToString();
  }
  {  // a journal beside it: still being written
    const std::string path = MakeRocpd(tmp.Sub("busy.db"), kProcess);
    std::ofstream(path + "-journal") << "x";
    auto r = ReadSqliteTrace(path, sink);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kIo);
  }
  EXPECT_TRUE(sink.events.empty());
}

TEST(RocpdReaderTest, AnNsysExportStillReadsAsOne) {
  TempDir tmp;
  const std::string path = tmp.Sub("n.sqlite");
  std::string error;
  auto w = tracegen::NsysExportWriter::Create(path, tracegen::NsysSchema::k2024, &error);
  ASSERT_TRUE(w) << error;
  tracegen::NsysKernel k;
  k.short_name = "k";
  k.start_ns = 100;
  k.end_ns = 200;
  ASSERT_TRUE(w->AddKernel(k));
  ASSERT_TRUE(w->Finish(&error)) << error;
  Collect sink;
  auto s = ReadSqliteTrace(path, sink);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->schema, TraceSchema::kNsys);
  EXPECT_EQ(s->events, 1u);
}

// An RCCL kernel takes the collective of the latest collective call (a
// region named like one, its id the call's correlation id) of its thread
// before its own correlation id (its event's stack_id).
TEST(RocpdReaderTest, RcclKernelsGetTheCollectiveOfTheirThreadsLatestCall) {
  TempDir tmp;
  auto dispatch = [](int64_t tid, int64_t event, int64_t start) {
    return "INSERT INTO rocpd_kernel_dispatch@ (nid, pid, tid, agent_id, kernel_id, dispatch_id, "
           "queue_id, stream_id, start, end, workgroup_size_x, workgroup_size_y, "
           "workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id) VALUES (1, 77, " +
           std::to_string(tid) + ", 3, 8, 1, 1, 0, " + std::to_string(start) + ", " +
           std::to_string(start + 10) + ", 1, 1, 1, 1, 1, 1, " + std::to_string(event) + ");";
  };
  const std::string path = MakeRocpd(
      tmp.Sub("rccl.db"),
      std::string(kProcess) +
          "INSERT INTO rocpd_info_kernel_symbol@ (id, nid, pid, code_object_id, kernel_name, "
          "display_name) VALUES (8, 1, 77, 1, '_Z4k', 'ncclDevKernel_Generic_1');"
          "INSERT INTO rocpd_string@ (id, string) VALUES (10, 'ncclAllReduce'), "
          "(11, 'ncclGroupStart'), (12, 'ncclAllGather');"
          "INSERT INTO rocpd_region@ (id, nid, pid, tid, start, end, name_id) VALUES "
          "(20, 1, 77, 77, 900, 950, 10), (22, 1, 77, 77, 960, 970, 11), "
          "(40, 1, 77, 77, 980, 990, 12);"
          "INSERT INTO rocpd_event@ (id, stack_id) VALUES (1, 23), (2, 5), (3, 30), (4, 41);" +
          dispatch(77, 1, 1000) + dispatch(77, 2, 2000) + dispatch(78, 3, 3000) +
          dispatch(77, 4, 4000));
  struct Collective : EventSink {
    void OnEvent(const TraceEvent& e) override {
      got[e.ts_ps / 1000] = std::string(e.args_collective);
    }
    std::map<int64_t, std::string> got;  // by start, ns after the base (1000 ns)
  } sink;
  auto s = ReadRocpdDatabase(path, sink);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(sink.got, (std::map<int64_t, std::string>{
                          {0, "ncclAllReduce"},  // 20 before 23, not the group start 22
                          {1000, ""},            // no call before 5
                          {2000, ""},            // thread 78 made no call
                          {3000, "ncclAllGather"}}));
}

class StopAfterOne : public EventSink {
 public:
  explicit StopAfterOne(std::atomic<bool>& stop) : stop_(stop) {}
  void OnEvent(const TraceEvent&) override {
    ++events;
    stop_ = true;
  }
  uint64_t events = 0;

 private:
  std::atomic<bool>& stop_;
};

// Every budget bounds a crafted database of many dispatches: its size counts
// as bytes read; the time limit and the stop flag end a running query.
TEST(RocpdReaderTest, CraftedDatabaseEndsWithinEachBudget) {
  TempDir tmp;
  constexpr int kRows = 200000;
  const std::string path = MakeRocpd(
      tmp.Sub("big.db"),
      std::string(kProcess) +
          "INSERT INTO rocpd_kernel_dispatch@ (nid, pid, agent_id, kernel_id, dispatch_id, "
          "queue_id, stream_id, start, end, workgroup_size_x, workgroup_size_y, "
          "workgroup_size_z, grid_size_x, grid_size_y, grid_size_z) WITH RECURSIVE r(x) AS "
          "(SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < " +
          std::to_string(kRows) +
          ") SELECT 1, 77, 2, 5, x, 1, 0, 1000 + x * 10, 1005 + x * 10, 1, 1, 1, 1, 1, 1 FROM r;");
  {
    std::atomic<bool> stop{false};
    FileLimits limits;
    limits.stop = &stop;
    FileBudget budget(limits);
    StopAfterOne sink(stop);
    auto r = ReadSqliteTrace(path, sink, &budget);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kOverBudget) << r.error().ToString();
    EXPECT_GE(sink.events, 1u);
    EXPECT_LT(sink.events, static_cast<uint64_t>(kRows) / 10);
  }
  {
    FileLimits limits;
    limits.max_bytes = 4096;
    FileBudget budget(limits);
    Collect sink;
    auto r = ReadSqliteTrace(path, sink, &budget);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kOverBudget);
    EXPECT_NE(r.error().ToString().find("--file-max-bytes"), std::string::npos);
    EXPECT_TRUE(sink.events.empty());
  }
  {
    FileLimits limits;
    limits.max_time = std::chrono::nanoseconds(1);
    FileBudget budget(limits);
    Collect sink;
    auto r = ReadSqliteTrace(path, sink, &budget);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kOverBudget);
    EXPECT_NE(r.error().ToString().find("--file-max-seconds"), std::string::npos);
  }
  {
    FileBudget budget;
    Collect sink;
    auto r = ReadSqliteTrace(path, sink, &budget);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->events, static_cast<uint64_t>(kRows));
  }
}

}  // namespace rocpd_reader_test
}  // namespace profwatch::parse
