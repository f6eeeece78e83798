#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "parse/event_decoder.h"
#include "parse/trace_parser.h"
#include "read/prefetch_source.h"
#include "testing/test_util.h"
#include "unit/parse/string_source.h"

namespace profwatch::parse {
namespace {

using ::testing::HasSubstr;
using testing::StringSource;

// Owned copy of a TraceEvent (the parser's views die after OnEvent).
struct OwnedId {
  IdKind kind = IdKind::kMissing;
  int64_t num = 0;
  std::string str;
};

struct OwnedEvent {
  char ph = 0;
  bool has_name = false;
  std::string name;
  std::string cat;
  OwnedId pid;
  OwnedId tid;
  bool has_ts = false;
  int64_t ts_ps = 0;
  bool has_dur = false;
  bool dur_exact = false;
  int64_t dur_ps = 0;
  double dur_us = 0;
  std::string args_name;
  bool has_args_device = false;
  int64_t args_device = 0;
  bool has_args_stream = false;
  int64_t args_stream = 0;
  std::string args_collective, args_dtype, args_hlo_op, args_pg_desc, args_pg_ranks;
  int64_t args_in_nelems = -1, args_out_nelems = -1, args_group_size = -1;
  int64_t args_bytes = -1;
  std::string args_memop_details;
};

OwnedId Own(const Id& id) { return {id.kind, id.num, std::string(id.str)}; }

class Collector : public EventSink {
 public:
  void OnEvent(const TraceEvent& e) override {
    OwnedEvent o;
    o.ph = e.ph;
    o.has_name = e.has_name;
    o.name = e.name;
    o.cat = e.cat;
    o.pid = Own(e.pid);
    o.tid = Own(e.tid);
    o.has_ts = e.has_ts;
    o.ts_ps = e.ts_ps;
    o.has_dur = e.has_dur;
    o.dur_exact = e.dur_exact;
    o.dur_ps = e.dur_ps;
    o.dur_us = e.dur_us;
    o.args_name = e.args_name;
    o.has_args_device = e.has_args_device;
    o.args_device = e.args_device;
    o.has_args_stream = e.has_args_stream;
    o.args_stream = e.args_stream;
    o.args_collective = e.args_collective;
    o.args_dtype = e.args_dtype;
    o.args_pg_desc = e.args_pg_desc;
    o.args_pg_ranks = e.args_pg_ranks;
    o.args_hlo_op = e.args_hlo_op;
    o.args_in_nelems = e.args_in_nelems;
    o.args_out_nelems = e.args_out_nelems;
    o.args_group_size = e.args_group_size;
    o.args_bytes = e.args_bytes;
    o.args_memop_details = e.args_memop_details;
    events.push_back(std::move(o));
  }

  // Order-sensitive text rendering of every field, to compare streams.
  std::string Digest() const {
    std::string out;
    auto id = [&](const OwnedId& i) {
      out += std::to_string(static_cast<int>(i.kind)) + ":" + std::to_string(i.num) + ":" + i.str +
             "|";
    };
    for (const OwnedEvent& e : events) {
      out += std::string(1, e.ph) + "|" + std::to_string(e.has_name) + e.name + "|" + e.cat + "|";
      id(e.pid);
      id(e.tid);
      out += std::to_string(e.has_ts) + ":" + std::to_string(e.ts_ps) + "|" +
             std::to_string(e.has_dur) + std::to_string(e.dur_exact) + ":" +
             std::to_string(e.dur_ps) + ":" + std::to_string(e.dur_us) + "|" + e.args_name + "|" +
             std::to_string(e.has_args_device) + std::to_string(e.args_device) +
             std::to_string(e.has_args_stream) + std::to_string(e.args_stream) + "\n";
    }
    return out;
  }

  std::vector<OwnedEvent> events;
};

struct ParseRun {
  Result<ParseSummary> result;
  Collector sink;
};

ParseRun ParseString(const std::string& json, size_t read_chunk = static_cast<size_t>(-1),
                     ParseOptions options = {}) {
  ParseRun run;
  StringSource source(json, read_chunk);
  auto parser = MakeJsonTraceParser(options);
  run.result = parser->Parse(source, run.sink);
  return run;
}

std::string Gunzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[1 << 16];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END) << path;
  inflateEnd(&zs);
  return out;
}

// ---------------------------------------------------------------- basics

TEST(JsonTraceParserTest, ParsesJaxShapeAndCountsTrailingEmptyObject) {
  const std::string json =
      R"({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)"
      R"({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)"
      R"j({"ph":"M","pid":1,"tid":16,"name":"thread_name","args":{"name":"Stream #16(Kernel)"}},)j"
      R"({"ph":"X","pid":1,"tid":16,"ts":22.140000000000001,"dur":1.5,"name":"loop_fusion.kd",)"
      R"("args":{"correlation_id":"22","hlo_op":"loop_fusion"}},)"
      R"({}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  const ParseSummary& s = *run.result;
  EXPECT_EQ(s.events, 3u);
  EXPECT_EQ(s.empty_events, 1u);
  EXPECT_TRUE(s.drops.empty());
  EXPECT_TRUE(s.has_trace_events);
  EXPECT_FALSE(s.suspected_truncated);
  EXPECT_EQ(s.schema, TraceSchema::kJaxTraceEvents);
  EXPECT_EQ(s.json_bytes, json.size());
  EXPECT_EQ(s.time_base_us, 22);
  ASSERT_EQ(run.sink.events.size(), 3u);
  const OwnedEvent& m = run.sink.events[0];
  EXPECT_EQ(m.ph, 'M');
  EXPECT_EQ(m.name, "process_name");
  EXPECT_EQ(m.args_name, "/device:GPU:0");
  EXPECT_EQ(m.pid.kind, IdKind::kInt);
  EXPECT_EQ(m.pid.num, 1);
  EXPECT_EQ(m.tid.kind, IdKind::kMissing);
  EXPECT_FALSE(m.has_ts);
  EXPECT_FALSE(m.has_dur);
  const OwnedEvent& x = run.sink.events[2];
  EXPECT_EQ(x.ph, 'X');
  EXPECT_EQ(x.name, "loop_fusion.kd");
  EXPECT_TRUE(x.cat.empty());
  EXPECT_EQ(x.tid.num, 16);
  EXPECT_TRUE(x.has_ts);
  EXPECT_EQ(x.ts_ps, 140000);  // 22.140000000000001 us - 22 us, exact at the ps
  EXPECT_TRUE(x.has_dur);
  EXPECT_TRUE(x.dur_exact);
  EXPECT_EQ(x.dur_ps, 1500000);
  EXPECT_EQ(x.dur_us, 1.5);
  EXPECT_TRUE(x.args_name.empty());
}

TEST(JsonTraceParserTest, ReadsKinetoHeaderAfterAndBeforeTraceEvents) {
  const std::string events =
      R"("traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":2,"tid":7,"ts":1712195495505582.988,)"
      R"("dur":3,"args":{"device":2,"stream":7,"correlation":5}}])";
  const std::string header =
      R"("schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA A100"}],)"
      R"("distributedInfo":{"backend":"nccl","rank":3,"world_size":8,"pg_config":[{"ranks":[0,1]}]},)"
      R"("baseTimeNanoseconds":1711964646000000000,"displayTimeUnit":"ms","user":{"x":[1,2,{"y":"}"}]})";
  for (const std::string& json :
       {"{" + header + "," + events + "}", "{" + events + "," + header + "}"}) {
    ParseRun run = ParseString(json);
    ASSERT_TRUE(run.result) << run.result.error().ToString();
    const ParseSummary& s = *run.result;
    EXPECT_EQ(s.schema, TraceSchema::kKineto);
    EXPECT_EQ(s.events, 1u);
    EXPECT_EQ(s.base_time_ns, 1711964646000000000);
    EXPECT_EQ(s.rank, 3);
    EXPECT_EQ(s.world_size, 8);
    EXPECT_EQ(s.time_base_us, 1712195495505582);
    ASSERT_EQ(run.sink.events.size(), 1u);
    const OwnedEvent& e = run.sink.events[0];
    EXPECT_EQ(e.cat, "kernel");
    EXPECT_EQ(e.ts_ps, 988000);  // exact: a double would be off by up to 0.125 us
    EXPECT_EQ(e.dur_ps, 3000000);
    EXPECT_TRUE(e.has_args_device);
    EXPECT_EQ(e.args_device, 2);
    EXPECT_TRUE(e.has_args_stream);
    EXPECT_EQ(e.args_stream, 7);
  }
}

TEST(JsonTraceParserTest, FieldOrderDoesNotMatter) {
  ParseRun a =
      ParseString(R"({"traceEvents":[{"ph":"X","name":"n","pid":1,"tid":2,"ts":5,"dur":1}]})");
  ParseRun b = ParseString(
      R"({"traceEvents":[{"dur":1,"ts":5,"tid":2,"args":{},"pid":1,"name":"n","ph":"X"}]})");
  ASSERT_TRUE(a.result);
  ASSERT_TRUE(b.result);
  EXPECT_EQ(a.sink.Digest(), b.sink.Digest());
  EXPECT_EQ(a.sink.events.size(), 1u);
}

