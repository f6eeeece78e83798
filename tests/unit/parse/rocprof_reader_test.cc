// The rocprofv3 JSON reader: every record kind it reads, exact times
// relative to the file's base, the same events at every read boundary, and
// hostile input (garbage, truncation, absurd timestamps, deep nesting,
// oversized records, more agents than kept) as drops or clear errors.
#include "parse/rocprof_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "parse/sniff.h"
#include "read/byte_source.h"

namespace profwatch::parse {
namespace {
// Named for this file: the unity build compiles it with its neighbours.
namespace rocprof_reader_test {

struct Got {
  std::string cat, name;
  int64_t pid, device, tid, ts_ps, dur_ps, bytes;
  bool operator==(const Got&) const = default;
  friend std::ostream& operator<<(std::ostream& o, const Got& g) {
    return o << g.cat << " " << g.name << " pid " << g.pid << " dev " << g.device << " tid "
             << g.tid << " ts " << g.ts_ps << " dur " << g.dur_ps << " bytes " << g.bytes;
  }
};

class Collect : public EventSink {
 public:
  void OnEvent(const TraceEvent& e) override {
    events.push_back({std::string(e.cat), std::string(e.name), e.pid.num, e.args_device, e.tid.num,
                      e.ts_ps, e.dur_ps, e.args_bytes});
  }
  std::vector<Got> events;
};

Result<ParseSummary> Read(const std::string& doc, Collect& sink, size_t max_chunk = 0,
                          RocprofOptions options = {}) {
  read::MemorySource source(doc);
  if (max_chunk > 0) source.SetMaxChunk(max_chunk);
  return ReadRocprofJson(source, sink, options);
}

// One process (pid 77): a CPU agent, two GPU agents listed out of node
// order (GPU index = rank by node_id), a kernel on GPU 1 of two queues, a
// copy from the CPU to GPU 1, a "step 5" range and a "rank=3" range.
// Timestamps near 3.2e17 ns: ps would overflow int64 without the base.
const std::string kDoc = R"({
 "rocprofiler-sdk-tool": [
  {
   "metadata": {"pid": 77, "init_time": 1, "config": {"a": [1, {"b": "]}"}]}},
   "summary": [],
   "agents": [
    {"size": 1, "id": {"handle": 100}, "type": 1, "name": "cpu", "product_name": "EPYC", "node_id": 0},
    {"size": 1, "id": {"handle": 300}, "type": 2, "name": "gfx942", "product_name": "AMD Instinct MI300X", "node_id": 3},
    {"size": 1, "id": {"handle": 200}, "type": 2, "name": "gfx942", "product_name": "AMD Instinct MI300X", "node_id": 2}
   ],
   "strings": {"callback_records": [], "marker_api": [{"key": 9, "value": "step 5"}, {"key": 8, "value": "rank=3; dp=3"}, {"key": 7, "value": "forward"}]},
   "kernel_symbols": [
    {"kernel_id": 1, "kernel_name": "_Z1kv.kd", "demangled_kernel_name": "Cijk_gemm"},
    {"kernel_id": 2, "kernel_name": "ncclDevKernel_Generic.kd", "demangled_kernel_name": ""}
   ],
   "buffer_records": {
    "kernel_dispatch": [
     {"thread_id": 5, "correlation_id": {"internal": 1, "external": 0}, "start_timestamp": 320000000000001500, "end_timestamp": 320000000000002500,
      "dispatch_info": {"agent_id": {"handle": 300}, "queue_id": {"handle": 555}, "kernel_id": 1}},
     {"dispatch_info": {"kernel_id": 2, "queue_id": {"handle": 666}, "agent_id": {"handle": 300}}, "start_timestamp": 320000000000002000, "end_timestamp": 320000000000004000}
    ],
    "hip_api": [{"start_timestamp": 1, "end_timestamp": 2}],
    "marker_api": [
     {"correlation_id": {"internal": 9, "external": 0}, "start_timestamp": 320000000000001000, "end_timestamp": 320000000000009000, "thread_id": 5},
     {"correlation_id": {"internal": 8, "external": 0}, "start_timestamp": 319999999999999000, "end_timestamp": 320000000000010000, "thread_id": 5},
     {"correlation_id": {"internal": 7, "external": 0}, "start_timestamp": 320000000000001000, "end_timestamp": 320000000000002000, "thread_id": 5}
    ],
    "memory_copy": [
     {"start_timestamp": 320000000000000500, "end_timestamp": 320000000000000900, "dst_agent_id": {"handle": 300}, "src_agent_id": {"handle": 100}, "bytes": 4096}
    ]
   }
  }
 ]
})";

// The base is the first timestamp floored to a microsecond: ...001000 ns.
// RCCL kernels come last: they wait for the process's rccl_api records.
const std::vector<Got> kWant = {
    {"nsys_kernel", "Cijk_gemm", 77, 1, 0, 500000, 1000000, -1},
    {"nsys_step", "5", 77, 0, 0, 0, 8000000, -1},
    {"nsys_memop", "Memcpy", 77, 1, 0, -500000, 400000, 4096},
    {"nsys_kernel", "ncclDevKernel_Generic.kd", 77, 1, 1, 1000000, 2000000, -1},
};

TEST(RocprofReaderTest, ReadsKernelsCopiesStepsAndRanksExactly) {
  Collect sink;
  auto s = Read(kDoc, sink);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->schema, TraceSchema::kRocprof);
  EXPECT_EQ(s->time_base_us, 320000000000001);  // the first timestamp, floored to a µs
  EXPECT_EQ(sink.events, kWant);
  EXPECT_EQ(s->events, kWant.size());
  // The GPU that dispatched names the device; the other GPU agent is seen.
  EXPECT_EQ(s->device_names, std::vector<std::string>{"AMD Instinct MI300X"});
  EXPECT_EQ(s->idle_gpu_agents, 1);
  EXPECT_EQ(s->idle_gpu_agent_names,
            std::vector<std::string>{"pid 77 GPU 0 (AMD Instinct MI300X)"});
  EXPECT_EQ(s->process_ranks.at(77), 3);
  EXPECT_TRUE(s->drops.empty());
}

