// Tests of the XSpace (.xplane.pb) wire reader: real captures checked against
// values computed independently (the JSON form, or a hand-written Python
// wire decoder), hand-built XSpaces for exact event content, and garbage.
#include "parse/xplane_parser.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "read/byte_source.h"
#include "testing/proto_writer.h"
#include "testing/test_util.h"

namespace profwatch::parse {
namespace {

// ---- A tiny protobuf writer for hand-built XSpaces. ----

using testing::LenField;
using testing::Varint;
using testing::VarintField;

using testing::Event;
using testing::Line;
using testing::MetadataEntry;
using testing::Plane;
using testing::Space;

// ---- Collecting sink. ----

struct Emitted {
  char ph;
  std::string name;
  int64_t pid;
  int64_t tid;  // -1 when missing
  int64_t ts_ps;
  int64_t dur_ps;
  std::string args_name;
  bool has_name;
  bool operator==(const Emitted&) const = default;
};

class Collect final : public EventSink {
 public:
  void OnEvent(const TraceEvent& e) override {
    events.push_back(Emitted{e.ph, std::string(e.name), e.pid.num,
                             e.tid.kind == IdKind::kInt ? e.tid.num : -1, e.ts_ps, e.dur_ps,
                             std::string(e.args_name), e.has_name});
    if (e.ph == 'X') {
      EXPECT_TRUE(e.has_ts && e.has_dur && e.dur_exact);
      EXPECT_EQ(e.dur_us, static_cast<double>(e.dur_ps) / 1e6);
      EXPECT_EQ(e.pid.kind, IdKind::kInt);
      hlo_ops.emplace_back(e.args_hlo_op);
    }
  }
  std::vector<Emitted> events;
  std::vector<std::string> hlo_ops;  // of the X events
};

Result<ParseSummary> ParseBytes(std::string bytes, Collect& sink, XPlaneOptions xo = {},
                                size_t max_chunk = static_cast<size_t>(-1),
                                size_t chunk_bytes = 1 << 20) {
  read::MemorySource source(std::move(bytes));
  source.SetMaxChunk(max_chunk);
  ParseOptions po;
  po.chunk_bytes = chunk_bytes;
  return MakeXPlaneParser(po, xo)->Parse(source, sink);
}

// Per device (GPU plane): X events on "Stream #" threads, their summed
// duration and the union of their intervals, in absolute picoseconds.
struct DeviceFigures {
  uint64_t count = 0;
  int64_t sum_ps = 0;
  int64_t busy_ps = 0;
  __int128 first_abs_ps = 0;  // epoch-scale picoseconds overflow int64
  bool operator==(const DeviceFigures&) const = default;
};

std::map<std::string, DeviceFigures> PerDevice(const std::vector<Emitted>& events,
                                               int64_t time_base_us) {
  std::map<int64_t, std::string> process;
  std::map<std::pair<int64_t, int64_t>, std::string> thread;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> intervals;
  for (const auto& e : events) {
    if (e.ph == 'M' && e.name == "process_name") process[e.pid] = e.args_name;
    if (e.ph == 'M' && e.name == "thread_name") thread[{e.pid, e.tid}] = e.args_name;
    if (e.ph != 'X') continue;
    const std::string& p = process[e.pid];
    if (p.rfind("/device:GPU:", 0) != 0) continue;
    if (thread[{e.pid, e.tid}].rfind("Stream #", 0) != 0) continue;
    const int64_t start = e.ts_ps;  // relative to time_base_us
    intervals[p].emplace_back(start, start + e.dur_ps);
  }
  std::map<std::string, DeviceFigures> out;
  for (const auto& [pid, name] : process) {
    if (name.rfind("/device:GPU:", 0) == 0) out[name];
  }
  for (auto& [device, iv] : intervals) {
    std::sort(iv.begin(), iv.end());
    DeviceFigures& f = out[device];
    f.count = iv.size();
    f.first_abs_ps = static_cast<__int128>(time_base_us) * 1000000 + iv.front().first;
    int64_t cur_start = iv.front().first, cur_end = iv.front().second;
    for (const auto& [s, t] : iv) {
      f.sum_ps += t - s;
      if (s > cur_end) {
        f.busy_ps += cur_end - cur_start;
        cur_start = s;
        cur_end = t;
      } else {
        cur_end = std::max(cur_end, t);
      }
    }
    f.busy_ps += cur_end - cur_start;
  }
  return out;
}

Result<ParseSummary> ParseFile(const std::string& path, Collect& sink, XPlaneOptions xo = {}) {
  return ParseBytes(profwatch::testing::ReadFile(path), sink, xo);
}

// ---- Real captures. ----

// Expected values come from the JSON form of the same window, computed by
// hand with a python3 stdlib script (not part of the build), in essence:
//   d = json.load(gzip.open(path), parse_float=Decimal)
//   devices = {pid: name of M process_name starting "/device:GPU:"}
//   streams = {(pid, tid) of M thread_name starting "Stream #"}
//   ps = lambda x: int((Decimal(x) * 10**6).to_integral_value())  # half-even
//   per device: X events on streams -> (ps(ts), ps(ts) + ps(dur));
//   count, sum of durations, union of the sorted intervals.
// 122 of the JSON's numbers are float noise ("4.3200000000000003"); rounded
// to the picosecond they are exact, so the two forms agree to the ps with
// no tolerance (the xplane's times are whole nanoseconds here).
TEST(XPlaneParserTest, GemmCaptureMatchesItsJsonFormPerDevice) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/xplane/mi300x_jax08_gemm_tw003.xplane.pb");
  Collect sink;
  auto summary = ParseFile(path, sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  EXPECT_EQ(summary->schema, TraceSchema::kXPlane);
  EXPECT_EQ(summary->time_base_us, 711);  // first line: GPU:0 Stream #16, 711141 ns
  auto devices = PerDevice(sink.events, summary->time_base_us);
  ASSERT_EQ(devices.size(), 8u);
  EXPECT_EQ(devices["/device:GPU:0"], (DeviceFigures{54, 3475484000, 3475484000, 1220562000}));
  for (int i = 1; i < 8; ++i) {
    EXPECT_EQ(devices["/device:GPU:" + std::to_string(i)], DeviceFigures{}) << i;
  }
  // 8 device + 1 host process_name, 2 + 5 thread_name, 54 device + 3728 host X.
  EXPECT_EQ(summary->events, 9u + 7u + 54u + 3728u);
  EXPECT_TRUE(summary->drops.empty());
  EXPECT_EQ(summary->json_bytes, 110057u);
  EXPECT_FALSE(summary->suspected_truncated);
}

// Expected values from a hand-written python3 protobuf wire decoder (varint /
// length-delimited walk of XSpace -> XPlane -> XLine -> XEvent, stdlib only,
// run by hand, not committed): start = line.timestamp_ns*1000 + offset_ps,
// end = start + duration_ps on lines named "Stream #..." of /device:GPU:N.
TEST(XPlaneParserTest, ConvCapturePerDeviceCountsSumsAndBusyTime) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/xplane/mi300x_jax08_conv_tw003.xplane.pb");
  Collect sink;
  auto summary = ParseFile(path, sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  EXPECT_EQ(summary->time_base_us, 911);
  auto d = PerDevice(sink.events, summary->time_base_us);
  ASSERT_EQ(d.size(), 8u);
  // GPU:0 has four streams that overlap: busy < sum.
  EXPECT_EQ(d["/device:GPU:0"], (DeviceFigures{60, 4000165000, 3995965000, 1611362000}));
  EXPECT_EQ(d["/device:GPU:1"], (DeviceFigures{25, 3345845000, 3345845000, 27256936000}));
  EXPECT_EQ(d["/device:GPU:2"], (DeviceFigures{25, 3524285000, 3524285000, 32017342000}));
  EXPECT_EQ(d["/device:GPU:3"], (DeviceFigures{25, 3403364000, 3403364000, 44412649000}));
  EXPECT_EQ(d["/device:GPU:4"], (DeviceFigures{25, 3493365000, 3493365000, 48200514000}));
  EXPECT_EQ(d["/device:GPU:5"], (DeviceFigures{25, 3464884000, 3464884000, 46953142000}));
  EXPECT_EQ(d["/device:GPU:6"], (DeviceFigures{25, 3403004000, 3403004000, 35489367000}));
  EXPECT_EQ(d["/device:GPU:7"], (DeviceFigures{25, 3502165000, 3502165000, 49120115000}));
}

// Same decoder, V100 TensorFlow capture: the "Steps" line of GPU:4 and GPU:6
// holds one event each, metadata name "0" (the group id; its step_name stat
// is "0" too).
TEST(XPlaneParserTest, V100StepsLineGivesStepTimes) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/xplane/v100x8_tf_bert_34.83.195.179_6003.xplane.pb");
  Collect sink;
  auto summary = ParseFile(path, sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  EXPECT_EQ(summary->time_base_us, 237);  // first line: /host:CPU, 237916 ns
  std::map<int64_t, std::string> process;
  std::map<std::pair<int64_t, int64_t>, std::string> thread;
  std::vector<std::pair<std::string, Emitted>> steps;
  for (const auto& e : sink.events) {
    if (e.ph == 'M' && e.name == "process_name") process[e.pid] = e.args_name;
    if (e.ph == 'M' && e.name == "thread_name") thread[{e.pid, e.tid}] = e.args_name;
    if (e.ph == 'X' && thread[{e.pid, e.tid}] == "Steps") steps.emplace_back(process[e.pid], e);
  }
  ASSERT_EQ(steps.size(), 2u);
  const int64_t base_ps = summary->time_base_us * 1000000;
  EXPECT_EQ(steps[0].first, "/device:GPU:4");
  EXPECT_EQ(steps[0].second.name, "0");
  EXPECT_EQ(steps[0].second.pid, 5);
  EXPECT_EQ(steps[0].second.tid, 0xdeadbeef);  // line id -559038737 as uint32
  EXPECT_EQ(base_ps + steps[0].second.ts_ps, 1921299828000);
  EXPECT_EQ(steps[0].second.dur_ps, 19865491000);
  EXPECT_EQ(steps[1].first, "/device:GPU:6");
  EXPECT_EQ(steps[1].second.name, "0");
  EXPECT_EQ(base_ps + steps[1].second.ts_ps, 2568855601000);
  EXPECT_EQ(steps[1].second.dur_ps, 21310352000);

  auto d = PerDevice(sink.events, summary->time_base_us);
  EXPECT_EQ(d["/device:GPU:1"], (DeviceFigures{19, 33792000, 33792000, 2761776101000}));
  EXPECT_EQ(d["/device:GPU:4"], (DeviceFigures{759, 15023814000, 14983622000, 1821856661000}));
  EXPECT_EQ(d["/device:GPU:6"], (DeviceFigures{778, 15104499000, 15050451000, 2099696083000}));
  EXPECT_EQ(d["/device:GPU:0"], DeviceFigures{});
}

TEST(XPlaneParserTest, HostEventsCanBeSkippedAndCounted) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/xplane/mi300x_jax08_gemm_tw003.xplane.pb");
  Collect all, devices_only;
  auto a = ParseFile(path, all);
  auto b = ParseFile(path, devices_only, XPlaneOptions{.host_events = false});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->events, 8u + 2u + 54u);
  EXPECT_EQ(b->drops.at("host_plane"), 3728u);
  EXPECT_EQ(PerDevice(all.events, a->time_base_us),
            PerDevice(devices_only.events, b->time_base_us));
  // With hosts on, the host threads sit on XLA's host pid with uint32 tids.
  const auto python = std::find_if(all.events.begin(), all.events.end(), [](const Emitted& e) {
    return e.ph == 'M' && e.args_name == "python";
  });
  ASSERT_NE(python, all.events.end());
  EXPECT_EQ(python->pid, kXPlaneHostPid);
  EXPECT_EQ(python->tid, 2298405065);  // line id 1085180131661504713 as uint32
}