TEST(JsonTraceParserTest, IdKindsFollowPythonValues) {
  const std::string json = R"({"traceEvents":[)"
                           R"({"pid":1,"tid":1.0},)"
                           R"({"pid":"Spans","tid":"stream 7"},)"
                           R"({"pid":null},)"
                           R"({"pid":true,"tid":1.5},)"
                           R"({"pid":[1, 2],"tid":{"a":1}},)"
                           R"({"pid":-3,"tid":1e2},)"
                           R"({"pid":"","tid":99999999999999999999}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  const auto& ev = run.sink.events;
  ASSERT_EQ(ev.size(), 7u);
  EXPECT_EQ(ev[0].pid.kind, IdKind::kInt);
  EXPECT_EQ(ev[0].tid.kind, IdKind::kInt);  // 1.0 is integral
  EXPECT_EQ(ev[0].tid.num, 1);
  EXPECT_EQ(ev[1].pid.kind, IdKind::kString);
  EXPECT_EQ(ev[1].pid.str, "Spans");
  EXPECT_EQ(ev[1].tid.str, "stream 7");
  EXPECT_EQ(ev[2].pid.kind, IdKind::kMissing);  // null is None, like missing
  EXPECT_EQ(ev[2].tid.kind, IdKind::kMissing);
  EXPECT_EQ(ev[3].pid.kind, IdKind::kOther);
  EXPECT_EQ(ev[3].pid.str, "true");
  EXPECT_EQ(ev[3].tid.kind, IdKind::kOther);
  EXPECT_EQ(ev[3].tid.str, "1.5");
  EXPECT_EQ(ev[4].pid.kind, IdKind::kOther);
  EXPECT_EQ(ev[4].pid.str, "[1, 2]");
  EXPECT_EQ(ev[4].tid.str, R"({"a":1})");
  EXPECT_EQ(ev[5].pid.num, -3);
  EXPECT_EQ(ev[5].tid.kind, IdKind::kInt);
  EXPECT_EQ(ev[5].tid.num, 100);
  EXPECT_EQ(ev[6].pid.kind, IdKind::kString);
  EXPECT_EQ(ev[6].pid.str, "");
  EXPECT_EQ(ev[6].tid.kind, IdKind::kOther);  // beyond int64
  EXPECT_EQ(ev[6].tid.str, "99999999999999999999");
}

TEST(JsonTraceParserTest, TimesAreExactPicosecondsFromDecimalText) {
  const std::string json = R"({"traceEvents":[)"
                           R"({"ph":"X","ts":100.5,"dur":1e-06},)"
                           R"({"ph":"X","ts":99.25,"dur":22.140000000000001},)"
                           R"({"ph":"X","ts":1e2,"dur":1e+20},)"
                           R"({"ph":"X","ts":101,"dur":-1e+20},)"
                           R"({"ph":"X","ts":0,"dur":-2.5},)"
                           R"({"ph":"X","ts":"7","dur":"3"},)"
                           R"({"ph":"X","dur":1500250.0}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_EQ(run.result->time_base_us, 100);  // floor of the first ts
  const auto& ev = run.sink.events;
  ASSERT_EQ(ev.size(), 7u);
  EXPECT_EQ(ev[0].ts_ps, 500000);
  EXPECT_EQ(ev[0].dur_ps, 1);
  EXPECT_EQ(ev[0].dur_us, 1e-06);
  EXPECT_EQ(ev[1].ts_ps, -750000);
  EXPECT_EQ(ev[1].dur_ps, 22140000);
  EXPECT_EQ(ev[1].dur_us, 22.140000000000001);
  EXPECT_EQ(ev[2].ts_ps, 0);
  EXPECT_TRUE(ev[2].has_dur);
  EXPECT_FALSE(ev[2].dur_exact);  // 1e20 us does not fit int64 ps
  EXPECT_EQ(ev[2].dur_us, 1e20);
  EXPECT_EQ(ev[3].ts_ps, 1000000);
  EXPECT_FALSE(ev[3].dur_exact);
  EXPECT_EQ(ev[3].dur_us, -1e20);
  EXPECT_EQ(ev[4].ts_ps, -100000000);
  EXPECT_EQ(ev[4].dur_ps, -2500000);
  EXPECT_FALSE(ev[5].has_ts);  // strings are not times
  EXPECT_FALSE(ev[5].has_dur);
  EXPECT_EQ(ev[5].dur_us, 0.0);
  EXPECT_FALSE(ev[6].has_ts);
  EXPECT_EQ(ev[6].dur_ps, 1500250000000);
}

TEST(JsonTraceParserTest, OutOfRangeDurationIsInfinityLikePython) {
  ParseRun run = ParseString(R"({"traceEvents":[{"ph":"X","dur":1e400},{"ph":"X","dur":-1e400}]})");
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  ASSERT_EQ(run.sink.events.size(), 2u);
  EXPECT_TRUE(run.sink.events[0].has_dur);
  EXPECT_FALSE(run.sink.events[0].dur_exact);
  EXPECT_EQ(run.sink.events[0].dur_us, HUGE_VAL);
  EXPECT_EQ(run.sink.events[1].dur_us, -HUGE_VAL);
}

TEST(JsonTraceParserTest, UnescapesNamesWithQuotesBackslashesAndBrackets) {
  const std::string json =
      R"({"traceEvents":[{"name":"a\"b\\c{d}[e],f\\","cat":"\u00e9\n","ph":"X"},{"name":"\\\"}"}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  ASSERT_EQ(run.sink.events.size(), 2u);
  EXPECT_EQ(run.sink.events[0].name, "a\"b\\c{d}[e],f\\");
  EXPECT_EQ(run.sink.events[0].cat, "\xc3\xa9\n");
  EXPECT_EQ(run.sink.events[1].name, "\\\"}");
}

TEST(JsonTraceParserTest, DuplicateKeysLastWinsLikePython) {
  ParseRun run = ParseString(R"({"traceEvents":[{"name":"a","name":7,"pid":1,"pid":"x"}]})");
  ASSERT_TRUE(run.result);
  ASSERT_EQ(run.sink.events.size(), 1u);
  EXPECT_FALSE(run.sink.events[0].has_name);
  EXPECT_EQ(run.sink.events[0].pid.str, "x");
}

// A memory operation's bytes: Kineto's args.bytes (a non-negative integer,
// else unknown) and JAX's memcpy_details / Memset_details text.
TEST(JsonTraceParserTest, MemopBytesArgsAreRead) {
  const std::string json =
      R"({"traceEvents":[)"
      R"({"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","args":{"bytes":131136}},)"
      R"({"ph":"X","cat":"gpu_memset","name":"Memset","args":{"bytes":-4}},)"
      R"({"ph":"X","name":"MemcpyD2H","args":{"memcpy_details":"kind_src:unknown size:4"}},)"
      R"({"ph":"X","name":"Memset","args":{"Memset_details":"kind:unknown num_bytes:8"}},)"
      R"({"ph":"X","cat":"kernel","name":"k","args":{"bytesX":3}}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  const auto& ev = run.sink.events;
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].args_bytes, 131136);
  EXPECT_EQ(ev[1].args_bytes, -1);
  EXPECT_EQ(ev[2].args_memop_details, "kind_src:unknown size:4");
  EXPECT_EQ(ev[2].args_bytes, -1);  // no carry-over
  EXPECT_EQ(ev[3].args_memop_details, "kind:unknown num_bytes:8");
  EXPECT_EQ(ev[4].args_bytes, -1);
  EXPECT_EQ(ev[4].args_memop_details, "");
}

// The communication args a collective's figures need (aggregate/
// collectives.h): Kineto's names and counts, JAX's hlo_op. A count that is
// not a non-negative integer is unknown (-1), never an error; the next
// event starts without the previous one's values.
TEST(JsonTraceParserTest, CollectiveArgsAreReadAndBadCountsAreUnknown) {
  const std::string json =
      R"({"traceEvents":[)"
      R"({"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather_RING_LL","args":{)"
      R"("Collective name":"_allgather_base","In msg nelems":25136,"Out msg nelems":201088,)"
      R"("Group size":8,"dtype":"BFloat16","Process Group Ranks":"[0, 1]",)"
      R"("Process Group Description":"fsdp\u0020shard"}},)"
      R"({"ph":"X","cat":"kernel","name":"k","args":{"Collective name":"all_reduce",)"
      R"("In msg nelems":"12","Out msg nelems":-4,"Group size":2.5,"dtype":7,)"
      R"("Process Group Description":3,"Process Group Ranks":[0, 1]}},)"
      R"({"ph":"X","name":"ncclDevKernel_Generic_4","args":{"hlo_op":"all-gather-start.3"}},)"
      R"({"ph":"X","cat":"kernel","name":"plain","args":{"In msg nelemsX":3}}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  const auto& ev = run.sink.events;
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].args_collective, "_allgather_base");
  EXPECT_EQ(ev[0].args_dtype, "BFloat16");
  EXPECT_EQ(ev[0].args_in_nelems, 25136);
  EXPECT_EQ(ev[0].args_out_nelems, 201088);
  EXPECT_EQ(ev[0].args_group_size, 8);
  EXPECT_EQ(ev[0].args_pg_desc, "fsdp shard");  // escapes resolved
  EXPECT_EQ(ev[0].args_pg_ranks, "[0, 1]");
  EXPECT_EQ(ev[1].args_pg_desc, "");  // not a string: none
  EXPECT_EQ(ev[1].args_pg_ranks, "");
  EXPECT_EQ(ev[3].args_pg_desc, "");               // no carry-over from earlier events
  EXPECT_EQ(ev[1].args_collective, "all_reduce");  // escapes resolved
  EXPECT_EQ(ev[1].args_in_nelems, -1);
  EXPECT_EQ(ev[1].args_out_nelems, -1);
  EXPECT_EQ(ev[1].args_group_size, -1);
  EXPECT_EQ(ev[1].args_dtype, "");
  EXPECT_EQ(ev[2].args_hlo_op, "all-gather-start.3");
  EXPECT_EQ(ev[2].args_collective, "");
  EXPECT_EQ(ev[3].args_in_nelems, -1);
  EXPECT_EQ(ev[3].args_hlo_op, "");
}

