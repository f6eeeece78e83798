// EventDecoder runs: entries decoded together as one array document give
// exactly what decoding each alone gives, including where an entry in the
// middle of a run is bad, and the buffer is left as it was.
#include "parse/event_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace profwatch::parse {
namespace {

using EntrySpan = EventDecoder::EntrySpan;

// A traceEvents array body: '[' then the entries joined by the separators,
// with the entries' spans; padded for simdjson.
struct Buffer {
  std::string bytes;
  std::vector<EntrySpan> entries;
};

Buffer Build(const std::vector<std::string>& texts, const std::vector<std::string>& separators) {
  Buffer b;
  b.bytes = "[";
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i > 0) b.bytes += separators[i - 1];
    b.entries.emplace_back(b.bytes.size(), texts[i].size());
    b.bytes += texts[i];
  }
  b.bytes += "]";
  b.bytes.append(simdjson::SIMDJSON_PADDING + 64, ' ');
  return b;
}

// Every field of an event, strings copied (views die with the decoder).
struct Seen {
  std::string name, cat, args_name, pid_str, tid_str;
  IdKind pid_kind, tid_kind;
  int64_t pid, tid, ts_ps, dur_ps, args_device, args_stream;
  double dur_us;
  char ph;
  bool has_name, has_ts, has_dur, dur_exact, has_args_device, has_args_stream;
  bool operator==(const Seen&) const = default;
};

Seen Copy(const TraceEvent& e) {
  return Seen{std::string(e.name),
              std::string(e.cat),
              std::string(e.args_name),
              std::string(e.pid.str),
              std::string(e.tid.str),
              e.pid.kind,
              e.tid.kind,
              e.pid.num,
              e.tid.num,
              e.ts_ps,
              e.dur_ps,
              e.args_device,
              e.args_stream,
              e.dur_us,
              e.ph,
              e.has_name,
              e.has_ts,
              e.has_dur,
              e.dur_exact,
              e.has_args_device,
              e.has_args_stream};
}

struct Decoded {
  std::vector<Seen> events;
  DecodeCounts counts;
};

Decoded DecodeAll(Buffer b, bool runs) {
  EventDecoder decoder(/*dur_as_double=*/true, runs);
  Decoded out;
  TimeBase base{true, 100};
  std::vector<TraceEvent> events(b.entries.size());
  const std::string before = b.bytes;
  const size_t n = decoder.DecodeEntries(
      b.bytes.data(), b.bytes.size(), b.entries.data(), b.entries.size(), base, out.counts,
      events.data(), [&](const TraceEvent& e) { out.events.push_back(Copy(e)); });
  EXPECT_EQ(n, out.events.size());
  EXPECT_EQ(b.bytes, before);  // the brackets of a run are put back
  return out;
}

void ExpectSameAsAlone(const Buffer& b) {
  const Decoded alone = DecodeAll(b, false);
  const Decoded runs = DecodeAll(b, true);
  EXPECT_EQ(runs.events, alone.events);
  EXPECT_EQ(runs.counts.events, alone.counts.events);
  EXPECT_EQ(runs.counts.empty_events, alone.counts.empty_events);
  EXPECT_EQ(runs.counts.metadata_events, alone.counts.metadata_events);
  EXPECT_EQ(runs.counts.drops, alone.counts.drops);
  EXPECT_EQ(runs.counts.saw_cat, alone.counts.saw_cat);
  EXPECT_EQ(runs.counts.saw_jax_process, alone.counts.saw_jax_process);
}

const std::string kX1 =
    R"({"ph":"X","pid":1,"tid":7,"ts":101.5,"dur":2.25,"name":"gemm_a","args":{"hlo_op":"dot.1","n":[1,{"k":"}"}]}})";
const std::string kX2 = R"({"ph":"X","pid":1,"tid":7,"ts":104,"dur":1,"name":"ncclAllReduce"})";
const std::string kEscaped =
    R"({"ph":"X","pid":"host \"a\"","tid":7,"ts":105,"dur":1,"name":"f\u00e9\\n\"x\""})";
const std::string kMeta =
    R"({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}})";
const std::string kKinetoArgsFirst =
    R"({"ph":"X","args":{"device":3,"stream":9},"cat":"kernel","name":"k","pid":0,"tid":0,"ts":106,"dur":3})";
const std::string kMissingComma = R"({"ph":"X" "name":"x","ts":107})";
const std::string kBadDur = R"({"ph":"X","name":"y","ts":108,"dur":12abc})";
const std::string kStringDur = R"({"ph":"X","name":"z","ts":109,"dur":"3"})";
const std::string kEmpty = "{}";

// DecodeRun over all of `b`'s entries with a fresh decoder.
struct RunResult {
  size_t done = 0;
  size_t kept = 0;
  DecodeCounts counts;
  std::vector<TraceEvent> events;
};