TEST(RocprofReaderTest, EveryReadBoundaryGivesTheSameEvents) {
  for (size_t chunk : {1, 2, 3, 7, 64, 1000}) {
    Collect sink;
    RocprofOptions o;
    o.chunk_bytes = chunk;  // the reader's buffer (at least 64)
    auto s = Read(kDoc, sink, chunk, o);
    ASSERT_TRUE(s) << chunk << " " << s.error().ToString();
    EXPECT_EQ(sink.events, kWant) << chunk;
  }
}

TEST(RocprofReaderTest, SniffedByItsFirstKey) {
  EXPECT_TRUE(LooksLikeRocprofJson(kDoc.substr(0, 64)));
  EXPECT_TRUE(LooksLikeRocprofJson("\xEF\xBB\xBF{\"rocprofiler-sdk-tool\":[]}"));
  EXPECT_FALSE(LooksLikeRocprofJson(R"({"traceEvents":[], "rocprofiler-sdk-tool":[]})"));
  EXPECT_FALSE(LooksLikeRocprofJson(R"(["rocprofiler-sdk-tool"])"));
  EXPECT_EQ(SniffFormat(kDoc.substr(0, 64)), FileFormat::kRocprofJson);
  EXPECT_EQ(SniffFormat(R"({"traceEvents":[]})"), FileFormat::kJson);
}