TEST(JsonTraceParserTest, ArgsNameDeviceAndStreamAreReadForEveryEvent) {
  // A JAX X event's scope (args.name) is read for regions; its other args
  // (correlation_id, hlo_op, ...) are skipped.
  const std::string json =
      R"({"traceEvents":[)"
      R"({"ph":"X","name":"k","args":{"name":"jit(f)/dot","device":1}},)"
      R"({"ph":"M","name":"thread_name","args":{"name":"Stream #1"}},)"
      R"({"args":{"name":"/device:GPU:1"},"name":"process_name","ph":"M"},)"
      R"({"ph":"X","cat":"kernel","args":{"device":2,"stream":7}},)"
      R"({"ph":"X","args":{"device":3,"stream":8.0,"name":"n"},"cat":"kernel"},)"
      R"({"ph":"X","cat":"kernel","args":null},)"
      R"({"args":{"device":"4","stream":5}}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  const auto& ev = run.sink.events;
  ASSERT_EQ(ev.size(), 7u);
  EXPECT_EQ(ev[0].args_name, "jit(f)/dot");
  EXPECT_TRUE(ev[0].has_args_device);
  EXPECT_EQ(ev[1].args_name, "Stream #1");
  EXPECT_EQ(ev[2].args_name, "/device:GPU:1");  // args before ph: read
  EXPECT_TRUE(ev[3].has_args_device);
  EXPECT_EQ(ev[3].args_device, 2);
  EXPECT_EQ(ev[3].args_stream, 7);
  EXPECT_EQ(ev[4].args_device, 3);  // cat after args
  EXPECT_TRUE(ev[4].has_args_stream);
  EXPECT_EQ(ev[4].args_stream, 8);
  EXPECT_EQ(ev[4].args_name, "n");
  EXPECT_FALSE(ev[5].has_args_device);
  EXPECT_FALSE(ev[6].has_args_device);  // a string is not a device ordinal
  EXPECT_TRUE(ev[6].has_args_stream);
  EXPECT_EQ(ev[6].args_stream, 5);
}

// ---------------------------------------------------------------- entries

TEST(JsonTraceParserTest, EmptyObjectsAreCountedNotDelivered) {
  ParseRun run = ParseString("{\"traceEvents\":[{}, { \n }, {\"ph\":\"X\"} ,{}]}");
  ASSERT_TRUE(run.result);
  EXPECT_EQ(run.result->events, 1u);
  EXPECT_EQ(run.result->empty_events, 3u);
  EXPECT_EQ(run.sink.events.size(), 1u);
}

TEST(JsonTraceParserTest, NonObjectEntriesAreDroppedAndCounted) {
  ParseRun run = ParseString(
      R"({"traceEvents":[1,"x,]}",[1,{"a":2}],null,true,{"ph":"X","name":"kept"},-2.5e3]})");
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_EQ(run.result->events, 1u);
  EXPECT_EQ(run.result->drops.at("not_object"), 6u);
  ASSERT_EQ(run.sink.events.size(), 1u);
  EXPECT_EQ(run.sink.events[0].name, "kept");
}

TEST(JsonTraceParserTest, BadJsonInsideAnEventIsDroppedAndParsingContinues) {
  ParseRun run = ParseString(
      R"({"traceEvents":[{"ph":"X","pid":},{"ph" "X"},{"a":1} x,{"a":1}},{"ph":"X","name":"ok"},]})");
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_EQ(run.result->events, 1u);
  // 4 broken entries + the stray trailing comma
  EXPECT_EQ(run.result->drops.at("bad_json"), 5u);
  ASSERT_EQ(run.sink.events.size(), 1u);
  EXPECT_EQ(run.sink.events[0].name, "ok");
}

TEST(JsonTraceParserTest, InvalidUtf8EventIsDroppedAsBadUtf8) {
  std::string json = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"bad\xff\xfe\"},";
  json += "{\"ph\":\"X\",\"args\":{\"x\":\"\xc3\x28\"}},{\"ph\":\"X\",\"name\":\"good\"}]}";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_EQ(run.result->events, 1u);
  EXPECT_EQ(run.result->drops.at("bad_utf8"), 2u);  // also in skipped args: simdjson validates all
  EXPECT_EQ(run.sink.events[0].name, "good");
}

TEST(JsonTraceParserTest, OversizedEventIsDroppedAtAnyReadSize) {
  const std::string big(5000, 'x');
  const std::string json =
      R"({"traceEvents":[{"name":"a"},{"name":")" + big + R"(\"{["},{"name":"b"}]})";
  for (size_t chunk : {1, 7, 64, 100, 4096, 1 << 20}) {
    ParseOptions opt;
    opt.max_event_bytes = 1000;
    opt.chunk_bytes = chunk;
    ParseRun run = ParseString(json, static_cast<size_t>(-1), opt);
    ASSERT_TRUE(run.result) << chunk << ": " << run.result.error().ToString();
    EXPECT_EQ(run.result->events, 2u) << chunk;
    EXPECT_EQ(run.result->drops.at("event_too_large"), 1u) << chunk;
    ASSERT_EQ(run.sink.events.size(), 2u);
    EXPECT_EQ(run.sink.events[1].name, "b");
  }
}

TEST(JsonTraceParserTest, HugeStringValueDoesNotGrowMemoryBeyondEventLimit) {
  // 64 MiB string in an event, limit 1 MiB: dropped, later event kept.
  std::string json = R"({"traceEvents":[{"name":")";
  json.append(64u << 20, 'a');
  json += R"("},{"name":"after"}]})";
  ParseOptions opt;
  opt.max_event_bytes = 1 << 20;
  opt.chunk_bytes = 1 << 16;
  ParseRun run = ParseString(json, static_cast<size_t>(-1), opt);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_EQ(run.result->drops.at("event_too_large"), 1u);
  ASSERT_EQ(run.sink.events.size(), 1u);
  EXPECT_EQ(run.sink.events[0].name, "after");
}

TEST(JsonTraceParserTest, DeeplyNestedEventIsDroppedWithoutStackOverflow) {
  std::string deep =
      R"({"ph":"X","args":{"a":)" + std::string(100000, '[') + std::string(100000, ']') + "}}";
  ParseRun run = ParseString(R"({"traceEvents":[)" + deep + R"(,{"ph":"X","name":"ok"}]})");
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_EQ(run.result->drops.at("too_deep"), 1u);
  EXPECT_EQ(run.result->events, 1u);
}

TEST(JsonTraceParserTest, NestingJustBelowTheLimitIsAccepted) {
  std::string nested =
      R"({"ph":"X","args":{"a":)" + std::string(1000, '[') + std::string(1000, ']') + "}}";
  ParseRun run = ParseString(R"({"traceEvents":[)" + nested + "]}");
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_EQ(run.result->events, 1u);
  EXPECT_TRUE(run.result->drops.empty());
}

TEST(JsonTraceParserTest, UnclosedDeepEntryIsTruncatedNotACrash) {
  ParseRun run = ParseString(R"({"traceEvents":[)" + std::string(100000, '['));
  ASSERT_FALSE(run.result);
  EXPECT_EQ(run.result.error().code, ErrorCode::kTruncated);
}

TEST(JsonTraceParserTest, DeeplyNestedHeaderValueIsSkippedIteratively) {
  const std::string json = R"({"x":)" + std::string(200000, '[') + std::string(200000, ']') +
                           R"(,"distributedInfo":)" + std::string(5000, '[') +
                           std::string(5000, ']') + R"(,"traceEvents":[]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_EQ(run.result->events, 0u);
  EXPECT_FALSE(run.result->rank.has_value());
}

TEST(JsonTraceParserTest, OversizedHeaderValueIsSkippedNotCaptured) {
  std::string info = R"({"rank":1,"pad":")" + std::string(2000, 'p') + R"("})";
  ParseOptions opt;
  opt.max_header_value_bytes = 1000;
  ParseRun run = ParseString(R"({"distributedInfo":)" + info + R"(,"traceEvents":[{"ph":"X"}]})",
                             static_cast<size_t>(-1), opt);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  EXPECT_FALSE(run.result->rank.has_value());
  EXPECT_EQ(run.result->events, 1u);
  opt.max_header_value_bytes = 4000;
  run = ParseString(R"({"distributedInfo":)" + info + R"(,"traceEvents":[{"ph":"X"}]})",
                    static_cast<size_t>(-1), opt);
  ASSERT_TRUE(run.result);
  EXPECT_EQ(run.result->rank, 1);
}

// ---------------------------------------------------------------- schema