RunResult DecodeWholeRun(Buffer& b, EventDecoder& decoder) {
  RunResult r;
  TimeBase base{true, 100};
  r.events.resize(b.entries.size());
  r.done = decoder.DecodeRun(b.bytes.data(), b.bytes.size(), b.entries.data(), b.entries.size(),
                             base, r.counts, r.events.data(), r.kept);
  return r;
}

TEST(EventDecoderTest, RunOfPlainEntriesDecodesWhole) {
  Buffer b = Build({kX1, kX2, kX1, kX2}, {",", ",\n  ", " , "});
  EventDecoder decoder(true);
  const RunResult r = DecodeWholeRun(b, decoder);
  EXPECT_EQ(r.done, 4u);
  ASSERT_EQ(r.kept, 4u);
  EXPECT_EQ(r.events[0].name, "gemm_a");
  EXPECT_EQ(r.events[0].ts_ps, 1'500'000);  // 101.5 us - base 100 us
  EXPECT_EQ(r.events[0].dur_ps, 2'250'000);
  EXPECT_EQ(r.events[1].name, "ncclAllReduce");
  EXPECT_EQ(r.events[3].ts_ps, 4'000'000);
  EXPECT_EQ(r.counts.events, 4u);
  ExpectSameAsAlone(b);
}

TEST(EventDecoderTest, RunStopsAtAnEntryItCannotDecodeExactly) {
  for (const std::string& bad : {kMissingComma, kBadDur}) {
    SCOPED_TRACE(bad);
    Buffer b = Build({kX1, kX2, bad, kX1}, {",", ",", ","});
    EventDecoder decoder(true);
    const RunResult r = DecodeWholeRun(b, decoder);
    EXPECT_EQ(r.done, 2u);
    EXPECT_EQ(r.kept, 2u);
    EXPECT_TRUE(r.counts.drops.empty());  // the stopping entry is not counted here
    ExpectSameAsAlone(b);
  }
}

// Every event's args are read in the one pass, so a Kineto entry whose args
// come before its "cat" does not end a run.
TEST(EventDecoderTest, ArgsBeforeCatDecodeInsideARun) {
  Buffer b = Build({kX1, kKinetoArgsFirst, kX2}, {",", ","});
  EventDecoder decoder(true);
  const RunResult r = DecodeWholeRun(b, decoder);
  EXPECT_EQ(r.done, 3u);
  EXPECT_EQ(r.kept, 3u);
  ExpectSameAsAlone(b);
}

TEST(EventDecoderTest, EntriesOfEveryKindDecodeAsAlone) {
  Buffer b = Build({kX1, kEscaped, kMeta, kKinetoArgsFirst, kMissingComma, kX2, kBadDur, kStringDur,
                    kEmpty, kX1, kX2},
                   {",", ",", "\n,\n", ",", ",", ",", ",", ",", ",", ","});
  const Decoded alone = DecodeAll(b, false);
  ASSERT_EQ(alone.events.size(), 8u);
  EXPECT_EQ(alone.events[1].name, "f\u00e9\\n\"x\"");
  EXPECT_EQ(alone.events[1].pid_str, "host \"a\"");
  EXPECT_EQ(alone.events[2].args_name, "/device:GPU:0");
  EXPECT_EQ(alone.events[3].args_device, 3);
  EXPECT_EQ(alone.events[3].args_stream, 9);
  EXPECT_FALSE(alone.events[5].has_dur);  // "dur":"3" is not a number
  EXPECT_EQ(alone.counts.drops.at("bad_json"), 2u);
  EXPECT_EQ(alone.counts.empty_events, 1u);
  EXPECT_EQ(alone.counts.metadata_events, 1u);
  EXPECT_TRUE(alone.counts.saw_cat);
  EXPECT_TRUE(alone.counts.saw_jax_process);
  ExpectSameAsAlone(b);
}