TEST(RocprofReaderTest, GarbageAndTruncationAreErrorsNeverCrashes) {
  Collect sink;
  auto not_json = Read("{\"rocprofiler-sdk-tool\": [ {\"agents\": [} ]}", sink);
  ASSERT_FALSE(not_json);
  EXPECT_EQ(not_json.error().code, ErrorCode::kCorrupt);
  auto other = Read(R"({"traceEvents": []})", sink);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::kUnsupported);
  auto array = Read(R"([1, 2])", sink);
  ASSERT_FALSE(array);
  EXPECT_EQ(array.error().code, ErrorCode::kCorrupt);
  // Every prefix of a good file: truncated (or, cut inside a token, corrupt).
  for (size_t n = 0; n < kDoc.size() - 2; n += 7) {
    Collect part;
    auto r = Read(kDoc.substr(0, n), part);
    ASSERT_FALSE(r) << n;
    EXPECT_TRUE(r.error().code == ErrorCode::kTruncated || r.error().code == ErrorCode::kCorrupt)
        << n << " " << r.error().ToString();
  }
  // Bytes of every value: read to an error or to the end, never a crash.
  std::string noise;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    noise.push_back("{}[]\",:0123 tx\\"[x % 16]);
  }
  (void)Read("{\"rocprofiler-sdk-tool\":" + noise, sink);
  // Records of the wrong shape are dropped and counted, the rest read.
  Collect bad;
  auto r = Read(R"({"rocprofiler-sdk-tool":[{"agents":[1,"x",{"id":{"handle":"h"},"type":2}],)"
                R"("kernel_symbols":{"a":1},"buffer_records":{"kernel_dispatch":[{"x":1},[]]}}]})",
                bad);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->drops.at("bad_record"), 6u);
  EXPECT_TRUE(bad.events.empty());
}

// Timestamps no clock gives: end before start, zero, beyond int64, a
// duration whose ps overflow. Dropped as bad_time; the good record stays.
TEST(RocprofReaderTest, AbsurdTimestampsAreDroppedAndCounted) {
  std::string doc =
      R"({"rocprofiler-sdk-tool":[{"metadata":{"pid":1},"agents":[{"id":{"handle":1},"type":2}],)"
      R"("kernel_symbols":[{"kernel_id":1,"kernel_name":"k"}],"buffer_records":{"kernel_dispatch":[)";
  const char* times[][2] = {{"1000", "2000"},
                            {"5000", "4000"},
                            {"0", "10"},
                            {"18446744073709551615", "18446744073709551615"},
                            {"1000", "18446744073709551615"},
                            {"1000", "9223372036854775807"},
                            {"-5", "10"},
                            {"1e3", "2e3"}};
  bool first = true;
  for (const auto& t : times) {
    if (!first) doc += ",";
    first = false;
    doc += std::string(R"({"start_timestamp":)") + t[0] + R"(,"end_timestamp":)" + t[1] +
           R"(,"dispatch_info":{"agent_id":{"handle":1},"kernel_id":1}})";
  }
  doc += "]}}]}";
  Collect sink;
  auto s = Read(doc, sink);
  ASSERT_TRUE(s) << s.error().ToString();
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0].dur_ps, 1000000);
  EXPECT_EQ(s->drops.at("bad_time"), 5u);
  EXPECT_EQ(s->drops.at("bad_record"), 2u);  // negative and float timestamps
}

// Deep nesting where the schema has none is skipped with a counter (any
// depth); inside a record it fails that record only (simdjson's depth limit).
TEST(RocprofReaderTest, DeepNestingIsSkippedOrDropped) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string doc =
      R"({"rocprofiler-sdk-tool":[{"counters":)" + deep +
      R"(,"agents":[{"id":{"handle":1},"type":2,"x":)" + deep +
      R"(},{"id":{"handle":2},"type":2}],"kernel_symbols":[{"kernel_id":1,"kernel_name":"k"}],)"
      R"("buffer_records":{"kernel_dispatch":[{"start_timestamp":1,"end_timestamp":2,)"
      R"("dispatch_info":{"agent_id":{"handle":2},"kernel_id":1}}]}}]})";
  Collect sink;
  auto s = Read(doc, sink);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(s->drops["record_too_large"] + s->drops["bad_record"], 1u);
}

TEST(RocprofReaderTest, OversizedRecordsAndAgentsBeyondTheCapAreCounted) {
  std::string agents;
  for (size_t i = 0; i < kMaxRocprofAgents + 10; ++i) {
    if (i > 0) agents += ",";
    agents += R"({"id":{"handle":)" + std::to_string(i + 1) + R"(},"type":2})";
  }
  const std::string doc = R"({"rocprofiler-sdk-tool":[{"agents":[)" + agents +
                          R"(],"kernel_symbols":[{"kernel_id":1,"kernel_name":")" +
                          std::string(2 << 20, 'k') + R"("}]}]})";
  Collect sink;
  auto s = Read(doc, sink);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->drops.at("agent_limit"), 10u);
  EXPECT_EQ(s->drops.at("record_too_large"), 1u);
  EXPECT_EQ(s->idle_gpu_agents, static_cast<int64_t>(kMaxRocprofAgents));
  // Named as far as the file's cap on names; without a product name, no parenthesis.
  ASSERT_EQ(s->idle_gpu_agent_names.size(), kMaxIdleGpuAgentNames);
  EXPECT_EQ(s->idle_gpu_agent_names.front(), "pid 0 GPU 0");
}