TEST(XPlaneParserTest, TinyReadsAndChunksGiveIdenticalEvents) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/xplane/mi300x_jax08_conv_tw003.xplane.pb");
  const std::string bytes = profwatch::testing::ReadFile(path);
  Collect whole, pieces;
  auto a = ParseBytes(bytes, whole);
  auto b = ParseBytes(bytes, pieces, {}, /*max_chunk=*/7, /*chunk_bytes=*/64);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->events, b->events);
  EXPECT_EQ(whole.events, pieces.events);
}

// The project's own fixture (tests/fixtures/xplane/make_fixtures.py writes
// it, its JSON twin and expected.txt, from which these values come).
TEST(XPlaneParserTest, ProjectFixtureGivesExpectedDeviceFiguresAndSteps) {
  Collect sink;
  auto summary =
      ParseFile(profwatch::testing::ProjectFixture("xplane/two_gpus_steps.xplane.pb"), sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  EXPECT_EQ(summary->time_base_us, 1712195495505582);
  auto d = PerDevice(sink.events, summary->time_base_us);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d["/device:GPU:0"].count, 9u);
  EXPECT_EQ(d["/device:GPU:0"].sum_ps, 26251500);
  EXPECT_EQ(d["/device:GPU:0"].busy_ps, 15751500);
  EXPECT_EQ(d["/device:GPU:1"].count, 3u);
  EXPECT_EQ(d["/device:GPU:1"].sum_ps, 5000500);
  EXPECT_EQ(d["/device:GPU:1"].busy_ps, 5000500);
  // Steps "0", "1", "2" at 0, 6 and 12 µs past the first line, 6 µs each.
  std::vector<std::pair<std::string, int64_t>> steps;
  for (const auto& e : sink.events) {
    if (e.ph == 'X' && e.tid == 0xdeadbeef) {
      EXPECT_EQ(e.dur_ps, 6000000);
      steps.emplace_back(e.name, e.ts_ps);
    }
  }
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"0", 988000}, {"1", 6988000}, {"2", 12988000}};
  EXPECT_EQ(steps, want);
}

