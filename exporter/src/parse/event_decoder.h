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

#include "parse/trace_event.h"

namespace profwatch::parse {

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
  explicit EventDecoder(bool dur_as_double) : dur_as_double_(dur_as_double) {}

  // Decodes the object text [p, p + len). REQUIRES: `capacity` >= len +
  // simdjson::SIMDJSON_PADDING bytes readable from p. Sets `base` from this
  // event's ts when it is not known yet. Counts the outcome in `counts`.
  // Views in `ev` point into [p, p + capacity), or (strings with escapes)
  // into this decoder, valid until its next Decode.
  DecodeOutcome Decode(const char* p, size_t len, size_t capacity, TimeBase& base,
                       DecodeCounts& counts, TraceEvent& ev);

 private:
  simdjson::ondemand::parser parser_;
  bool dur_as_double_;
};

}  // namespace profwatch::parse