// Keys are matched as raw bytes plus the closing quote, in one word: a key
// that extends, shortens or escapes a known one is another key. The near
// keys come after the real ones, so a false match would overwrite a field.
TEST(EventDecoderTest, KeysMatchOnlyExactly) {
  const std::string near_keys =
      R"({"ph":"X","pid":1,"tid":2,"ts":101.5,"dur":2,"name":"k","phx":"B","p":"C",)"
      R"("pidd":5,"pi":6,"tid ":7,"ts2":9,"t":8,"du":4,"durr":5,"names":"no","nam":"no",)"
      R"("p\u0068":"B","name\u0000":"no","ar":{},"argsx":{},"cats":"c","ca":"c",)"
      R"("args":{"name":"a","device":3,"stream":5,"names":"no","devices":1,"stream ":4}})";
  const std::string meta =
      R"({"ph":"M","args":{"name":"a","device":3,"stream":5,"names":"no","devices":1,)"
      R"("stream ":4,"nam":"no","device\u0000":7}})";
  Buffer b = Build({near_keys, meta}, {","});
  const Decoded alone = DecodeAll(b, false);
  ASSERT_EQ(alone.events.size(), 2u);
  const Seen& e = alone.events[0];
  EXPECT_EQ(e.ph, 'X');
  EXPECT_EQ(e.pid, 1);
  EXPECT_EQ(e.tid, 2);
  EXPECT_EQ(e.ts_ps, 1500000);
  EXPECT_EQ(e.dur_ps, 2000000);
  EXPECT_EQ(e.name, "k");
  EXPECT_EQ(e.cat, "");
  EXPECT_FALSE(alone.counts.saw_cat);
  const Seen& m = alone.events[1];
  EXPECT_EQ(m.args_name, "a");
  EXPECT_EQ(m.args_device, 3);
  EXPECT_EQ(m.args_stream, 5);
  ExpectSameAsAlone(b);
}

// Issue #48: a Kineto kernel's and launch's "correlation" (an integer; JAX's
// string "correlation_id" is another key) and an operator's "Input type".
TEST(EventDecoderTest, CorrelationAndInputTypeAreReadExactly) {
  const std::string kernel =
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":101,"dur":1,)"
      R"("args":{"correlation_id":"5","External id":60047,"correlation":60047}})";
  const std::string op =
      R"({"ph":"X","cat":"cpu_op","name":"nccl:all_reduce","pid":1,"tid":1,"ts":100,"dur":9,)"
      R"("args":{"Input type":["c10::BFloat16", ""],"Input Dims":[[4096], []],"correlations":3}})";
  const std::string jax =
      R"({"ph":"X","name":"f","pid":1,"tid":7,"ts":102,"dur":1,"args":{"correlation_id":"22"}})";
  Buffer b = Build({kernel, op, jax}, {",", ","});
  for (bool runs : {false, true}) {
    EventDecoder decoder(/*dur_as_double=*/true, runs);
    TimeBase base{true, 100};
    DecodeCounts counts;
    std::vector<TraceEvent> events(b.entries.size());
    std::vector<std::pair<int64_t, std::string>> seen;
    decoder.DecodeEntries(b.bytes.data(), b.bytes.size(), b.entries.data(), b.entries.size(), base,
                          counts, events.data(), [&](const TraceEvent& e) {
                            seen.emplace_back(e.args_correlation, std::string(e.args_input_type));
                          });
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[0], std::make_pair(int64_t{60047}, std::string()));
    EXPECT_EQ(seen[1], std::make_pair(int64_t{-1}, std::string(R"(["c10::BFloat16", ""])")));
    EXPECT_EQ(seen[2], std::make_pair(int64_t{-1}, std::string()));
  }
}

TEST(EventDecoderTest, InvalidUtf8AnywhereInARunDropsOnlyItsEntry) {
  const std::string bad_utf8 = "{\"ph\":\"X\",\"name\":\"a\xff\",\"ts\":110}";
  Buffer b = Build({kX1, kX2, bad_utf8, kX2}, {",", ",", ","});
  const Decoded runs = DecodeAll(b, true);
  EXPECT_EQ(runs.events.size(), 3u);
  EXPECT_EQ(runs.counts.drops.at("bad_utf8"), 1u);
  ExpectSameAsAlone(b);
}

// Something between two entries other than one comma (the scanner dropped an
// entry there) ends the run: the array would otherwise take it as an element.
TEST(EventDecoderTest, RunLengthStopsAtAnythingButOneComma) {
  Buffer b = Build({kX2, kX2, kX2, kX2, kX2}, {" ,\n", ", 3 ,", ",,", ","});
  EXPECT_EQ(EventDecoder::RunLength(b.bytes.data(), b.entries.data(), 5), 2u);
  EXPECT_EQ(EventDecoder::RunLength(b.bytes.data(), b.entries.data() + 2, 3), 1u);
  EXPECT_EQ(EventDecoder::RunLength(b.bytes.data(), b.entries.data() + 3, 2), 2u);
  ExpectSameAsAlone(b);
}

TEST(EventDecoderTest, RunLengthKeepsARunWithinItsByteLimit) {
  const std::string big = R"({"ph":"X","name":")" + std::string(20000, 'n') + R"("})";
  Buffer b = Build({big, big, big, big, big}, {",", ",", ",", ","});
  // Three entries of ~20 KB fit in 64 KiB, four do not.
  EXPECT_EQ(EventDecoder::RunLength(b.bytes.data(), b.entries.data(), 5), 3u);
  ExpectSameAsAlone(b);
}

// ------------------------------------------------------------ regions

// DecodeRegion over the text from the first entry's start to `cut` (an
// offset in b.bytes, the byte taken for the separator after the region).
struct RegionResult {
  bool ok = false;
  std::vector<Seen> events;
  DecodeCounts counts;
};