// ---- Hand-built XSpaces: exact event content. ----

TEST(XPlaneParserTest, EmitsProcessThreadAndExactPicosecondEvents) {
  // Epoch-scale nanoseconds: absolute picoseconds would overflow int64.
  const int64_t t0 = 1712195495505582988;
  const std::string md = MetadataEntry(1, "fusion.1", "loop_fusion") + MetadataEntry(2, "gemm");
  const std::string gpu =
      Plane(2, "/device:GPU:2",
            {Line(7, "Stream #7(Kernel)", t0, {Event(1, 12, 3000001), Event(2, 5000000, 7)}),
             Line(9, "Stream #9(Kernel)", t0 + 1, {Event(3, 0, 1)}, LenField(11, "Shown"))},
            md);
  Collect sink;
  auto summary = ParseBytes(Space({gpu}), sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  EXPECT_EQ(summary->time_base_us, 1712195495505582);
  const int64_t rel = 988000;  // 988 ns past the base microsecond
  std::vector<Emitted> want = {
      {'M', "process_name", 3, -1, 0, 0, "/device:GPU:2", true},
      {'M', "thread_name", 3, 7, 0, 0, "Stream #7(Kernel)", true},
      {'X', "loop_fusion", 3, 7, rel + 12, 3000001, "", true},
      {'X', "gemm", 3, 7, rel + 5000000, 7, "", true},
      {'M', "thread_name", 3, 9, 0, 0, "Shown", true},
      {'X', "", 3, 9, rel + 1000, 1, "", false},  // metadata 3 absent: no name
  };
  EXPECT_EQ(sink.events, want);
  EXPECT_EQ(summary->events, 6u);
}

// XPlane.stat_metadata entry: key -> XStatMetadata{id, name}.
std::string StatMetadataEntry(int64_t key, std::string_view name) {
  return LenField(5, VarintField(1, key) + LenField(2, VarintField(1, key) + LenField(2, name)));
}

// The JAX scope of an event is its stat named "name": a string value or a
// reference to a stat metadata name (how XLA interns them). Other stats and
// planes without a "name" stat give none; a malformed stat is corrupt.
TEST(XPlaneParserTest, ScopeStatBecomesArgsName) {
  const std::string stats = StatMetadataEntry(3, "hlo_op") + StatMetadataEntry(7, "name") +
                            StatMetadataEntry(9, "jit(f)/jvp(decoder)/mlp/dot");
  auto with = [](std::string event, const std::string& stat) { return event + LenField(4, stat); };
  const std::string by_ref = with(Event(1, 0, 10), VarintField(1, 3) + VarintField(7, 9)) +
                             LenField(4, VarintField(1, 7) + VarintField(7, 9));
  const std::string by_str = with(Event(1, 20, 10), VarintField(1, 7) + LenField(5, "jit(g)/attn"));
  const std::string other = with(Event(1, 40, 10), VarintField(1, 3) + LenField(5, "dot.1"));
  const std::string gpu =
      Plane(0, "/device:GPU:0", {Line(1, "Stream #1", 0, {by_ref, by_str, other})},
            MetadataEntry(1, "gemm") + stats);
  Collect sink;
  auto summary = ParseBytes(Space({gpu}), sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  ASSERT_EQ(sink.events.size(), 5u);
  EXPECT_EQ(sink.events[2].args_name, "jit(f)/jvp(decoder)/mlp/dot");
  EXPECT_EQ(sink.events[3].args_name, "jit(g)/attn");
  EXPECT_EQ(sink.events[4].args_name, "");

  const std::string no_name_stat = Plane(0, "/device:GPU:0", {Line(1, "Stream #1", 0, {by_str})},
                                         MetadataEntry(1, "gemm") + StatMetadataEntry(3, "hlo_op"));
  Collect plain;
  ASSERT_TRUE(ParseBytes(Space({no_name_stat}), plain));
  EXPECT_EQ(plain.events.back().args_name, "");

  const std::string bad = with(Event(1, 0, 10), VarintField(1, 7) + std::string("\x2a\xff"));
  Collect corrupt;
  auto r = ParseBytes(Space({Plane(0, "/device:GPU:0", {Line(1, "Stream #1", 0, {bad})}, stats)}),
                      corrupt);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kCorrupt) << r.error().ToString();
  // The error names what is wrong inside the stat, not only the event.
  EXPECT_NE(r.error().ToString().find("event: varint runs past the end of its message"),
            std::string::npos)
      << r.error().ToString();
}

// A kernel's stat "hlo_op" (its HLO instruction: collectives by kind) is
// args_hlo_op, by string or by reference like the scope.
TEST(XPlaneParserTest, HloOpStatBecomesArgsHloOp) {
  const std::string stats = StatMetadataEntry(3, "hlo_op") + StatMetadataEntry(7, "name") +
                            StatMetadataEntry(9, "all-gather-start.3");
  auto with = [](std::string event, const std::string& stat) { return event + LenField(4, stat); };
  const std::string by_str =
      with(Event(1, 0, 10), VarintField(1, 3) + LenField(5, "collective-permute-start.1"));
  const std::string by_ref = with(Event(1, 20, 10), VarintField(1, 3) + VarintField(7, 9));
  const std::string scope_only = with(Event(1, 40, 10), VarintField(1, 7) + LenField(5, "jit(g)"));
  const std::string gpu =
      Plane(0, "/device:GPU:0", {Line(1, "Stream #1", 0, {by_str, by_ref, scope_only})},
            MetadataEntry(1, "ncclDevKernel_Generic_4") + stats);
  Collect sink;
  auto summary = ParseBytes(Space({gpu}), sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  EXPECT_EQ(sink.hlo_ops,
            (std::vector<std::string>{"collective-permute-start.1", "all-gather-start.3", ""}));
  EXPECT_EQ(sink.events.back().args_name, "jit(g)");
}

TEST(XPlaneParserTest, DisplayIdBecomesTheThreadIdAsUint32) {
  const std::string line =
      Line(-559038737, "Steps", 1000, {Event(1, 0, 5)}, VarintField(10, -2));  // display_id
  Collect sink;
  auto summary =
      ParseBytes(Space({Plane(0, "/device:TPU:0", {line}, MetadataEntry(1, "41"))}), sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  ASSERT_EQ(sink.events.size(), 3u);
  EXPECT_EQ(sink.events[1].tid, 0xfffffffe);
  EXPECT_EQ(sink.events[1].args_name, "Steps");
  EXPECT_EQ(sink.events[2].name, "41");
  EXPECT_EQ(sink.events[2].pid, 1);
}

TEST(XPlaneParserTest, AggregatedAndOutOfRangeEventsAreDroppedAndCounted) {
  std::string aggregated = VarintField(1, 1) + VarintField(5, 12) + VarintField(3, 99);
  // offset set after num_occurrences: the oneof's last member wins -> timed.
  std::string retimed =
      VarintField(1, 1) + VarintField(5, 12) + VarintField(2, 4) + VarintField(3, 1);
  const std::string gpu =
      Plane(0, "/device:GPU:0",
            {Line(1, "Stream #1", 5000, {aggregated, retimed}),
             Line(2, "Stream #2", INT64_MIN, {Event(1, 0, 1)}),      // far from the base
             Line(3, "Stream #3", 6000, {Event(1, INT64_MAX, 1)})},  // offset overflows
            MetadataEntry(1, "k"));
  const std::string other =
      Plane(0, "/host:metadata", {Line(1, "x", 0, {Event(1, 0, 1), Event(1, 0, 1)})}, "");
  Collect sink;
  auto summary = ParseBytes(Space({gpu, other}), sink);
  ASSERT_TRUE(summary) << summary.error().ToString();
  EXPECT_EQ(summary->drops.at("aggregated_event"), 1u);
  EXPECT_EQ(summary->drops.at("time_overflow"), 2u);
  EXPECT_EQ(summary->drops.at("other_plane"), 2u);
  uint64_t xs = 0;
  for (const auto& e : sink.events) xs += e.ph == 'X';
  EXPECT_EQ(xs, 1u);
}

TEST(XPlaneParserTest, SparseAndRepeatedMetadataIdsResolveLastEntry) {
  const int64_t big = int64_t{1} << 50;
  const std::string md =
      MetadataEntry(big, "old") + MetadataEntry(-3, "neg") + MetadataEntry(big, "new");
  const std::string gpu =
      Plane(0, "/device:GPU:0", {Line(1, "Stream #1", 0, {Event(big, 0, 1), Event(-3, 0, 1)})}, md);
  Collect sink;
  ASSERT_TRUE(ParseBytes(Space({gpu}), sink));
  ASSERT_EQ(sink.events.size(), 4u);
  EXPECT_EQ(sink.events[2].name, "new");
  EXPECT_EQ(sink.events[3].name, "neg");
}

TEST(XPlaneParserTest, HostPlaneUsesXlaHostPidAndSetsTheTimeBaseWhenFirst) {
  const std::string host =
      Plane(0, "/host:CPU", {Line(879904895758363866, "python", 28560, {Event(1, 0, 5)})},
            MetadataEntry(1, "f"));
  const std::string gpu = Plane(0, "/device:GPU:0", {Line(16, "Stream #16", 711141, {})}, "");
  Collect sink;
  auto summary = ParseBytes(Space({host, gpu}), sink);
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->time_base_us, 28);
  EXPECT_EQ(sink.events[0].pid, kXPlaneHostPid);
  EXPECT_EQ(sink.events[1].tid, 1003351258);
  EXPECT_EQ(sink.events[2].ts_ps, 560000);
  EXPECT_EQ(sink.events[3].pid, 1);
  EXPECT_EQ(sink.events[4].tid, 16);
}

// ---- Garbage. ----

TEST(XPlaneParserTest, EmptyInputIsTruncated) {
  Collect sink;
  auto r = ParseBytes("", sink);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kTruncated);
  EXPECT_NE(r.error().context.find("empty"), std::string::npos);
}

// Offsets of the top-level fields' ends: a cut exactly there is a shorter
// but valid XSpace.
std::vector<size_t> TopLevelBoundaries(const std::string& s) {
  std::vector<size_t> out = {0};
  size_t i = 0;
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; i < s.size(); shift += 7) {
      const uint8_t b = static_cast<uint8_t>(s[i++]);
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return;
    }
  };
  while (i < s.size()) {
    uint64_t tag, len;
    varint(&tag);
    varint(&len);  // every top-level field of XSpace is length-delimited
    i += len;
    out.push_back(i);
  }
  return out;
}