TEST(JsonTraceParserTest, SchemaFromCatOrProcessNames) {
  EXPECT_EQ(ParseString(R"({"traceEvents":[{"ph":"X","cat":"cpu_op"}]})").result->schema,
            TraceSchema::kKineto);
  EXPECT_EQ(ParseString(R"({"schemaVersion":1,"traceEvents":[]})").result->schema,
            TraceSchema::kKineto);
  EXPECT_EQ(ParseString(
                R"({"traceEvents":[{"ph":"M","name":"process_name","args":{"name":"/host:CPU"}}]})")
                .result->schema,
            TraceSchema::kJaxTraceEvents);
  EXPECT_EQ(
      ParseString(R"({"traceEvents":[{"ph":"M","name":"process_name","args":{"name":"python"}}]})")
          .result->schema,
      TraceSchema::kUnknown);
  EXPECT_EQ(ParseString(R"({"traceEvents":[]})").result->schema, TraceSchema::kUnknown);
}

TEST(JsonTraceParserTest, ExactlyTheJaxEventCapIsSuspectedTruncated) {
  // Events with a ts go through the one pass (regions); without, through
  // the exact scanner (no time base).
  auto make = [](uint64_t n, bool ts) {
    std::string json = R"({"traceEvents":[)";
    json.reserve(n * 20 + 32);
    for (uint64_t i = 0; i < n; ++i) json += ts ? R"({"ph":"X","ts":7},)" : R"({"ph":"X"},)";
    json += "{}]}";
    return json;
  };
  struct CountSink : EventSink {
    uint64_t n = 0;
    void OnEvent(const TraceEvent&) override { ++n; }
  };
  for (bool ts : {false, true}) {
    for (uint64_t n : {kJaxEventCap - 1, kJaxEventCap, kJaxEventCap + 1}) {
      StringSource source(make(n, ts));
      CountSink sink;
      auto result = MakeJsonTraceParser()->Parse(source, sink);
      ASSERT_TRUE(result);
      EXPECT_EQ(result->events, n);
      EXPECT_EQ(sink.n, n);
      EXPECT_EQ(result->empty_events, 1u);
      EXPECT_EQ(result->suspected_truncated, n == kJaxEventCap) << n << " ts " << ts;
    }
  }
  // Process/thread metadata is written apart from the capped trace events.
  std::string json = R"({"traceEvents":[{"ph":"M","pid":1,"name":"process_name"},)";
  for (uint64_t i = 0; i < kJaxEventCap; ++i) json += R"({"ph":"X"},)";
  json += "{}]}";
  StringSource source(json);
  CountSink sink;
  auto result = MakeJsonTraceParser()->Parse(source, sink);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->events, kJaxEventCap + 1);
  EXPECT_EQ(result->metadata_events, 1u);
  EXPECT_TRUE(result->suspected_truncated);
}

// ---------------------------------------------------------------- chunking

// Escapes, braces and brackets inside strings, whitespace in odd places,
// entries of every kind: the event stream must not depend on read sizes.
const char* kTrickyDoc = R"( {
  "metadata" : {"a": "}]\"", "b": [ {}, [] ] },
  "traceEvents" : [
    {"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0","x":"\\"}} ,
    {"ph":"X","pid":1,"tid":"stream \"7\"","ts":0.000001,"dur":2.5e-3,"name":"k{1}[2],\"3\"\\","cat":"c\\\\"},
    {"ph":"X","pid":"Spans","tid":null,"ts":1e1,"dur":3,"name":"\u007b\u005d\ud83d\ude00","args":{"nested":{"deep":[1,{"x":"]"}]},"device":3},"cat":"kernel"},
    {},
    [1,2,{"a":"]"}],
    "str,with]comma",
    {"ph":"X","pid":1,"tid":2,"ts":1712195495505582.988,"dur":22.140000000000001,"name":"tail\\"}
  ],
  "displayTimeUnit": "ns"
}
)";

TEST(JsonTraceParserTest, ReadSizeDoesNotChangeTheEventStream) {
  ParseRun ref = ParseString(kTrickyDoc);
  ASSERT_TRUE(ref.result) << ref.result.error().ToString();
  EXPECT_EQ(ref.result->events, 4u);
  EXPECT_EQ(ref.result->empty_events, 1u);
  EXPECT_EQ(ref.result->drops.at("not_object"), 2u);
  ASSERT_EQ(ref.sink.events.size(), 4u);
  EXPECT_EQ(ref.sink.events[1].name, "k{1}[2],\"3\"\\");
  EXPECT_EQ(ref.sink.events[1].tid.str, "stream \"7\"");
  EXPECT_EQ(ref.sink.events[1].cat, "c\\\\");
  EXPECT_EQ(ref.sink.events[2].name, "{]\xf0\x9f\x98\x80");
  EXPECT_EQ(ref.sink.events[2].args_device, 3);
  EXPECT_EQ(ref.sink.events[3].name, "tail\\");
  const std::string digest = ref.sink.Digest();
  for (size_t chunk = 1; chunk <= 300; ++chunk) {
    for (size_t source_chunk : {chunk, size_t{1}, size_t{3}}) {
      ParseOptions opt;
      opt.chunk_bytes = chunk;
      ParseRun run = ParseString(kTrickyDoc, source_chunk, opt);
      ASSERT_TRUE(run.result) << chunk << ": " << run.result.error().ToString();
      EXPECT_EQ(run.sink.Digest(), digest) << "chunk " << chunk << " source " << source_chunk;
      EXPECT_EQ(run.result->drops, ref.result->drops);
      EXPECT_EQ(run.result->empty_events, 1u);
    }
  }
}

// dur_as_double=false (the aggregation path) skips only the double: every
// other field, and which events are dropped, stay the same.
TEST(JsonTraceParserTest, DurAsDoubleOffChangesOnlyDurUs) {
  const std::vector<std::string> docs = {
      kTrickyDoc,
      R"({"traceEvents":[{"ph":"X","ts":100.5,"dur":1e-06},{"ph":"X","ts":99.25,"dur":22.140000000000001},)"
      R"({"ph":"X","ts":1e2,"dur":1e+20},{"ph":"X","ts":101,"dur":-1e+20},{"ph":"X","ts":0,"dur":-2.5},)"
      R"({"ph":"X","ts":"7","dur":"3"},{"ph":"X","dur":1500250.0},{"ph":"X","dur":9223372036854.775807},)"
      R"({"ph":"X","dur":9223372036854.775808},{"ph":"X","dur":0.0000005},{"ph":"X","dur":0.0000015},)"
      R"({"ph":"X","dur":1E3},{"ph":"X","dur":-0},{"ph":"X","dur":null}]})",
      R"({"traceEvents":[{"ph":"X","dur":1e400},{"ph":"X","dur":-1e400},{"ph":"X","dur":1e-400},)"
      R"({"ph":"X","dur":1.2.3},{"ph":"X","dur":01},{"ph":"X","dur":-},{"ph":"X","dur":1.},)"
      R"({"ph":"X","dur":2}]})",
  };
  for (const std::string& doc : docs) {
    ParseOptions off;
    off.dur_as_double = false;
    ParseRun with = ParseString(doc);
    ParseRun without = ParseString(doc, static_cast<size_t>(-1), off);
    ASSERT_TRUE(with.result) << with.result.error().ToString();
    ASSERT_TRUE(without.result) << without.result.error().ToString();
    for (const OwnedEvent& e : without.sink.events) EXPECT_EQ(e.dur_us, 0.0);
    for (OwnedEvent& e : with.sink.events) e.dur_us = 0.0;
    EXPECT_EQ(without.sink.Digest(), with.sink.Digest()) << doc;
    EXPECT_EQ(without.result->drops, with.result->drops) << doc;
    EXPECT_EQ(without.result->events, with.result->events) << doc;
  }
  // The values themselves, without the double.
  ParseOptions off;
  off.dur_as_double = false;
  ParseRun run = ParseString(docs[1], static_cast<size_t>(-1), off);
  ASSERT_TRUE(run.result);
  const auto& ev = run.sink.events;
  ASSERT_EQ(ev.size(), 14u);
  EXPECT_EQ(ev[1].dur_ps, 22140000);
  EXPECT_TRUE(ev[2].has_dur);
  EXPECT_FALSE(ev[2].dur_exact);
  EXPECT_EQ(ev[7].dur_ps, INT64_MAX);  // 9223372036854.775807 us is INT64_MAX ps
  EXPECT_TRUE(ev[7].dur_exact);
  EXPECT_FALSE(ev[8].dur_exact);  // one picosecond more
  EXPECT_EQ(ev[9].dur_ps, 0);     // 0.5 ps: half to even
  EXPECT_EQ(ev[10].dur_ps, 2);    // 1.5 ps: half to even
  EXPECT_EQ(ev[11].dur_ps, 1000000000);
  EXPECT_FALSE(ev[13].has_dur);
}

// pid/tid take a fast path for plain integers; everything else keeps the
// general path's answers.
TEST(JsonTraceParserTest, PlainIntegerIdsAndTheirNeighbours) {
  const std::string json = R"({"traceEvents":[)"
                           R"({"pid":0,"tid":-0},)"
                           R"({"pid":9223372036854775807,"tid":-9223372036854775808},)"
                           R"({"pid":9223372036854775808,"tid":-9223372036854775809},)"
                           R"({"pid":7 ,"tid":  12  },)"
                           R"({"pid":2.0,"tid":3e0},)"
                           R"({"pid":-,"tid":1}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  const auto& ev = run.sink.events;
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[0].pid.kind, IdKind::kInt);
  EXPECT_EQ(ev[0].pid.num, 0);
  EXPECT_EQ(ev[0].tid.kind, IdKind::kInt);
  EXPECT_EQ(ev[0].tid.num, 0);
  EXPECT_EQ(ev[1].pid.num, INT64_MAX);
  EXPECT_EQ(ev[1].tid.num, INT64_MIN);
  EXPECT_EQ(ev[2].pid.kind, IdKind::kOther);
  EXPECT_EQ(ev[2].pid.str, "9223372036854775808");
  EXPECT_EQ(ev[2].tid.kind, IdKind::kOther);
  EXPECT_EQ(ev[3].pid.num, 7);
  EXPECT_EQ(ev[3].tid.num, 12);
  EXPECT_EQ(ev[4].pid.kind, IdKind::kInt);
  EXPECT_EQ(ev[4].pid.num, 2);
  EXPECT_EQ(ev[4].tid.num, 3);
  EXPECT_EQ(ev[5].pid.kind, IdKind::kOther);  // a lone '-' is kept as its text
  EXPECT_EQ(ev[5].pid.str, "-");
}

