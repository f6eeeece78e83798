// EventDecoder: the JSON text of one traceEvents entry (an object, already
// cut out and checked for balance by the trace parser's scanner) to a
// TraceEvent, with simdjson On-Demand. It reads only the fields a TraceEvent
// carries. One decoder per thread: the JSON trace parser decodes inline with
// one, and DecodePipeline's threads each own one.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parse/limits.h"
#include "parse/trace_event.h"

namespace profwatch::parse {

// JSON's whitespace between tokens (RFC 8259: space, tab, LF, CR).
inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// ts values are picoseconds relative to a file's time base: the floor of the
// first parseable ts, in microseconds. Once known it never changes.
struct TimeBase {
  bool known = false;
  int64_t us = 0;
};

// What decoding entries found: ParseSummary's per-event counters, kept per
// decoder (or per batch) and added up in file order by the parser.
struct DecodeCounts {
  uint64_t events = 0;           // non-empty objects delivered
  uint64_t empty_events = 0;     // `{}`
  uint64_t metadata_events = 0;  // of `events`, ph "M"
  std::map<std::string, uint64_t> drops;
  bool saw_cat = false;          // an event had a "cat" key (Kineto)
  bool saw_jax_process = false;  // a process_name of /device: or /host:

  void Drop(std::string_view reason) { ++drops[std::string(reason)]; }
  void Add(const DecodeCounts& other);
};

enum class DecodeOutcome { kEvent, kEmpty, kDrop };

class EventDecoder {
 public:
  // `runs` false: DecodeEntries decodes every entry alone (see
  // ParseOptions::decode_runs).
  explicit EventDecoder(bool dur_as_double, bool runs = true)
      : dur_as_double_(dur_as_double), runs_(runs) {}

  // Decodes the object text [p, p + len). REQUIRES: `capacity` >= len +
  // simdjson::SIMDJSON_PADDING bytes readable from p. Sets `base` from this
  // event's ts when it is not known yet. Counts the outcome in `counts`.
  // Views in `ev` point into [p, p + capacity), or (strings with escapes)
  // into this decoder, valid until its next Decode.
  DecodeOutcome Decode(const char* p, size_t len, size_t capacity, TimeBase& base,
                       DecodeCounts& counts, TraceEvent& ev);

  // (offset, length) of one entry in a buffer.
  using EntrySpan = std::pair<size_t, size_t>;

  // Decodes a run of entries of `buf` as one simdjson document, an array,
  // which pays simdjson's per-document cost once instead of `count` times
  // (for entries of a few hundred bytes that cost rivals the decoding
  // itself). REQUIRES: the entries are
  // in order, entries[0].first >= 1, the bytes between two entries are only
  // whitespace and one comma, and `capacity` >= the run's end + 1 +
  // simdjson::SIMDJSON_PADDING bytes of `buf`. The byte before the first and
  // the byte after the last entry are overwritten during the call and restored.
  // Returns how many entries from the front it decoded, as Decode would have
  // (counted in `counts`; events stored at events[kept], events[kept + 1], ...
  // with `kept` advanced). At the first entry it could not decode exactly so
  // (any error or drop, whose reason and position only Decode of the entry
  // alone gives), it stops: the caller decodes the rest with Decode. Views
  // of strings with escapes stay valid until the decoder's next call.
  size_t DecodeRun(char* buf, size_t capacity, const EntrySpan* entries, size_t count,
                   TimeBase& base, DecodeCounts& counts, TraceEvent* events, size_t& kept);

  // Decodes the text [buf + first, buf + end), traceEvents entries from one
  // that starts at `first` (just after the '[' or separator at first - 1) to
  // one that ends before the separator at `end`, as one simdjson document,
  // without knowing where the entries between lie: simdjson's stage 1 is the
  // only scan of the bytes. All or nothing: true when every entry is an
  // object that Decode would turn into an event or count as empty; then
  // `counts` has their outcomes and events[0, n) their events (the vector
  // grows as needed). False on any simdjson error (a cut inside a string or
  // a nested value shows as one), an entry that is not an object or that
  // Decode would drop, or text after the array: nothing is counted and the
  // caller cuts the text into entries exactly. REQUIRES: `capacity` >= end +
  // 1 + simdjson::SIMDJSON_PADDING bytes of `buf`; no entry in the text is
  // nested deeper or larger than the caller's limits (On-Demand checks
  // neither: the caller bounds the text). buf[first - 1] and buf[end] are
  // overwritten during the call and restored. Views of strings with escapes
  // stay valid until the decoder's next call.
  bool DecodeRegion(char* buf, size_t capacity, size_t first, size_t end, TimeBase& base,
                    DecodeCounts& counts, std::vector<TraceEvent>& events, size_t& n);

  // Decodes entries of `buf` in order, each as Decode would (outcomes counted
  // in `counts`): in runs (DecodeRun) where they lie back to back, one by one
  // elsewhere. Events go to events[0, 1, ...] (room for `count`); on_event(ev)
  // is called for each, in order, before the decoder's strings are reused.
  // Returns how many events. REQUIRES: `capacity` >= each entry's end + 1 +
  // simdjson::SIMDJSON_PADDING bytes of `buf`, entries in order.
  template <class OnEvent>
  size_t DecodeEntries(char* buf, size_t capacity, const EntrySpan* entries, size_t count,
                       TimeBase& base, DecodeCounts& counts, TraceEvent* events,
                       OnEvent&& on_event) {
    size_t kept = 0;
    size_t i = 0;
    while (i < count) {
      const size_t run = runs_ && i + 1 < count && entries[i].first >= 1
                             ? RunLength(buf, entries + i, count - i)
                             : 1;
      const size_t before = kept;
      const size_t done =
          run >= 2 ? DecodeRun(buf, capacity, entries + i, run, base, counts, events, kept) : 0;
      for (size_t k = before; k < kept; ++k) on_event(events[k]);
      i += done;
      if (done == run) continue;
      // One entry alone: a run of one, or the entry where a run stopped.
      const auto [offset, length] = entries[i];
      if (Decode(buf + offset, length, capacity - offset, base, counts, events[kept]) ==
          DecodeOutcome::kEvent) {
        on_event(events[kept++]);
      }
      ++i;
    }
    return kept;
  }

  // How many entries from the front (at least 1) DecodeRun can take: each
  // next one follows after only whitespace and one comma (a dropped entry in
  // between ends the run), all within kMaxRunBytes.
  static size_t RunLength(const char* buf, const EntrySpan* entries, size_t count);

 private:
  // What reading one object's fields found. On kDrop `drop` is the reason.
  struct Fields {
    enum Outcome { kEvent, kEmpty, kDrop } outcome;
    std::string_view drop;
    static Fields Drop(simdjson::error_code err);
    static Fields BadJson() { return Fields{kDrop, "bad_json"}; }
  };
  // Counts only kEvent's outcome (events, metadata_events, saw_*).
  Fields DecodeFields(simdjson::ondemand::object& obj, TimeBase& base, DecodeCounts& counts,
                      TraceEvent& ev);

  simdjson::ondemand::parser parser_;
  bool dur_as_double_;
  bool runs_;
};

}  // namespace profwatch::parse