void ExpectTruncationsFail(const std::string& bytes, size_t stride) {
  const auto boundaries = TopLevelBoundaries(bytes);
  for (size_t cut = 0; cut < bytes.size(); cut += stride) {
    Collect sink;
    auto r = ParseBytes(bytes.substr(0, cut), sink, {}, 13);
    const bool at_boundary =
        std::find(boundaries.begin(), boundaries.end(), cut) != boundaries.end();
    if (cut == 0) {
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code, ErrorCode::kTruncated);
    } else if (at_boundary) {
      EXPECT_TRUE(r) << "cut " << cut << ": " << r.error().ToString();
    } else {
      ASSERT_FALSE(r) << "cut " << cut;
      EXPECT_EQ(r.error().code, ErrorCode::kTruncated)
          << "cut " << cut << ": " << r.error().ToString();
    }
  }
}

TEST(XPlaneParserTest, TruncationAtEveryOffsetOfASmallSpaceIsTruncated) {
  const std::string gpu =
      Plane(0, "/device:GPU:0", {Line(1, "Stream #1", 100, {Event(1, 1, 1), Event(1, 300, 2)})},
            MetadataEntry(1, "k"));
  ExpectTruncationsFail(Space({gpu, gpu}), 1);
}

TEST(XPlaneParserTest, TruncationOfARealCaptureIsTruncated) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/xplane/mi300x_jax08_gemm_tw003.xplane.pb");
  ExpectTruncationsFail(profwatch::testing::ReadFile(path), 331);
}