// The fast path reads up to 18 digits itself; the 19th goes to from_chars.
TEST(JsonTraceParserTest, IdDigitCountsAroundTheFastPathLimit) {
  const std::string json = R"({"traceEvents":[)"
                           R"({"pid":123456789012345678,"tid":-123456789012345678},)"
                           R"({"pid":1234567890123456789,"tid":-1234567890123456789},)"
                           R"({"pid":99999999999999999999,"tid":1e2},)"
                           R"({"pid":10,"tid":1.5}]})";
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  const auto& ev = run.sink.events;
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].pid.num, 123456789012345678);
  EXPECT_EQ(ev[0].tid.num, -123456789012345678);
  EXPECT_EQ(ev[1].pid.kind, IdKind::kInt);
  EXPECT_EQ(ev[1].pid.num, 1234567890123456789);
  EXPECT_EQ(ev[1].tid.num, -1234567890123456789);
  EXPECT_EQ(ev[2].pid.kind, IdKind::kOther);  // beyond int64 and not an integral double
  EXPECT_EQ(ev[2].pid.str, "99999999999999999999");
  EXPECT_EQ(ev[2].tid.kind, IdKind::kInt);  // 1e2 == 100, as for Python's ==
  EXPECT_EQ(ev[2].tid.num, 100);
  EXPECT_EQ(ev[3].pid.num, 10);
  EXPECT_EQ(ev[3].tid.kind, IdKind::kOther);
  EXPECT_EQ(ev[3].tid.str, "1.5");
}

// ---------------------------------------------------------------- decode threads

// A document with thousands of entries of every kind, escapes in names and
// ids, bad entries among good ones, and a time base set by the first ts.
std::string ManyEntriesDoc(int n) {
  std::string json =
      R"({"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)";
  for (int i = 0; i < n; ++i) {
    const std::string ts = std::to_string(1712195495505582 + i) + "." + std::to_string(i % 1000);
    switch (i % 11) {
      case 3:
        json += R"({"ph":"X","pid":1,"tid":"s \"q\" )" + std::to_string(i) + R"(","ts":)" + ts +
                R"(,"dur":1.5,"name":"esc\\aped \u00e9 )" + std::to_string(i) + R"("},)";
        break;
      case 5:
        json += "{},";
        break;
      case 7:
        json += R"({"ph":"X","pid":1,"ts":)" + ts + R"(,"dur":1.2.3},)";  // bad_json
        break;
      case 8:
        json += "[1,{\"a\":\"]\"}],";  // not_object
        break;
      case 9:
        json += R"({"ph":"X","pid":1,"tid":2,"ts":)" + ts +
                R"(,"name":"bad )"
                "\xff"
                R"( utf8"},)";
        break;
      default:
        json += R"({"ph":"X","pid":1,"tid":)" + std::to_string(i % 4) + R"(,"ts":)" + ts +
                R"(,"dur":)" + std::to_string(i % 97) + R"(.000000000000001,"name":"k)" +
                std::to_string(i % 13) + R"(","args":{"correlation_id":")" + std::to_string(i) +
                R"("}},)";
    }
  }
  json += R"({"ph":"X","cat":"kernel","name":"last","ts":1,"args":{"device":2}}]})";
  return json;
}

void ExpectSameSummary(const ParseSummary& a, const ParseSummary& b, const std::string& what) {
  EXPECT_EQ(a.events, b.events) << what;
  EXPECT_EQ(a.empty_events, b.empty_events) << what;
  EXPECT_EQ(a.metadata_events, b.metadata_events) << what;
  EXPECT_EQ(a.drops, b.drops) << what;
  EXPECT_EQ(a.schema, b.schema) << what;
  EXPECT_EQ(a.time_base_us, b.time_base_us) << what;
  EXPECT_EQ(a.json_bytes, b.json_bytes) << what;
  EXPECT_EQ(a.suspected_truncated, b.suspected_truncated) << what;
}

// Decoding on helper threads changes nothing: same events in the same order,
// same counts, at every read size (tiny reads make batches of 0-2 entries).
TEST(JsonTraceParserTest, DecodeThreadsGiveTheInlineEventStream) {
  const std::string big = ManyEntriesDoc(5000);
  for (const std::string& doc : {std::string(kTrickyDoc), big}) {
    ParseRun ref = ParseString(doc);
    ASSERT_TRUE(ref.result) << ref.result.error().ToString();
    const std::string digest = ref.sink.Digest();
    std::vector<size_t> chunks = {1, 7, 64, 1000, 4096, 65536, 1 << 20};
    if (doc.size() < 2000) {
      for (size_t c = 2; c <= 300; ++c) chunks.push_back(c);
    }
    for (int threads : {1, 2}) {
      for (size_t chunk : chunks) {
        ParseOptions opt;
        opt.chunk_bytes = chunk;
        opt.decode_threads = threads;
        ParseRun run = ParseString(doc, chunk % 3 == 0 ? 5 : static_cast<size_t>(-1), opt);
        ASSERT_TRUE(run.result) << run.result.error().ToString();
        const std::string what = "threads " + std::to_string(threads) + " chunk " +
                                 std::to_string(chunk) + " doc " + std::to_string(doc.size());
        ASSERT_EQ(run.sink.Digest(), digest) << what;
        ExpectSameSummary(*run.result, *ref.result, what);
      }
    }
  }
  // The big document exercises every drop reason the batches count.
  ParseRun ref = ParseString(big);
  ASSERT_TRUE(ref.result);
  EXPECT_EQ(ref.result->drops.at("bad_json"), 454u);    // i % 11 == 7 for i < 5000
  EXPECT_EQ(ref.result->drops.at("not_object"), 454u);  // == 8
  EXPECT_EQ(ref.result->drops.at("bad_utf8"), 454u);    // == 9
  EXPECT_EQ(ref.result->empty_events, 455u);            // == 5
  EXPECT_EQ(ref.result->time_base_us, 1712195495505582);
  EXPECT_EQ(ref.result->schema, TraceSchema::kKineto);  // the last event has a cat
}

// A parser with decode threads is reusable, and a stream that ends early or
// fails still delivers every event found before the error, as inline does.
TEST(JsonTraceParserTest, DecodeThreadsDeliverEventsBeforeAnErrorAndAreReusable) {
  const std::string big = ManyEntriesDoc(3000);
  ParseOptions opt;
  opt.chunk_bytes = 512;
  opt.decode_threads = 1;
  auto threaded = MakeJsonTraceParser(opt);
  ParseOptions inline_opt;
  inline_opt.chunk_bytes = 512;
  auto plain = MakeJsonTraceParser(inline_opt);
  for (size_t cut : {big.size() / 3, big.size() / 2, big.size() - 5}) {
    for (bool fail : {false, true}) {
      StringSource a(fail ? big : big.substr(0, cut), 100), b(fail ? big : big.substr(0, cut), 100);
      if (fail) {
        a.FailAt(cut, Error{ErrorCode::kIo, "disk gone"});
        b.FailAt(cut, Error{ErrorCode::kIo, "disk gone"});
      }
      Collector ca, cb;
      auto ra = threaded->Parse(a, ca);
      auto rb = plain->Parse(b, cb);
      ASSERT_FALSE(ra);
      ASSERT_FALSE(rb);
      EXPECT_EQ(ra.error().code, fail ? ErrorCode::kIo : ErrorCode::kTruncated);
      EXPECT_EQ(ra.error().code, rb.error().code);
      EXPECT_GT(ca.events.size(), 100u) << cut;
      EXPECT_EQ(ca.Digest(), cb.Digest()) << cut << " fail " << fail;
    }
    StringSource whole(big), whole_ref(big);
    Collector cw, cr;
    auto rw = threaded->Parse(whole, cw);
    auto rr = plain->Parse(whole_ref, cr);
    ASSERT_TRUE(rw && rr);
    EXPECT_EQ(cw.Digest(), cr.Digest());
    ExpectSameSummary(*rw, *rr, "reuse after cut " + std::to_string(cut));
  }
}