RegionResult DecodeRegionTo(Buffer& b, size_t cut) {
  EventDecoder decoder(true);
  RegionResult r;
  TimeBase base{true, 100};
  std::vector<TraceEvent> events;
  size_t n = 0;
  const std::string before = b.bytes;
  r.ok = decoder.DecodeRegion(b.bytes.data(), b.bytes.size(), b.entries[0].first, cut, base,
                              r.counts, events, n);
  for (size_t i = 0; i < n; ++i) r.events.push_back(Copy(events[i]));
  EXPECT_EQ(b.bytes, before);  // the brackets are put back
  return r;
}

// The offset of the separator after entry i.
size_t After(const Buffer& b, size_t i) { return b.entries[i].first + b.entries[i].second; }

TEST(EventDecoderTest, RegionOfWholeEntriesDecodesAsEachAlone) {
  Buffer b = Build({kX1, kEscaped, kMeta, kEmpty, kKinetoArgsFirst, kX2, kX2},
                   {",", ",\n  ", " , ", ",", ",\t", ","});
  // Up to the separator before the last entry: six entries.
  RegionResult r = DecodeRegionTo(b, After(b, 5));
  ASSERT_TRUE(r.ok);
  Buffer six = Build({kX1, kEscaped, kMeta, kEmpty, kKinetoArgsFirst, kX2},
                     {",", ",\n  ", " , ", ",", ",\t"});
  const Decoded alone = DecodeAll(six, false);
  EXPECT_EQ(r.events, alone.events);
  EXPECT_EQ(r.counts.events, 5u);
  EXPECT_EQ(r.counts.empty_events, 1u);
  EXPECT_EQ(r.counts.metadata_events, alone.counts.metadata_events);
  EXPECT_EQ(r.counts.saw_cat, alone.counts.saw_cat);
  EXPECT_EQ(r.counts.saw_jax_process, alone.counts.saw_jax_process);
}

TEST(EventDecoderTest, RegionCutInsideAStringFails) {
  // "},{" inside a name, and with escaped quotes around it: a cut there
  // leaves a string open.
  for (const std::string& tricky : {std::string(R"({"ph":"X","ts":110,"name":"a},{b"})"),
                                    std::string(R"({"ph":"X","ts":110,"name":"a\"},{\"b"})"),
                                    std::string(R"({"ph":"X","ts":110,"name":"a\\\"},{\\\"b"})")}) {
    Buffer b = Build({kX2, tricky, kX2}, {",", ","});
    const size_t in_string = b.bytes.find("},{", b.entries[1].first) + 1;
    ASSERT_LT(in_string, After(b, 1));
    RegionResult r = DecodeRegionTo(b, in_string);
    EXPECT_FALSE(r.ok) << tricky;
    EXPECT_TRUE(r.events.empty());
    EXPECT_EQ(r.counts.events, 0u);  // nothing counted on failure
    // Cut at the true separator, the same text decodes.
    EXPECT_TRUE(DecodeRegionTo(b, After(b, 1)).ok) << tricky;
  }
}

TEST(EventDecoderTest, RegionCutInsideANestedValueFails) {
  const std::string nested = R"({"ph":"X","ts":110,"args":{"l":[{"a":1},{"b":2}],"z":1}})";
  Buffer b = Build({kX2, nested, kX2}, {",", ","});
  const size_t in_array = b.bytes.find("},{", b.entries[1].first) + 1;
  EXPECT_FALSE(DecodeRegionTo(b, in_array).ok);
  // A cut inside the last entry's own object (after args' '}').
  const std::string after_args = R"({"ph":"X","args":{"a":1},{"b":2}})";
  Buffer c = Build({kX2, after_args, kX2}, {",", ","});
  EXPECT_FALSE(DecodeRegionTo(c, c.bytes.find("},{", c.entries[1].first) + 1).ok);
}

TEST(EventDecoderTest, RegionWithAnEntryThatAloneWouldDropFails) {
  for (const std::string& bad : {kMissingComma, kBadDur, std::string("7"), std::string("[1]"),
                                 std::string(R"({"a":1} x)"), std::string(R"({"a":1}})")}) {
    Buffer b = Build({kX2, bad, kX2}, {",", ","});
    RegionResult r = DecodeRegionTo(b, After(b, 2));
    EXPECT_FALSE(r.ok) << bad;
    EXPECT_EQ(r.counts.events, 0u) << bad;
    EXPECT_TRUE(r.counts.drops.empty()) << bad;
  }
  // A string dur is no drop: the region decodes.
  Buffer b = Build({kX2, kStringDur, kX2}, {",", ","});
  EXPECT_TRUE(DecodeRegionTo(b, After(b, 2)).ok);
}

}  // namespace
}  // namespace profwatch::parse