TEST(XPlaneParserTest, RandomBytesAreRejected) {
  std::mt19937 rng(42);
  for (int i = 0; i < 300; ++i) {
    std::string bytes(1 + rng() % 2000, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    Collect sink;
    auto r = ParseBytes(bytes, sink);
    ASSERT_FALSE(r) << "buffer " << i;
    EXPECT_TRUE(r.error().code == ErrorCode::kCorrupt || r.error().code == ErrorCode::kTruncated ||
                r.error().code == ErrorCode::kTooLarge || r.error().code == ErrorCode::kUnsupported)
        << r.error().ToString();
  }
}

TEST(XPlaneParserTest, ProtobufOfAnotherShapeIsRejected) {
  struct Case {
    std::string bytes;
    ErrorCode code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {VarintField(1, 5), ErrorCode::kCorrupt, "field 1 has wire type 0"},
      {LenField(1, VarintField(7, 1) + VarintField(9, 2)), ErrorCode::kCorrupt, "not an XPlane"},
      {LenField(1, VarintField(3, 1)), ErrorCode::kCorrupt, "XPlane.lines has wire type 0"},
      {LenField(1, LenField(2, "/device:GPU:0") +
                       LenField(5, VarintField(1, 7) + LenField(2, VarintField(2, 5)))),
       ErrorCode::kCorrupt, "XStatMetadata.name has wire type 0"},
      {LenField(1, LenField(2, "/device:GPU:0") + LenField(3, LenField(4, LenField(1, "x")))),
       ErrorCode::kCorrupt, "XEvent.metadata_id has wire type 2"},
      {LenField(1, LenField(3,
                            "\x22\x05"
                            "ab")),
       ErrorCode::kCorrupt, "exceeds"},
      {LenField(4, "hostname-only"), ErrorCode::kUnsupported, "without any XPlane"},
      {std::string("\x0b\x0c", 2), ErrorCode::kCorrupt, "wire type 3"},
      {std::string(11, '\xff'), ErrorCode::kCorrupt, "longer than 10 bytes"},
      {LenField(1, std::string(11, '\xff')), ErrorCode::kCorrupt, "longer than 10 bytes"},
      {std::string("\x1f\x8b\x08\x00", 4), ErrorCode::kCorrupt, "gzip"},
  };
  for (const auto& c : cases) {
    Collect sink;
    auto r = ParseBytes(c.bytes, sink);
    ASSERT_FALSE(r) << c.says;
    EXPECT_EQ(r.error().code, c.code) << r.error().ToString();
    EXPECT_NE(r.error().ToString().find(c.says), std::string::npos) << r.error().ToString();
  }
}

TEST(XPlaneParserTest, JsonBytesNamedXplaneAreRejected) {
  Collect sink;
  auto r = ParseBytes(" {\"traceEvents\": []}", sink);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kCorrupt);
  EXPECT_NE(r.error().context.find("JSON"), std::string::npos);
  EXPECT_TRUE(sink.events.empty());
}