// The read-ahead thread decodes batches through a WorkShare while it is
// ahead: same events, same order, same counts as inline decoding.
TEST(JsonTraceParserTest, ReadAheadDecodingThroughAWorkShareGivesTheInlineStream) {
  const std::string big = ManyEntriesDoc(20000);
  ParseRun ref = ParseString(big);
  ASSERT_TRUE(ref.result);
  for (size_t chunk : {size_t{300}, size_t{4096}, size_t{65536}}) {
    for (int helpers : {0, 1}) {
      auto share = std::make_shared<WorkShare>();
      ParseOptions opt;
      opt.chunk_bytes = chunk;
      opt.decode_threads = helpers;
      opt.work_share = share;
      auto source =
          read::MakePrefetchSource(std::make_unique<StringSource>(big, 1000), 8192, 3, share);
      Collector sink;
      auto result = MakeJsonTraceParser(opt)->Parse(*source, sink);
      ASSERT_TRUE(result) << result.error().ToString();
      const std::string what =
          "chunk " + std::to_string(chunk) + " helpers " + std::to_string(helpers);
      EXPECT_EQ(sink.Digest(), ref.sink.Digest()) << what;
      ExpectSameSummary(*result, *ref.result, what);
    }
  }
}

// Kineto args.device/stream that are numbers beyond int64 (found by the fuzz
// target: the cast came before the range check) are not a device or stream.
TEST(JsonTraceParserTest, ArgsDeviceAndStreamBeyondInt64AreIgnored) {
  ParseRun run = ParseString(
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","args":{"device":6.66e62,"stream":-1e30}},)"
      R"({"ph":"X","cat":"kernel","name":"k","args":{"device":3.0,"stream":9.2e18}}]})");
  ASSERT_TRUE(run.result) << run.result.error().ToString();
  ASSERT_EQ(run.sink.events.size(), 2u);
  EXPECT_FALSE(run.sink.events[0].has_args_device);
  EXPECT_FALSE(run.sink.events[0].has_args_stream);
  EXPECT_TRUE(run.sink.events[1].has_args_device);
  EXPECT_EQ(run.sink.events[1].args_device, 3);
  EXPECT_TRUE(run.sink.events[1].has_args_stream);
  EXPECT_EQ(run.sink.events[1].args_stream, 9200000000000000000);
}

TEST(JsonTraceParserTest, ParserIsReusableAcrossFiles) {
  auto parser = MakeJsonTraceParser();
  Collector first, second, third;
  StringSource a(kTrickyDoc), b(R"({"traceEvents":[{"ts":5.5}]})"), c(kTrickyDoc);
  auto ra = parser->Parse(a, first);
  auto rb = parser->Parse(b, second);
  auto rc = parser->Parse(c, third);
  ASSERT_TRUE(ra && rb && rc);
  EXPECT_EQ(first.Digest(), third.Digest());
  EXPECT_EQ(rb->time_base_us, 5);
  EXPECT_EQ(rb->events, 1u);
  EXPECT_EQ(second.events[0].ts_ps, 500000);
  EXPECT_EQ(rc->events, ra->events);
}

// ---------------------------------------------------------------- errors

TEST(JsonTraceParserTest, EmptyInputIsCorrupt) {
  ParseRun run = ParseString("");
  ASSERT_FALSE(run.result);
  EXPECT_EQ(run.result.error().code, ErrorCode::kCorrupt);
  EXPECT_THAT(run.result.error().context, HasSubstr("empty file"));
  run = ParseString(" \n\t ");
  ASSERT_FALSE(run.result);
  EXPECT_EQ(run.result.error().code, ErrorCode::kCorrupt);
}

TEST(JsonTraceParserTest, GzipBytesAreCorruptWithAHint) {
  ParseRun run = ParseString(std::string("\x1f\x8b\x08\x00", 4));
  ASSERT_FALSE(run.result);
  EXPECT_EQ(run.result.error().code, ErrorCode::kCorrupt);
  EXPECT_THAT(run.result.error().context, HasSubstr("first byte 0x1f: still gzip?"));
}

TEST(JsonTraceParserTest, NonObjectTopLevelIsCorrupt) {
  for (const char* doc : {"[1,2]", "\"str\"", "42", "garbage", "  nul"}) {
    ParseRun run = ParseString(doc);
    ASSERT_FALSE(run.result) << doc;
    EXPECT_EQ(run.result.error().code, ErrorCode::kCorrupt) << doc;
    EXPECT_THAT(run.result.error().context, HasSubstr("not a JSON object")) << doc;
  }
  ParseRun run = ParseString("[{}]");
  EXPECT_THAT(run.result.error().context, HasSubstr("top level is an array"));
}

TEST(JsonTraceParserTest, TopLevelDeeplyNestedArrayIsCorruptImmediately) {
  ParseRun run = ParseString(std::string(100000, '['));
  ASSERT_FALSE(run.result);
  EXPECT_EQ(run.result.error().code, ErrorCode::kCorrupt);
}

TEST(JsonTraceParserTest, ObjectWithoutTraceEventsIsUnsupported) {
  ParseRun run = ParseString(R"({"schemaVersion":1,"other":[{"ph":"X"}]})");
  ASSERT_FALSE(run.result);
  EXPECT_EQ(run.result.error().code, ErrorCode::kUnsupported);
  run = ParseString("{}");
  ASSERT_FALSE(run.result);
  EXPECT_EQ(run.result.error().code, ErrorCode::kUnsupported);
}

// rocprofv3's JSON output (rocprofiler-sdk's tool file) is named for what it
// is, not as any object without traceEvents.
TEST(JsonTraceParserTest, RocprofilerSdkJsonSaysWhatItIs) {
  ParseRun run = ParseString(
      R"({"rocprofiler-sdk-tool":[{"metadata":{"pid":4242},"agents":[{"id":{"handle":1},)"
      R"("type":2,"product_name":"AMD Instinct MI300X"}],"kernel_symbols":[],)"
      R"("buffer_records":{"kernel_dispatch":[{"start_timestamp":1,"end_timestamp":2}]}}]})");
  ASSERT_FALSE(run.result);
  EXPECT_EQ(run.result.error().code, ErrorCode::kUnsupported);
  EXPECT_THAT(run.result.error().context, HasSubstr("rocprofv3 (rocprofiler-sdk) JSON output"));
}

TEST(JsonTraceParserTest, TraceEventsNotAnArrayIsUnsupported) {
  for (const char* doc :
       {R"({"traceEvents":{"ph":"X"}})", R"({"traceEvents":null})", R"({"traceEvents":"[]"})"}) {
    ParseRun run = ParseString(doc);
    ASSERT_FALSE(run.result) << doc;
    EXPECT_EQ(run.result.error().code, ErrorCode::kUnsupported) << doc;
    EXPECT_THAT(run.result.error().context, HasSubstr("traceEvents is not an array"));
  }
}

TEST(JsonTraceParserTest, StructuralGarbageInTopLevelIsCorrupt) {
  for (const char* doc :
       {R"({"traceEvents":[]} x)", R"({"traceEvents":[] "a":1})", R"({traceEvents:[]})",
        R"({"traceEvents" []})", R"({"a":,"traceEvents":[]})", R"({"traceEvents":[]}{})"}) {
    ParseRun run = ParseString(doc);
    ASSERT_FALSE(run.result) << doc;
    EXPECT_EQ(run.result.error().code, ErrorCode::kCorrupt) << doc;
    EXPECT_THAT(run.result.error().context, HasSubstr("offset")) << doc;
  }
}

TEST(JsonTraceParserTest, EveryPrefixOfADocumentIsTruncated) {
  const std::string doc = kTrickyDoc;
  // The document ends at its closing '}' (trailing newline excluded).
  const size_t close = doc.rfind('}');
  for (size_t len = 2; len <= close; ++len) {  // from just after the leading space and '{'
    for (size_t chunk : {size_t{1}, size_t{64}, size_t{1} << 20}) {
      ParseOptions opt;
      opt.chunk_bytes = chunk;
      ParseRun run = ParseString(doc.substr(0, len), static_cast<size_t>(-1), opt);
      ASSERT_FALSE(run.result) << len;
      EXPECT_EQ(run.result.error().code, ErrorCode::kTruncated) << len << " chunk " << chunk;
      EXPECT_THAT(run.result.error().context, HasSubstr("offset " + std::to_string(len)));
    }
  }
}

TEST(JsonTraceParserTest, SourceErrorsPassThroughWithContext) {
  std::string json = R"({"traceEvents":[)";
  for (int i = 0; i < 1000; ++i) json += R"({"ph":"X","name":"k"},)";
  json += "{}]}";
  StringSource source(json, 100);
  source.FailAt(5000, Error{ErrorCode::kIo, "disk on fire"});
  ParseOptions opt;
  opt.chunk_bytes = 100;
  Collector sink;
  auto result = MakeJsonTraceParser(opt)->Parse(source, sink);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kIo);
  EXPECT_THAT(result.error().context, HasSubstr("disk on fire"));
  EXPECT_THAT(result.error().context, HasSubstr("offset 4900"));
  EXPECT_GT(sink.events.size(), 100u);  // events before the error stay delivered
}

// ---------------------------------------------------------------- real files

struct FixtureCounts {
  const char* rel;
  uint64_t events;
  uint64_t empty;
  uint64_t exact_durs;   // events whose dur fits int64 ps
  int64_t dur_ps_sum;    // sum of those durations
  uint64_t string_pids;  // events whose pid is a string
  TraceSchema schema;
};

