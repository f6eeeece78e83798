// TraceParser: turns a ByteSource into a stream of TraceEvents delivered to
// an EventSink, in file order, in bounded memory (the whole document is never
// held: traceEvents is cut into events before simdjson sees them).
// A parser object is not thread-safe; reuse one per worker (it keeps its
// buffers and simdjson parser between files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/work_share.h"
#include "parse/limits.h"
#include "parse/trace_event.h"
#include "read/byte_source.h"

namespace profwatch::parse {

class EventSink {
 public:
  virtual ~EventSink() = default;
  // Called once per parsed event. REQUIRES: must not retain views in `e`.
  virtual void OnEvent(const TraceEvent& e) = 0;
};

struct ParseOptions {
  // Bytes pulled from the source per read; events straddling reads are carried.
  // 256 KiB: a read (and a decode batch) stays within a core's L2 cache.
  size_t chunk_bytes = 256 << 10;
  // A single event larger than this is dropped and counted (reason
  // "event_too_large"); the parse continues after it.
  size_t max_event_bytes = 16 << 20;
  // Top-level values other than traceEvents larger than this are skipped.
  size_t max_header_value_bytes = 16 << 20;
  // Also convert "dur" to a double (TraceEvent::dur_us, as Python's json
  // does). Only the drill report needs it; the exact dur_ps is always set.
  // Off saves a second number parse per event on the analysis path.
  bool dur_as_double = true;
  // Decode entries that lie back to back as one simdjson document per run
  // (EventDecoder::DecodeRun), with the same results. Off: every entry alone,
  // the reference that tests and the fuzzer compare runs with.
  bool decode_runs = true;
  // Threads that decode events beside the parsing thread (0: decode inline).
  // Events still reach the sink in file order, on the parsing thread.
  int decode_threads = 0;
  // Another thread's idle time (the read-ahead thread's, see
  // read::MakePrefetchSource) decodes events too. With neither this nor
  // decode_threads, events are decoded inline.
  std::shared_ptr<WorkShare> work_share = nullptr;
};

struct ParseSummary {
  TraceSchema schema = TraceSchema::kUnknown;
  uint64_t events = 0;           // entries of traceEvents that are non-empty objects
  uint64_t empty_events = 0;     // `{}` entries (JAX writes one at the end)
  uint64_t metadata_events = 0;  // of `events`, those with ph "M"
  // Entries skipped, by reason: "not_object", "bad_json", "event_too_large",
  // "bad_field" (a field of the wrong type that the event needs), ...
  std::map<std::string, uint64_t> drops;
  // events - metadata_events == kJaxEventCap: the converter keeps the first
  // 1,000,000 trace events (metadata is written apart and not capped).
  bool suspected_truncated = false;
  bool has_trace_events = false;             // the key was present
  int64_t time_base_us = 0;                  // ts_ps of events are relative to this
  std::optional<int64_t> base_time_ns;       // Kineto baseTimeNanoseconds
  std::optional<int64_t> rank;               // Kineto distributedInfo.rank
  std::optional<int64_t> world_size;         // Kineto distributedInfo.world_size
  std::map<int64_t, int64_t> process_ranks;  // nsys: pid -> rank (NVTX "rank=N")
  std::vector<std::string> device_names;     // Kineto deviceProperties[].name, rocprof agents
  // rocprof: GPU agents of the processes that dispatched no kernel (seen,
  // not counted as the window's GPUs). Unset for other formats.
  std::optional<int64_t> idle_gpu_agents;
  // rocprof: those agents as "pid <pid> GPU <index> (<product name>)", in
  // process then GPU index order; at most kMaxIdleGpuAgentNames (the count
  // above goes on past it).
  std::vector<std::string> idle_gpu_agent_names;
  uint64_t json_bytes = 0;  // bytes of JSON consumed (decompressed)
};

class TraceParser {
 public:
  virtual ~TraceParser() = default;
  // Parses one file. Errors: kTruncated (input ended inside the document),
  // kCorrupt (not JSON / top level not an object), kUnsupported (an object
  // without traceEvents), plus any error of `source`. Events delivered before
  // an error stay delivered; the caller decides whether to keep them.
  virtual Result<ParseSummary> Parse(read::ByteSource& source, EventSink& sink) = 0;
};

std::unique_ptr<TraceParser> MakeJsonTraceParser(ParseOptions options = {});

// Parses a decimal JSON number text (e.g. "22.140000000000001", "1e-06",
// "1712195495505582.988", "-3") in microseconds into exact integer
// picoseconds relative to `base_us`: round-half-even at the picosecond.
// Returns nullopt if the text is not a number or the result overflows int64.
std::optional<int64_t> MicrosTextToPicos(std::string_view text, int64_t base_us);
// The same as a flag and an out-parameter, for the per-event path: GCC
// returns an optional<int64_t> through memory and stalls reading it back.
bool MicrosTextToPicos(std::string_view text, int64_t base_us, int64_t& ps);

namespace detail {
// MicrosTextToPicos without its fast path for plain decimals (for tests).
std::optional<int64_t> MicrosTextToPicosGeneral(std::string_view text, int64_t base_us);
}  // namespace detail

// Integer part (floor) of a microsecond number text, for choosing a time base.
std::optional<int64_t> MicrosTextFloor(std::string_view text);

}  // namespace profwatch::parse