TEST(XPlaneParserTest, RealJsonTraceFedToTheXplaneParserIsRejected) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(json, "converted/mi300x_jax08_gemm_tw003.trace.json.gz");
  auto source = read::OpenTraceSource(json);  // inflates: the parser sees JSON text
  ASSERT_TRUE(source);
  Collect sink;
  auto r = MakeXPlaneParser()->Parse(**source, sink);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kCorrupt);
  EXPECT_NE(r.error().context.find("JSON"), std::string::npos);
}

// Bytes currently allocated by malloc (heap + mmapped chunks).
size_t AllocatedBytes() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// A source that records the largest allocation level seen while the parser
// pulls from it: a lying length prefix must not make the parser allocate it.
class WatchingSource final : public read::ByteSource {
 public:
  explicit WatchingSource(std::string data) : inner_(std::move(data)) { inner_.SetMaxChunk(4096); }
  Result<size_t> Read(char* buf, size_t n) override {
    peak_ = std::max(peak_, AllocatedBytes());
    return inner_.Read(buf, n);
  }
  uint64_t RawBytesRead() const override { return inner_.RawBytesRead(); }
  std::string_view Name() const override { return "watching"; }
  size_t peak() const { return peak_; }

 private:
  read::MemorySource inner_;
  size_t peak_ = 0;
};