// Independent counts, obtained with python3 (stdlib only) by:
//   d = json.load(gzip.open(p), parse_float=Decimal); te = d["traceEvents"]
//   evs = [e for e in te if isinstance(e, dict) and e]      -> events
//   sum(1 for e in te if e == {})                           -> empty
//   for numeric e["dur"]: ps = (Decimal(dur) * 10**6).quantize(1, ROUND_HALF_EVEN),
//   counted and summed when abs(ps) < 2**63                 -> exact_durs, dur_ps_sum
//   isinstance(e.get("pid"), str)                           -> string_pids
const FixtureCounts kFixtures[] = {
    {"real/kineto/a100_alexnet_trace.json.gz", 1408, 0, 868, 307784449000000, 4,
     TraceSchema::kKineto},
    {"real/kineto/a100x2_nccl_data.json.gz", 40573, 0, 26933, 4383359174000, 4,
     TraceSchema::kKineto},
    {"real/kineto/b200_eager_no_metadata.json.gz", 24656, 0, 22355, 2118013220000, 0,
     TraceSchema::kKineto},
    {"real/kineto/cpu_only_rank-34.pt.trace.json.gz", 30, 0, 16, 3635095146000, 4,
     TraceSchema::kKineto},
    {"real/kineto/h100_bert_small.json.gz", 2551, 0, 2060, 174107606000, 4, TraceSchema::kKineto},
    {"real/kineto/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 220, 0, 113, 52276266000, 4,
     TraceSchema::kKineto},
    {"real/kineto/v100_resnet50_worker0.1623143089861.pt.trace.json.gz", 75718, 0, 44666,
     4924245000000, 3, TraceSchema::kKineto},
    {"converted/mi300x_jax08_gemm_tw003.trace.json.gz", 3652, 1, 3620, 89979977090, 0,
     TraceSchema::kJaxTraceEvents},
    {"drill/A_1node/host0.trace.json.gz", 319, 0, 307, 112706889000000, 0,
     TraceSchema::kJaxTraceEvents},
    {"drill/A_1node/host1.trace.json.gz", 319, 0, 307, 123586289000000, 0,
     TraceSchema::kJaxTraceEvents},
    {"drill/B_1gpu/host0.proc0.trace.json.gz", 46, 0, 41, 13704349000000, 0,
     TraceSchema::kJaxTraceEvents},
    {"drill/B_1gpu/host0.proc1.trace.json.gz", 46, 0, 41, 14384311500000, 0,
     TraceSchema::kJaxTraceEvents},
    {"drill/B_1gpu/host0.proc2.trace.json.gz", 46, 0, 41, 15064274000000, 0,
     TraceSchema::kJaxTraceEvents},
    {"drill/B_1gpu/host0.proc3.trace.json.gz", 46, 0, 41, 15744236500000, 0,
     TraceSchema::kJaxTraceEvents},
    {"drill/C_quirks/a.trace.json.gz", 26, 0, 25, 6799725000000, 0, TraceSchema::kUnknown},
    {"drill/C_quirks/b.trace.json.gz", 38, 0, 38, 13599250000000, 0, TraceSchema::kUnknown},
    {"drill/C_quirks/empty.trace.json.gz", 7, 0, 3, 105099000000, 0, TraceSchema::kJaxTraceEvents},
    {"drill/D_nokernels/x.trace.json.gz", 7, 0, 3, 105099000000, 0, TraceSchema::kJaxTraceEvents},
    {"drill/E_launches/one.trace.json.gz", 124, 0, 124, 81576000000, 0, TraceSchema::kUnknown},
    {"drill/F_sum_semantics/f.trace.json.gz", 3, 0, 1, 1000000000000, 0, TraceSchema::kUnknown},
};

TEST(JsonTraceParserTest, RealFixturesParseWithIndependentlyCountedEvents) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(probe, "README.md");
  for (const FixtureCounts& f : kFixtures) {
    const std::string path = ::profwatch::testing::SharedFixture(f.rel);
    ASSERT_FALSE(path.empty()) << f.rel;
    const std::string json = Gunzip(path);
    for (size_t chunk : {size_t{4096}, size_t{1} << 20}) {
      ParseOptions opt;
      opt.chunk_bytes = chunk;
      ParseRun run = ParseString(json, static_cast<size_t>(-1), opt);
      ASSERT_TRUE(run.result) << f.rel << ": " << run.result.error().ToString();
      const ParseSummary& s = *run.result;
      EXPECT_EQ(s.events, f.events) << f.rel;
      EXPECT_EQ(s.empty_events, f.empty) << f.rel;
      EXPECT_TRUE(s.drops.empty()) << f.rel;
      EXPECT_EQ(s.schema, f.schema) << f.rel;
      EXPECT_EQ(s.json_bytes, json.size()) << f.rel;
      uint64_t exact = 0, string_pids = 0;
      int64_t sum = 0;
      for (const OwnedEvent& e : run.sink.events) {
        if (e.dur_exact) {
          ++exact;
          sum += e.dur_ps;
        }
        if (e.pid.kind == IdKind::kString) ++string_pids;
      }
      EXPECT_EQ(exact, f.exact_durs) << f.rel;
      EXPECT_EQ(sum, f.dur_ps_sum) << f.rel;
      EXPECT_EQ(string_pids, f.string_pids) << f.rel;
    }
  }
}

// Every fixture: the whole document in one read is the reference; tiny and
// odd read sizes, inline or with a decode thread, give the same events.
// A tiny chunk puts a boundary inside every token of a document, but costs
// per chunk, and every pass costs a parse of the whole document: documents
// over kTinyChunkMaxBytes (the large real Kineto traces) are streamed once,
// cut at a prime (boundaries at every offset of an event somewhere in the
// document), read short (a source that returns less than asked) and decoded
// on a decode thread; the small ones take every size both ways. Documents
// under kOneByteChunkMaxBytes are read a byte at a time as well.
constexpr size_t kTinyChunkMaxBytes = size_t{2} << 20;
constexpr size_t kOneByteChunkMaxBytes = size_t{128} << 10;

struct ReadSize {
  size_t chunk;
  size_t read;  // what the source returns per read at most
  int threads;  // ParseOptions::decode_threads
};

std::vector<ReadSize> ReadSizesFor(size_t json_bytes) {
  constexpr size_t kAll = static_cast<size_t>(-1);
  if (json_bytes > kTinyChunkMaxBytes) return {{1021, 509, 1}};
  std::vector<ReadSize> sizes;
  for (int threads : {0, 1}) {
    for (ReadSize s : {ReadSize{7, kAll, 0}, ReadSize{61, 13, 0}, ReadSize{4096, kAll, 0}}) {
      s.threads = threads;
      sizes.push_back(s);
    }
    if (json_bytes <= kOneByteChunkMaxBytes) sizes.push_back({1, kAll, threads});
  }
  return sizes;
}

TEST(JsonTraceParserTest, RealFixturesGiveTheWholeDocumentStreamAtAnyReadSize) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(probe, "README.md");
  int large = 0;
  for (const FixtureCounts& f : kFixtures) {
    const std::string json = Gunzip(::profwatch::testing::SharedFixture(f.rel));
    if (json.size() > kTinyChunkMaxBytes) ++large;
    ParseOptions whole;
    whole.chunk_bytes = json.size() + 1;
    ParseRun ref = ParseString(json, static_cast<size_t>(-1), whole);
    ASSERT_TRUE(ref.result) << f.rel;
    ASSERT_EQ(ref.result->events, f.events) << f.rel;
    const std::string digest = ref.sink.Digest();
    for (const ReadSize& size : ReadSizesFor(json.size())) {
      ParseOptions opt;
      opt.chunk_bytes = size.chunk;
      opt.decode_threads = size.threads;
      ParseRun run = ParseString(json, size.read, opt);
      ASSERT_TRUE(run.result) << f.rel;
      const std::string what = std::string(f.rel) + " chunk " + std::to_string(size.chunk) +
                               " read " + std::to_string(size.read) + " threads " +
                               std::to_string(size.threads);
      EXPECT_EQ(run.sink.Digest(), digest) << what;
      ExpectSameSummary(*run.result, *ref.result, what);
    }
  }
  // The prime-cut path above is taken (the fixtures hold large documents).
  EXPECT_GT(large, 0);
}

TEST(JsonTraceParserTest, RealKinetoHeadersAreRead) {
  // Values read by hand with python3: json.load(gzip.open(p))[key].
  PROFWATCH_REQUIRE_SHARED_FIXTURE(nccl, "real/kineto/a100x2_nccl_data.json.gz");
  ParseRun run = ParseString(Gunzip(nccl));
  ASSERT_TRUE(run.result);
  EXPECT_EQ(run.result->base_time_ns, 1711964646000000000);
  EXPECT_EQ(run.result->rank, 0);
  EXPECT_EQ(run.result->world_size, 2);
  EXPECT_EQ(run.result->time_base_us, 4458676522690);  // first ts 4458676522690.655
  const std::string cpu =
      ::profwatch::testing::SharedFixture("real/kineto/cpu_only_rank-34.pt.trace.json.gz");
  run = ParseString(Gunzip(cpu));
  ASSERT_TRUE(run.result);
  EXPECT_EQ(run.result->rank, 34);
  EXPECT_EQ(run.result->world_size, 300);
  const std::string alex =
      ::profwatch::testing::SharedFixture("real/kineto/a100_alexnet_trace.json.gz");
  run = ParseString(Gunzip(alex));
  ASSERT_TRUE(run.result);
  EXPECT_EQ(run.result->rank, 0);
  EXPECT_FALSE(run.result->world_size.has_value());
  EXPECT_FALSE(run.result->base_time_ns.has_value());
  EXPECT_EQ(run.result->time_base_us, 1695835542514261);
}

// ------------------------------------------------------------ one pass