// RCCL kernels get the collective of the latest collective rccl_api call of
// their launching thread before them (by correlation id), whichever section
// comes first; ncclGroupStart is no collective, another thread's call is not
// theirs, and a kernel with no call before it has none.
TEST(RocprofReaderTest, RcclKernelsGetTheCollectiveOfTheirThreadsLatestCall) {
  auto dispatch = [](int kernel, int corr, int thread, int start) {
    return R"({"thread_id":)" + std::to_string(thread) + R"(,"correlation_id":{"internal":)" +
           std::to_string(corr) + R"(},"start_timestamp":)" + std::to_string(start) +
           R"(,"end_timestamp":)" + std::to_string(start + 10) +
           R"(,"dispatch_info":{"agent_id":{"handle":2},"queue_id":{"handle":1},"kernel_id":)" +
           std::to_string(kernel) + "}}";
  };
  auto call = [](int op, int corr, int thread) {
    return R"({"operation":)" + std::to_string(op) + R"(,"correlation_id":{"internal":)" +
           std::to_string(corr) + R"(},"thread_id":)" + std::to_string(thread) +
           R"(,"start_timestamp":1,"end_timestamp":2})";
  };
  const std::string head =
      R"({"rocprofiler-sdk-tool":[{"metadata":{"pid":5},"agents":[{"id":{"handle":2},"type":2}],)"
      R"("strings":{"buffer_records":[{"kind":"HIP_API","operations":["hipMalloc"]},)"
      R"({"kind":"RCCL_API","operations":["ncclAllGather","ncclAllReduce","ncclGroupStart"]}]},)"
      R"("kernel_symbols":[{"kernel_id":1,"kernel_name":"ncclDevKernel_Generic_1"
},)"
      R"({"kernel_id":2,"kernel_name":"gemm"}],"buffer_records":{)";
  const std::string dispatches = R"("kernel_dispatch":[)" + dispatch(1, 3, 7, 100) + "," +
                                 dispatch(2, 4, 7, 200) + "," + dispatch(1, 7, 7, 300) + "," +
                                 dispatch(1, 9, 8, 400) + "," + dispatch(1, 1, 7, 50) + "]";
  const std::string calls = R"("rccl_api":[)" + call(1, 2, 7) + "," + call(0, 5, 7) + "," +
                            call(2, 6, 7) + "," + call(1, 8, 7) + "]";
  for (const bool calls_first : {false, true}) {
    SCOPED_TRACE(calls_first);
    const std::string doc =
        head + (calls_first ? calls + "," + dispatches : dispatches + "," + calls) + "}}]}";
    struct Collective : EventSink {
      void OnEvent(const TraceEvent& e) override {
        if (e.cat == kNsysKernelCat) got[e.ts_ps] = std::string(e.args_collective);
      }
      std::map<int64_t, std::string> got;
    } sink;
    read::MemorySource source(doc);
    auto s = ReadRocprofJson(source, sink);
    ASSERT_TRUE(s) << s.error().ToString();
    EXPECT_TRUE(s->drops.empty());
    // Keyed by start in ps (the base, the first start floored to a us, is 0).
    std::map<std::string, std::string> by_start;
    for (const auto& [ts, c] : sink.got) by_start[std::to_string(ts)] = c;
    auto at = [](int64_t ns) { return std::to_string(ns * 1000); };
    EXPECT_EQ(by_start, (std::map<std::string, std::string>{
                            {at(100), "ncclAllReduce"},  // call 2 before dispatch 3
                            {at(200), ""},               // gemm: not an RCCL kernel
                            {at(300), "ncclAllGather"},  // 5, not the group start 6
                            {at(400), ""},               // thread 8 made no call
                            {at(50), ""}}));             // no call before id 1
  }
}

}  // namespace rocprof_reader_test
}  // namespace
}  // namespace profwatch::parse