TEST(XPlaneParserTest, HugeLengthPrefixIsTooLargeWithoutAllocating) {
  const std::string claim =
      Varint(1u << 3 | 2) + Varint(uint64_t{1} << 62) + std::string(100, '\x08');
  Collect sink;
  auto r = ParseBytes(claim, sink);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kTooLarge);
  EXPECT_NE(r.error().context.find("4611686018427387904"), std::string::npos) << r.error().context;

  // Under a raised limit the same claim is only truncated, and the buffer
  // grows with the bytes present (64 KB), not with the 2^62 claimed.
  const std::string body = claim + std::string(64 << 10, '\x08');
  WatchingSource source(body);
  const size_t before = AllocatedBytes();
  auto parser = MakeXPlaneParser(ParseOptions{.chunk_bytes = 4096},
                                 XPlaneOptions{.max_plane_bytes = SIZE_MAX});
  auto t = parser->Parse(source, sink);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, ErrorCode::kTruncated) << t.error().ToString();
  EXPECT_LT(source.peak(), before + (1u << 20));
}

TEST(XPlaneParserTest, PlaneAboveTheConfiguredLimitIsTooLarge) {
  const std::string gpu =
      Plane(0, "/device:GPU:0", {Line(1, "Stream #1", 0, {Event(1, 0, 1)})}, "");
  Collect sink;
  auto r = ParseBytes(Space({gpu}), sink, XPlaneOptions{.max_plane_bytes = gpu.size() - 1});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kTooLarge);
  Collect ok;
  EXPECT_TRUE(ParseBytes(Space({gpu}), ok, XPlaneOptions{.max_plane_bytes = gpu.size()}));
}