// Regions (the default) against every entry cut by the exact scanner and
// decoded alone (decode_runs off), at read sizes that put the read boundary
// everywhere, with chunks from tiny to the whole document.
void ExpectOnePassMatchesEntryByEntry(const std::string& json, const std::string& what) {
  ParseOptions ref_opt;
  ref_opt.decode_runs = false;
  ref_opt.max_event_bytes = 8192;
  ParseRun ref = ParseString(json, static_cast<size_t>(-1), ref_opt);
  ASSERT_TRUE(ref.result) << what << ": " << ref.result.error().ToString();
  const std::string digest = ref.sink.Digest();
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}, size_t{100}, size_t{1000}, size_t{4096},
                       size_t{1} << 16, json.size() + 1}) {
    for (size_t read : {size_t{13}, static_cast<size_t>(-1)}) {
      ParseOptions opt;
      opt.chunk_bytes = chunk;
      opt.max_event_bytes = 8192;
      ParseRun run = ParseString(json, read, opt);
      const std::string at =
          what + " chunk " + std::to_string(chunk) + " read " + std::to_string(read);
      ASSERT_TRUE(run.result) << at << ": " << run.result.error().ToString();
      EXPECT_EQ(run.sink.Digest(), digest) << at;
      ExpectSameSummary(*run.result, *ref.result, at);
    }
    // Through a read-ahead thread that decodes the exact scanner's batches
    // (regions stay on the parsing thread, between those batches).
    auto share = std::make_shared<WorkShare>();
    ParseOptions opt;
    opt.chunk_bytes = chunk;
    opt.max_event_bytes = 8192;
    opt.work_share = share;
    auto source =
        read::MakePrefetchSource(std::make_unique<StringSource>(json, 333), 4096, 3, share);
    Collector sink;
    auto result = MakeJsonTraceParser(opt)->Parse(*source, sink);
    const std::string at = what + " chunk " + std::to_string(chunk) + " read-ahead";
    ASSERT_TRUE(result) << at << ": " << result.error().ToString();
    EXPECT_EQ(sink.Digest(), digest) << at;
    ExpectSameSummary(*result, *ref.result, at);
  }
}

// A document whose first entry sets the time base, then `n` plain entries
// around `tricky` (placed after the plain ones: the search for a cut goes
// back from a region's end, so it meets the tricky entry first).
std::string RegionDoc(const std::string& tricky, int n = 300) {
  std::string json = R"({"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1000.5,"dur":1,"name":"a"})";
  for (int i = 0; i < n; ++i) {
    json += R"(,{"ph":"X","pid":1,"tid":2,"ts":)" + std::to_string(1001 + i) +
            R"(.25,"dur":0.5,"name":"k)" + std::to_string(i % 7) + R"(","args":{"name":"s"}})";
    if (i % 97 == 50) json += "," + tricky;
  }
  json += "," + tricky + R"(,{"ph":"X","ts":5000,"name":"last"}]})";
  return json;
}

TEST(JsonTraceParserTest, OnePassCutsGoBackToTheExactScannerWhenWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"separator in a string", R"({"ph":"X","ts":2000,"name":"x},{y"})"},
      {"escaped quotes around it", R"({"ph":"X","ts":2000,"name":"x\"},{\"y"})"},
      {"escaped backslash then quote", R"({"ph":"X","ts":2000,"name":"x\\"},{"ph":"X"})"},
      {"separator in a nested array", R"({"ph":"X","ts":2000,"args":{"l":[{"a":1},{"b":2}]}})"},
      {"spaced separator in a string", "{\"ph\":\"X\",\"ts\":2000,\"name\":\"x} ,\\n{y\"}"},
      {"not an object", R"([1,{"a":"]"}])"},
      {"bad json", R"({"ph":"X","ts":2000,"dur":1.2.3})"},
      {"text after the object", R"({"a":1} x)"},
      {"unbalanced close", R"({"a":1}})"},
      {"empty object", "{}"},
      {"bad utf8", "{\"ph\":\"X\",\"name\":\"\xc3\x28\"}"},
      {"too deep",
       R"({"ph":"X","args":{"a":)" + std::string(1100, '[') + std::string(1100, ']') + "}}"},
      {"just below too deep",
       R"({"ph":"X","args":{"a":)" + std::string(1000, '[') + std::string(1000, ']') + "}}"},
      {"too large", R"({"ph":"X","name":")" + std::string(9000, 'x') + R"("})"},
      {"larger than a region",
       R"({"ph":"X","name":"k","args":{"a":")" + std::string(7000, 'x') + R"("}})"},
  };
  for (const auto& [what, tricky] : cases)
    ExpectOnePassMatchesEntryByEntry(RegionDoc(tricky), what);
  // A stray comma between entries.
  std::string stray = RegionDoc(R"({"ph":"X","ts":2000})");
  stray.insert(stray.rfind(R"(,{"ph":"X","ts":5000)"), ",");
  ExpectOnePassMatchesEntryByEntry(stray, "stray comma");
  // Whitespace of every kind between entries.
  std::string spaced = RegionDoc(R"({"ph":"X","ts":2000})");
  for (size_t at = spaced.find("},{"); at != std::string::npos; at = spaced.find("},{", at + 8)) {
    spaced.replace(at, 3, "}\n ,\t\r\n {");
  }
  ExpectOnePassMatchesEntryByEntry(spaced, "whitespace");
}

// A chunk with no separator in it (one entry larger than a region, and read
// boundaries inside every entry) still gives every event.
TEST(JsonTraceParserTest, OnePassWithoutASeparatorInTheBuffer) {
  std::string json = R"({"traceEvents":[{"ph":"X","ts":1,"name":"a"})";
  for (int i = 0; i < 40; ++i) {
    json += R"(,{"ph":"X","ts":)" + std::to_string(2 + i) + R"(,"name":"b","args":{"x":")" +
            std::string(3000 + 97 * i, 'y') + R"("}})";
  }
  json += "]}";
  ExpectOnePassMatchesEntryByEntry(json, "large entries");
  ParseRun run = ParseString(json);
  ASSERT_TRUE(run.result);
  EXPECT_EQ(run.result->events, 41u);
}

// The entries delivered before a read error do not depend on regions: the
// same as with every entry cut by the exact scanner, wherever the error.
TEST(JsonTraceParserTest, OnePassDeliversTheSameEventsBeforeAReadError) {
  const std::string doc = RegionDoc(R"({"ph":"X","ts":2000,"name":"x},{y"})", 600);
  for (size_t chunk : {size_t{512}, size_t{4096}, size_t{1} << 16}) {
    for (size_t cut = 50; cut < doc.size(); cut += 997) {
      std::vector<std::string> digests;
      for (bool runs : {false, true}) {
        ParseOptions opt;
        opt.chunk_bytes = chunk;
        opt.decode_runs = runs;
        StringSource source(doc, 100);
        source.FailAt(cut, Error{ErrorCode::kIo, "disk gone"});
        Collector sink;
        auto parser = MakeJsonTraceParser(opt);
        auto result = parser->Parse(source, sink);
        ASSERT_FALSE(result);
        EXPECT_EQ(result.error().code, ErrorCode::kIo);
        digests.push_back(sink.Digest());
      }
      EXPECT_EQ(digests[0], digests[1]) << "chunk " << chunk << " cut " << cut;
    }
  }
}

// Every ts and dur number of every real fixture: the fast path of the
// conversion gives what the general path gives.
TEST(JsonTraceParserTest, RealFixtureNumbersConvertTheSameOnBothPaths) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(real, "real");
  size_t numbers = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(real)) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() || !path.ends_with(".json.gz")) continue;
    const std::string json = Gunzip(path);
    for (const std::string_view key :
         {std::string_view(R"("ts":)"), std::string_view(R"("dur":)")}) {
      for (size_t at = json.find(key); at != std::string::npos; at = json.find(key, at + 1)) {
        size_t b = at + key.size();
        while (b < json.size() && IsJsonSpace(json[b])) ++b;
        size_t e = b;
        while (e < json.size() && std::strchr("-+.0123456789eE", json[e]) != nullptr) ++e;
        if (e == b) continue;
        const std::string_view text(json.data() + b, e - b);
        for (const int64_t base : {int64_t{0}, int64_t{1712195495505582}}) {
          ASSERT_EQ(MicrosTextToPicos(text, base), detail::MicrosTextToPicosGeneral(text, base))
              << path << ": " << text;
        }
        ++numbers;
      }
    }
  }
  EXPECT_GT(numbers, 100000u);
}

TEST(JsonTraceParserTest, RealFixturesOnePassMatchesEntryByEntry) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(probe, "README.md");
  for (const FixtureCounts& f : kFixtures) {
    const std::string json = Gunzip(::profwatch::testing::SharedFixture(f.rel));
    ParseOptions ref_opt;
    ref_opt.decode_runs = false;
    ParseRun ref = ParseString(json, static_cast<size_t>(-1), ref_opt);
    ASSERT_TRUE(ref.result) << f.rel;
    for (size_t chunk : {size_t{4096}, size_t{256} << 10}) {
      ParseOptions opt;
      opt.chunk_bytes = chunk;
      ParseRun run = ParseString(json, static_cast<size_t>(-1), opt);
      ASSERT_TRUE(run.result) << f.rel;
      const std::string what = std::string(f.rel) + " chunk " + std::to_string(chunk);
      EXPECT_EQ(run.sink.Digest(), ref.sink.Digest()) << what;
      ExpectSameSummary(*run.result, *ref.result, what);
    }
  }
}

}  // namespace
}  // namespace profwatch::parse