TEST(XPlaneParserTest, SourceErrorsPassThroughAndEarlierPlanesStayDelivered) {
  const std::string gpu =
      Plane(0, "/device:GPU:0", {Line(1, "Stream #1", 0, {Event(1, 0, 1)})}, "");
  const std::string bytes = Space({gpu, gpu});
  read::MemorySource source(bytes);
  source.SetMaxChunk(gpu.size() + 2);  // the first read is exactly plane 0
  source.FailAt(gpu.size() + 5, Error{ErrorCode::kIo, "disk on fire"});
  Collect sink;
  auto r = MakeXPlaneParser()->Parse(source, sink);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kIo);
  EXPECT_EQ(sink.events.size(), 3u);  // the first plane: process, thread, one X
}

// The device name of a JAX process comes from its xplane's device plane
// (stat gpu_device_name, after the plane's lines), read without its events:
// the first device plane that names one; none on a host-only XSpace; a cut
// file is an error, never a guess.
TEST(XPlaneDeviceNamesTest, FirstDevicePlaneThatNamesItsDevice) {
  const std::string stat_md = LenField(
      5, VarintField(1, 7) + LenField(2, VarintField(1, 7) + LenField(2, "gpu_device_name")));
  const std::string other_md =
      LenField(5, VarintField(1, 8) + LenField(2, VarintField(1, 8) + LenField(2, "clock_rate")));
  const std::string name_stat = LenField(6, VarintField(1, 7) + LenField(5, "NVIDIA H200"));
  const std::string clock_stat = LenField(6, VarintField(1, 8) + LenField(5, "1980"));
  const std::string lines = LenField(3, Line(1, "Stream #1", 0, {Event(1, 0, 1000)}));
  const std::string host =
      Plane(1, "/host:CPU", {Line(1, "main", 0, {Event(1, 0, 1000)})}, stat_md + name_stat);
  const std::string unnamed =
      VarintField(1, 2) + LenField(2, "/device:GPU:0") + lines + other_md + clock_stat;
  const std::string named = VarintField(1, 3) + LenField(2, "/device:GPU:1") + lines + stat_md +
                            other_md + clock_stat + name_stat;
  const std::string space = Space({host, unnamed, named});
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{1} << 20}) {
    SCOPED_TRACE(chunk);
    read::MemorySource source(space);
    source.SetMaxChunk(chunk);
    auto names = ReadXPlaneDeviceNames(source, 64);
    ASSERT_TRUE(names) << names.error().ToString();
    EXPECT_EQ(*names, std::vector<std::string>{"NVIDIA H200"});
  }
  {
    read::MemorySource source(Space({host, unnamed}));
    auto names = ReadXPlaneDeviceNames(source);
    ASSERT_TRUE(names) << names.error().ToString();
    EXPECT_TRUE(names->empty());
  }
  for (size_t cut : {size_t{5}, space.size() / 2, space.size() - 20}) {
    SCOPED_TRACE(cut);
    read::MemorySource source(space.substr(0, cut));
    auto names = ReadXPlaneDeviceNames(source);
    if (names) {
      EXPECT_TRUE(names->empty());  // cut before the named plane began
    } else {
      EXPECT_TRUE(names.error().code == ErrorCode::kTruncated ||
                  names.error().code == ErrorCode::kCorrupt)
          << names.error().ToString();
    }
  }
}

}  // namespace
}  // namespace profwatch::parse
