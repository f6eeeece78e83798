// Streaming trace-events JSON parser (see trace_parser.h).
//
// Why not hand the document to simdjson: simdjson 3.0.1 caps one document at
// 4 GiB and On-Demand needs the whole padded document in memory, while traces
// decompress to many GiB. So this file owns the document structure:
//  - the top-level object is walked byte by byte (keys, and the values that
//    are not traceEvents, which are skipped or captured when small and needed);
//  - once the time base is known (and without decode helper threads: a
//    region is decoded on the parsing thread), the traceEvents array goes to
//    simdjson in regions of up to 64 KiB, each cut after the last entry
//    separator ('}' ',' '{', whitespace between) found by searching back
//    from the region's limit, so that simdjson's stage 1 is the only full
//    scan of those bytes (EventDecoder::DecodeRegion). A cut
//    that is not between two entries (inside a string or a nested value)
//    makes simdjson report an error; a region that does not decode whole,
//    the first entries, and the entries around a read boundary go to the
//    exact scanner below. A region holds at most kMaxEventDepth '{' and '['
//    bytes and at most max_event_bytes, so no entry in it can be one the
//    exact scanner drops as too deep or too large;
//  - the exact scanner cuts the traceEvents array into entries: a block
//    scanner that finds quotes, escapes and brackets 64 bytes at a time (SSE2
//    on x86-64), keeping only string state and bracket depth;
//  - each entry that is an object goes to one reused simdjson On-Demand parser
//    straight from the read buffer (the buffer keeps SIMDJSON_PADDING spare
//    bytes), which extracts the few fields a TraceEvent carries. Entries that
//    lie back to back go as one document, an array of up to 64 KiB
//    (EventDecoder::DecodeRun), so simdjson's per-document work is paid once
//    per run rather than once per entry of a few hundred bytes. Any entry a
//    run cannot decode exactly is decoded alone.
// An entry straddling two reads is carried to the front of the buffer. Memory
// is bounded by chunk_bytes + max_event_bytes + max_header_value_bytes.
//
// Choices for cases the format leaves open (all tested in
// tests/unit/parse/json_trace_parser_test.cc):
//  - args.name, args.device and args.stream are read for every event (other
//    args are skipped unparsed): metadata names, Kineto devices and streams,
//    and the JAX scope of kernels (regions).
//  - invalid UTF-8 anywhere in an entry (simdjson's stage 1 validates it all)
//    drops the entry as "bad_utf8"; other simdjson errors, text after the
//    object, a stray comma or an unbalanced '}' drop it as "bad_json"; entries
//    nested deeper than 1024 as "too_deep". Skipped parts of an entry are not
//    fully validated (On-Demand skips them structurally).
//  - a top-level structural error is kCorrupt; input ending inside the
//    document is kTruncated. Header values other than distributedInfo,
//    baseTimeNanoseconds and deviceProperties are skipped without validation.
//  - ts/dur that are not numbers leave has_ts/has_dur false; a dur beyond
//    double range is +-inf in dur_us (Python's json does the same).
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "parse/decode_pipeline.h"
#include "parse/event_decoder.h"
#include "parse/limits.h"
#include "parse/trace_parser.h"

namespace profwatch::parse {
namespace {

namespace od = simdjson::ondemand;

constexpr size_t kBlock = 64;
// Spare bytes after the data: simdjson's padding, plus room to finish the
// last (partial) scan block at end of input.
constexpr size_t kPad = simdjson::SIMDJSON_PADDING + kBlock;

std::string DescribeByte(char c) {
  static const char* kHex = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  std::string out = "0x";
  out += kHex[u >> 4];
  out += kHex[u & 15];
  if (u >= 0x20 && u < 0x7f) {
    out += " '";
    out += c;
    out += "'";
  }
  return out;
}

// Bit i of each mask describes byte i of a 64-byte block.
struct BlockMasks {
  uint64_t quote = 0;
  uint64_t backslash = 0;
  uint64_t bracket = 0;  // { } [ ]
  uint64_t comma = 0;
};

// One SIMD path, SSE2, which every x86-64 CPU has (no dispatch on CPU
// features); the plain loop serves other architectures. docs/performance.md
// says what each buys.
#if defined(__SSE2__)
inline uint64_t Movemask16(__m128i v) { return static_cast<uint32_t>(_mm_movemask_epi8(v)); }

inline BlockMasks ScanBlock(const char* p) {
  const __m128i q = _mm_set1_epi8('"');
  const __m128i bs = _mm_set1_epi8('\\');
  const __m128i lower = _mm_set1_epi8(0x20);
  const __m128i open = _mm_set1_epi8('{');   // '[' | 0x20 == '{'
  const __m128i close = _mm_set1_epi8('}');  // ']' | 0x20 == '}'
  const __m128i comma = _mm_set1_epi8(',');
  BlockMasks m;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i vl = _mm_or_si128(v, lower);
    const int shift = 16 * k;
    m.quote |= Movemask16(_mm_cmpeq_epi8(v, q)) << shift;
    m.backslash |= Movemask16(_mm_cmpeq_epi8(v, bs)) << shift;
    const __m128i br = _mm_or_si128(_mm_cmpeq_epi8(vl, open), _mm_cmpeq_epi8(vl, close));
    m.bracket |= Movemask16(br) << shift;
    m.comma |= Movemask16(_mm_cmpeq_epi8(v, comma)) << shift;
  }
  return m;
}
#else
inline BlockMasks ScanBlock(const char* p) {
  BlockMasks m;
  for (size_t i = 0; i < kBlock; ++i) {
    const char c = p[i];
    const uint64_t bit = uint64_t{1} << i;
    if (c == '"') m.quote |= bit;
    if (c == '\\') m.backslash |= bit;
    if (c == '{' || c == '}' || c == '[' || c == ']') m.bracket |= bit;
    if (c == ',') m.comma |= bit;
  }
  return m;
}
#endif

// How many of the bytes [p, p + n) may go in a region: the longest prefix
// of whole 32-byte blocks (then the bytes of the tail) holding at most
// `max_opens` '{' and '[' bytes, whether in strings or not.
size_t OpensBoundedPrefix(const char* p, size_t n, size_t max_opens) {
  size_t opens = 0;
  size_t i = 0;
#if defined(__AVX2__)
  const __m256i lower = _mm256_set1_epi8(0x20);
  const __m256i open = _mm256_set1_epi8('{');  // '[' | 0x20 == '{'
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const auto m = static_cast<uint32_t>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_or_si256(v, lower), open)));
    opens += static_cast<size_t>(__builtin_popcount(m));
    if (opens > max_opens) return i;
  }
#endif
  for (; i < n; ++i) {
    if ((p[i] | 0x20) == '{' && ++opens > max_opens) return i;
  }
  return n;
}

// Where a region from `s` can end: the last ',' in (s, limit) whose nearest
// non-space bytes are '}' before it (after s) and '{' after it (before
// `end`), or 0 when there is none. Only a guess at an entry separator: the
// bytes around it are not scanned for strings or depth (simdjson's stage 1
// and On-Demand then report a wrong guess as an error).
size_t FindRegionCut(const char* b, size_t s, size_t limit, size_t end) {
  size_t hi = limit;
  while (hi > s + 1) {
    const void* hit = memrchr(b + s + 1, ',', hi - s - 1);
    if (hit == nullptr) return 0;
    const size_t c = static_cast<size_t>(static_cast<const char*>(hit) - b);
    hi = c;
    size_t before = c;
    while (before > s && IsJsonSpace(b[before - 1])) --before;
    if (before == s || b[before - 1] != '}') continue;
    size_t after = c + 1;
    while (after < end && IsJsonSpace(b[after])) ++after;
    if (after < end && b[after] == '{') return c;
  }
  return 0;
}

// Bit i = XOR of bits 0..i: turns quote positions into an in-string mask.
inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// Bits i..63 set (none for i == 64).
inline uint64_t BitsFrom(int i) { return i >= 64 ? 0 : ~uint64_t{0} << i; }

// Which bytes are escaped (follow an odd run of backslashes). Backslashes are
// rare in traces, so this is a plain loop behind a fast path in the caller.
// Looks at the first `n` bytes of the block; `carry` is the state after them.
inline uint64_t EscapedBits(uint64_t backslash, bool& carry, size_t n) {
  uint64_t escaped = 0;
  bool esc = carry;
  for (size_t i = 0; i < n; ++i) {
    if (esc) {
      escaped |= uint64_t{1} << i;
      esc = false;
    } else if ((backslash >> i) & 1) {
      esc = true;
    }
  }
  carry = esc;
  return escaped;
}

enum class Top {
  kBeforeDoc,   // before the opening '{'
  kKeyOrEnd,    // after '{'
  kKey,         // after ','
  kInKey,       // inside a key string
  kColon,       // after a key
  kValue,       // after ':'
  kInValue,     // inside a (skipped or captured) non-traceEvents value
  kCommaOrEnd,  // after a value
  kAfterDoc,    // after the closing '}'
  kInEvents,    // inside the traceEvents array (block scanner)
};

class JsonTraceParser final : public TraceParser {
 public:
  explicit JsonTraceParser(ParseOptions options)
      : opt_(options), decoder_(options.dur_as_double, options.decode_runs) {
    if (opt_.chunk_bytes == 0) opt_.chunk_bytes = 1;
    if (opt_.max_event_bytes == 0) opt_.max_event_bytes = 1;
    if (opt_.decode_threads > 0 || opt_.work_share) {
      pipeline_ = std::make_unique<DecodePipeline>(opt_.decode_threads, opt_.dur_as_double,
                                                   opt_.work_share, 4, opt_.decode_runs);
    }
  }

  Result<ParseSummary> Parse(read::ByteSource& source, EventSink& sink) override;

 private:
  // --- buffer management ---
  size_t KeepFrom() const;
  // Shifts every position after the bytes before `keep` were dropped (the
  // kept bytes [keep, end_) now start buf_).
  void Rebase(size_t keep);
  Status Fill(read::ByteSource& source, EventSink& sink);
  // The parse loop; Parse delivers batched events and the summary after it.
  Status Run(read::ByteSource& source, EventSink& sink);
  // Hands buf_ with the entries found in it to the pipeline; buf_ becomes a
  // fresh buffer holding the kept bytes from `keep` on.
  void SubmitBatch(size_t keep, EventSink& sink);
  // Without a pipeline: decodes the pending entries of buf_ and delivers
  // their events, before buf_ moves.
  void DecodePending(EventSink& sink);
  uint64_t Offset(size_t pos) const { return base_offset_ + pos; }

  // --- header (top-level object) state machine ---
  // Consumes bytes from pos_ until the data ends or the events array starts.
  // Returns an error for structural problems of the top level.
  Status RunHeader();
  // What RunHeader does after a step: go on with the next byte, or read
  // the same one again (the state changed before it).
  enum class HeaderStep { kConsume, kReread };
  // A byte of the top level outside keys and values: the document's
  // braces, a key's opening quote, ':', ',', and what follows the document.
  Result<HeaderStep> HeaderSyntax(char c);
  // `c` must be `want`: the state becomes `next`; else kCorrupt "expected
  // <what>, found <c> at offset <n>".
  Result<HeaderStep> Expect(char c, char want, Top next, const char* what);
  // A byte of a key (kInKey); the key keeps its first kMaxKeyBytes.
  void KeyByte(char c);
  // A byte of a value other than traceEvents (kInValue): scanned to the
  // value's end and captured (up to max_header_value_bytes) when its key is
  // one the summary reads.
  Result<HeaderStep> ValueByte(char c);
  // Where a value ends, seen from the byte just scanned.
  enum class ValueEnd { kNo, kAfter, kBefore };
  ValueEnd ScanValueByte(char c);
  void BeginValue();
  void EndValue();
  Status StartTraceEvents(char c);

  // --- events array ---
  // Scans whole blocks (or, at EOF, the rest padded with spaces). Returns
  // after the closing ']' (mode back to kCommaOrEnd) or when data runs out.
  void RunEvents(EventSink& sink);
  void FinishEntry(size_t end, EventSink& sink);
  // Whether entries from `pos` on may go to simdjson in regions (see the
  // file comment): runs on, no decode helper threads, the time base known,
  // and past the text of the last region that did not decode. (A read-ahead
  // thread's lent time still decodes the batches of the exact scanner.)
  bool OnePassAt(size_t pos) const {
    return opt_.decode_runs && opt_.decode_threads == 0 && base_.known &&
           Offset(pos) >= exact_until_;
  }
  // REQUIRES: at_entry_start_. Decodes the region of entries from pos_ and
  // moves past it; false (and exact_until_ set) when there is no region to
  // cut or it does not decode whole.
  bool TryRegion(EventSink& sink);
  void Drop(std::string_view reason) { counts_.Drop(reason); }

  void ParseCapturedHeader();

  ParseOptions opt_;
  od::parser parser_;     // header values
  EventDecoder decoder_;  // entries decoded inline (before batching, or without it)
  TraceEvent event_;      // their event: Decode overwrites it (no zeroing of a fresh one per entry)
  std::unique_ptr<DecodePipeline> pipeline_;  // decode_threads > 0
  // Entries of buf_ waiting to be decoded together, in runs (once the time
  // base is known every entry goes this way): as a batch of the pipeline, or
  // by DecodePending.
  std::vector<std::pair<size_t, size_t>> pending_;
  std::vector<TraceEvent> pending_events_;  // DecodePending's, reused
  DecodeCounts counts_;                     // every entry's outcome, inline and batched
  TimeBase base_;
  ByteBuffer buf_;  // data [0, end_) plus at least kPad spare bytes (uninitialised)
  size_t end_ = 0;
  size_t pos_ = 0;
  uint64_t base_offset_ = 0;  // absolute offset of buf_[0]
  bool eof_ = false;

  ParseSummary summary_;
  Top top_ = Top::kBeforeDoc;
  bool saw_kineto_key_ = false;
  bool saw_rocprof_key_ = false;  // rocprofiler-sdk's top-level key

  // Header value scanning.
  std::string key_;
  bool key_escape_ = false;
  int64_t val_depth_ = 0;
  bool val_in_string_ = false;
  bool val_escape_ = false;
  bool val_started_ = false;
  bool val_is_string_ = false;
  bool capture_ = false;
  bool capture_overflow_ = false;
  std::string captured_;

  // Events array scanning.
  size_t entry_start_ = 0;
  int64_t depth_ = 0;
  uint64_t in_string_carry_ = 0;  // all ones while inside a string
  bool escape_carry_ = false;
  bool entry_too_large_ = false;
  bool entry_too_deep_ = false;
  bool entry_unbalanced_ = false;
  bool entry_after_comma_ = false;  // the entry follows a ',' (not the '[')
  // pos_ is where an entry starts (just after the '[' or a separator) and
  // the scanner state is clear: a region may start here.
  bool at_entry_start_ = false;
  // Absolute offset before which entries go through the exact scanner (the
  // end of a region that did not decode, or of one that had no cut).
  uint64_t exact_until_ = 0;
  uint64_t events_start_ = 0;  // absolute offset just after the '[' of traceEvents
  // Where the entry's first bracket closed; anything after it but whitespace
  // makes the entry bad JSON (`{"a":1} x`).
  static constexpr size_t kNoClose = static_cast<size_t>(-1);
  size_t entry_first_close_ = kNoClose;
};

size_t JsonTraceParser::KeepFrom() const {
  if (top_ == Top::kInEvents && !entry_too_large_) return std::min(entry_start_, pos_);
  return pos_;
}

void JsonTraceParser::Rebase(size_t keep) {
  end_ -= keep;
  pos_ -= keep;
  if (top_ == Top::kInEvents && entry_start_ >= keep) {
    entry_start_ -= keep;
  } else {
    entry_start_ = 0;
  }
  if (entry_first_close_ != kNoClose) {
    entry_first_close_ = entry_first_close_ >= keep ? entry_first_close_ - keep : kNoClose;
  }
  base_offset_ += keep;
}

void JsonTraceParser::SubmitBatch(size_t keep, EventSink& sink) {
  std::unique_ptr<EventBatch> batch = pipeline_->NewBatch();
  ByteBuffer next = std::move(batch->bytes);  // a recycled read buffer, if any
  // Sized for what it will hold (not for the largest event seen so far).
  const size_t want = std::max(2 * opt_.chunk_bytes + kPad, end_ - keep + opt_.chunk_bytes + kPad);
  if (next.size() < want) next.resize(want);
  std::memcpy(next.data(), buf_.data() + keep, end_ - keep);
  batch->bytes = std::move(buf_);
  batch->entries.swap(pending_);  // pending_ takes the recycled (empty) vector
  batch->base = base_;
  buf_ = std::move(next);
  Rebase(keep);
  pipeline_->Submit(std::move(batch), sink, counts_);
}

void JsonTraceParser::DecodePending(EventSink& sink) {
  if (pending_events_.size() < pending_.size()) pending_events_.resize(pending_.size());
  decoder_.DecodeEntries(buf_.data(), buf_.size(), pending_.data(), pending_.size(), base_, counts_,
                         pending_events_.data(), [&](const TraceEvent& ev) { sink.OnEvent(ev); });
  pending_.clear();
}

Status JsonTraceParser::Fill(read::ByteSource& source, EventSink& sink) {
  const size_t chunk = opt_.chunk_bytes;
  if (!pipeline_ && !pending_.empty()) DecodePending(sink);
  size_t keep = KeepFrom();
  if (!pending_.empty()) {
    // buf_ holds entries still to be decoded: it goes with them.
    SubmitBatch(keep, sink);
  } else if (buf_.size() < end_ + chunk + kPad && keep > 0) {
    // Compact when the spare room cannot take a whole chunk.
    std::memmove(buf_.data(), buf_.data() + keep, end_ - keep);
    Rebase(keep);
  }
  if (buf_.size() < end_ + chunk + kPad) {
    size_t want = std::max(buf_.size() * 2, end_ + chunk + kPad);
    buf_.resize(want);
  }
  auto n = source.Read(buf_.data() + end_, chunk);
  if (!n) {
    Error e = n.error();
    e.Wrap("json parser: reading at offset " + std::to_string(Offset(end_)));
    return tl::unexpected<Error>(std::move(e));
  }
  if (*n == 0) {
    eof_ = true;
  } else {
    end_ += *n;
    summary_.json_bytes += *n;
  }
  return {};
}

Status JsonTraceParser::Run(read::ByteSource& source, EventSink& sink) {
  while (true) {
    if (top_ == Top::kInEvents) {
      RunEvents(sink);
    } else {
      Status st = RunHeader();
      if (!st) return st;
    }
    if (top_ == Top::kInEvents && pos_ < end_ && end_ - pos_ >= kBlock) continue;
    if (top_ != Top::kInEvents && pos_ < end_) continue;
    if (eof_) break;
    Status st = Fill(source, sink);
    if (!st) return st;
    if (eof_ && top_ == Top::kInEvents) RunEvents(sink);  // final partial block
  }
  return {};
}

Result<ParseSummary> JsonTraceParser::Parse(read::ByteSource& source, EventSink& sink) {
  summary_ = ParseSummary{};
  counts_ = DecodeCounts{};
  base_ = TimeBase{};
  pending_.clear();
  top_ = Top::kBeforeDoc;
  saw_kineto_key_ = false;
  saw_rocprof_key_ = false;
  end_ = pos_ = 0;
  base_offset_ = 0;
  eof_ = false;
  entry_start_ = 0;
  at_entry_start_ = false;
  exact_until_ = 0;
  if (buf_.size() < 2 * opt_.chunk_bytes + kPad) buf_.resize(2 * opt_.chunk_bytes + kPad);

  const Status run = Run(source, sink);
  // Events found before an error are delivered too (see TraceParser::Parse).
  if (pipeline_) {
    if (!pending_.empty()) SubmitBatch(pos_ < end_ ? pos_ : end_, sink);
    pipeline_->Drain(sink, counts_);
  } else if (!pending_.empty()) {
    DecodePending(sink);
  }
  summary_.events = counts_.events;
  summary_.empty_events = counts_.empty_events;
  summary_.metadata_events = counts_.metadata_events;
  summary_.drops = counts_.drops;
  summary_.time_base_us = base_.us;
  if (!run) return tl::unexpected<Error>(run.error());

  if (top_ != Top::kAfterDoc) {
    if (top_ == Top::kBeforeDoc) {
      return MakeError(ErrorCode::kCorrupt,
                       summary_.json_bytes == 0 ? "empty file" : "no JSON value (only whitespace)");
    }
    std::string where = top_ == Top::kInEvents ? "inside traceEvents" : "inside the JSON object";
    return MakeError(ErrorCode::kTruncated, "input ended " + where + " at offset " +
                                                std::to_string(summary_.json_bytes) + " after " +
                                                std::to_string(summary_.events) + " events");
  }
  if (!summary_.has_trace_events) {
    if (saw_rocprof_key_) {
      return MakeError(ErrorCode::kUnsupported,
                       "a rocprofv3 (rocprofiler-sdk) JSON output: AMD's profiler output is not "
                       "read yet; profile with the PyTorch or JAX profiler");
    }
    return MakeError(ErrorCode::kUnsupported, "JSON object without a traceEvents key");
  }
  // The XLA converter caps trace events; process/thread metadata is written
  // apart from them and does not count.
  summary_.suspected_truncated = summary_.events - summary_.metadata_events == kJaxEventCap;
  if (saw_kineto_key_ || counts_.saw_cat) {
    summary_.schema = TraceSchema::kKineto;
  } else if (counts_.saw_jax_process) {
    summary_.schema = TraceSchema::kJaxTraceEvents;
  } else {
    summary_.schema = TraceSchema::kUnknown;
  }
  return summary_;
}

void JsonTraceParser::BeginValue() {
  val_depth_ = 0;
  val_in_string_ = val_escape_ = val_started_ = val_is_string_ = false;
  capture_overflow_ = false;
  captured_.clear();
  if (key_ == "schemaVersion" || key_ == "deviceProperties") saw_kineto_key_ = true;
  if (key_ == "rocprofiler-sdk-tool") saw_rocprof_key_ = true;
  capture_ =
      key_ == "distributedInfo" || key_ == "baseTimeNanoseconds" || key_ == "deviceProperties";
}

void JsonTraceParser::EndValue() {
  if (capture_ && !capture_overflow_) ParseCapturedHeader();
  capture_ = false;
  captured_.clear();
  top_ = Top::kCommaOrEnd;
}

Status JsonTraceParser::StartTraceEvents(char c) {
  if (c != '[') {
    return MakeError(ErrorCode::kUnsupported, "traceEvents is not an array (found " +
                                                  DescribeByte(c) + " at offset " +
                                                  std::to_string(Offset(pos_)) + ")");
  }
  summary_.has_trace_events = true;
  ++pos_;
  top_ = Top::kInEvents;
  entry_start_ = pos_;
  depth_ = 0;
  in_string_carry_ = 0;
  escape_carry_ = false;
  entry_too_large_ = entry_too_deep_ = entry_unbalanced_ = false;
  entry_after_comma_ = false;
  entry_first_close_ = kNoClose;
  at_entry_start_ = true;
  events_start_ = Offset(pos_);
  return {};
}

Status JsonTraceParser::RunHeader() {
  while (pos_ < end_ && top_ != Top::kInEvents) {
    const char c = buf_.data()[pos_];
    Result<HeaderStep> step = HeaderStep::kConsume;
    if (top_ == Top::kInValue) {
      step = ValueByte(c);
    } else if (top_ == Top::kInKey) {
      KeyByte(c);
    } else {
      step = HeaderSyntax(c);
    }
    if (!step) return tl::unexpected(step.error());
    if (*step == HeaderStep::kConsume) ++pos_;
  }
  // A scalar header value may end exactly at end of input; that is handled
  // as truncation by the caller (the object's '}' is missing anyway).
  return {};
}

Result<JsonTraceParser::HeaderStep> JsonTraceParser::HeaderSyntax(char c) {
  if (top_ == Top::kBeforeDoc && Offset(pos_) == 0 && end_ - pos_ >= 3 &&
      std::memcmp(buf_.data() + pos_, "\xEF\xBB\xBF", 3) == 0) {
    pos_ += 3;  // a UTF-8 byte order mark
    return HeaderStep::kReread;
  }
  if (IsJsonSpace(c)) return HeaderStep::kConsume;
  switch (top_) {
    case Top::kBeforeDoc: {
      if (c == '{') {
        top_ = Top::kKeyOrEnd;
        return HeaderStep::kConsume;
      }
      std::string what = "not a JSON object (first byte " + DescribeByte(c);
      if (c == '\x1f') what += ": still gzip?";
      if (c == '[') what += ": top level is an array";
      what += ") at offset " + std::to_string(Offset(pos_));
      return MakeError(ErrorCode::kCorrupt, what);
    }
    case Top::kKeyOrEnd:
    case Top::kKey:
      if (c == '}' && top_ == Top::kKeyOrEnd) {
        top_ = Top::kAfterDoc;
        return HeaderStep::kConsume;
      }
      key_.clear();
      key_escape_ = false;
      return Expect(c, '"', Top::kInKey, "a key in the top-level object");
    case Top::kColon:
      return Expect(c, ':', Top::kValue, "':' after a top-level key");
    case Top::kValue:
      if (key_ == "traceEvents") {
        // On success pos_ is past the '[' and the events array begins.
        if (Status st = StartTraceEvents(c); !st) return tl::unexpected(st.error());
        return HeaderStep::kReread;
      }
      BeginValue();
      top_ = Top::kInValue;
      return HeaderStep::kReread;  // the same byte starts the value
    case Top::kCommaOrEnd:
      if (c == ',') {
        top_ = Top::kKey;
        return HeaderStep::kConsume;
      }
      return Expect(c, '}', Top::kAfterDoc, "',' or '}' after a top-level value");
    case Top::kAfterDoc:
      return MakeError(ErrorCode::kCorrupt, "trailing data after the JSON document (" +
                                                DescribeByte(c) + " at offset " +
                                                std::to_string(Offset(pos_)) + ")");
    case Top::kInKey:
    case Top::kInValue:
    case Top::kInEvents:
      break;  // not syntax: RunHeader does not call for them
  }
  return HeaderStep::kReread;
}

Result<JsonTraceParser::HeaderStep> JsonTraceParser::Expect(char c, char want, Top next,
                                                            const char* what) {
  if (c != want) {
    return MakeError(ErrorCode::kCorrupt, std::string("expected ") + what + ", found " +
                                              DescribeByte(c) + " at offset " +
                                              std::to_string(Offset(pos_)));
  }
  top_ = next;
  return HeaderStep::kConsume;
}

void JsonTraceParser::KeyByte(char c) {
  if (key_escape_) {
    key_escape_ = false;
  } else if (c == '\\') {
    key_escape_ = true;
  } else if (c == '"') {
    top_ = Top::kColon;
    return;
  }
  if (key_.size() < kMaxKeyBytes) key_ += c;
}

Result<JsonTraceParser::HeaderStep> JsonTraceParser::ValueByte(char c) {
  const bool was_started = val_started_;
  const ValueEnd end = ScanValueByte(c);
  if (end == ValueEnd::kBefore) {
    if (!was_started) {
      return MakeError(ErrorCode::kCorrupt,
                       "missing value for top-level key at offset " + std::to_string(Offset(pos_)));
    }
    EndValue();
    return HeaderStep::kReread;  // the byte is the separator after the value
  }
  if (capture_ && !capture_overflow_) {
    if (captured_.size() >= opt_.max_header_value_bytes) {
      capture_overflow_ = true;
      captured_.clear();
      captured_.shrink_to_fit();
    } else {
      captured_ += c;
    }
  }
  if (end == ValueEnd::kAfter) EndValue();
  return HeaderStep::kConsume;
}

JsonTraceParser::ValueEnd JsonTraceParser::ScanValueByte(char c) {
  if (val_in_string_) {
    if (val_escape_) {
      val_escape_ = false;
    } else if (c == '\\') {
      val_escape_ = true;
    } else if (c == '"') {
      val_in_string_ = false;
      if (val_depth_ == 0) return ValueEnd::kAfter;
    }
    return ValueEnd::kNo;
  }
  ValueEnd end = ValueEnd::kNo;
  switch (c) {
    case '"':
      val_in_string_ = true;
      if (!val_started_) val_is_string_ = true;
      break;
    case '{':
    case '[':
      ++val_depth_;
      break;
    case '}':
    case ']':
      if (val_depth_ == 0) {
        end = ValueEnd::kBefore;
      } else if (--val_depth_ == 0) {
        end = ValueEnd::kAfter;
      }
      break;
    case ',':
      if (val_depth_ == 0) end = ValueEnd::kBefore;
      break;
    case ' ':
    case '\n':
    case '\r':
    case '\t':
      if (val_depth_ == 0 && val_started_) end = ValueEnd::kBefore;
      break;
    default:
      break;
  }
  val_started_ = true;
  return end;
}

void JsonTraceParser::ParseCapturedHeader() {
  // Parsed with the same parser: padding is added by simdjson's padded_string.
  simdjson::padded_string json(captured_);
  od::document doc;
  if (parser_.iterate(json).get(doc)) return;
  if (key_ == "baseTimeNanoseconds") {
    int64_t v;
    if (!doc.get_int64().get(v)) summary_.base_time_ns = v;
    return;
  }
  if (key_ == "deviceProperties") {
    od::array devices;
    if (doc.get_array().get(devices)) return;
    for (auto device : devices) {
      od::object obj;
      if (device.get_object().get(obj)) return;
      std::string_view name;
      if (obj["name"].get_string().get(name)) continue;
      summary_.device_names.emplace_back(name);
    }
    return;
  }
  if (key_ == "distributedInfo") {
    od::object obj;
    if (doc.get_object().get(obj)) return;
    for (auto field_res : obj) {
      od::field field;
      if (std::move(field_res).get(field)) return;
      std::string_view k;
      if (field.unescaped_key().get(k)) return;
      int64_t v;
      if (k == "rank") {
        if (!field.value().get_int64().get(v)) summary_.rank = v;
      } else if (k == "world_size") {
        if (!field.value().get_int64().get(v)) summary_.world_size = v;
      }
    }
  }
}

void JsonTraceParser::RunEvents(EventSink& sink) {
  char* b = buf_.data();
  if (eof_ && pos_ < end_ + kBlock) {
    // Final partial block: spaces are neutral for the scanner.
    std::memset(b + end_, ' ', kBlock);
  }
  for (;;) {
    if (at_entry_start_ && OnePassAt(pos_)) {
      while (pos_ < end_ && TryRegion(sink)) {
      }
    }
    // Blocks lie on a grid of 64 bytes from the array's start, whatever
    // regions did before: which entries are found before a read error then
    // does not depend on them (nor on the decode pipeline). After a region
    // the block up to the next grid line is a partial one.
    const size_t span = kBlock - static_cast<size_t>((Offset(pos_) - events_start_) % kBlock);
    if (eof_ ? pos_ >= end_ : pos_ + span > end_) break;
    at_entry_start_ = false;
    bool to_regions = false;  // stopped after a separator: regions from there
    const char* p = b + pos_;
    BlockMasks m = ScanBlock(p);
    if (span < kBlock) {
      const uint64_t valid = ~BitsFrom(static_cast<int>(span));
      m.quote &= valid;
      m.backslash &= valid;
      m.bracket &= valid;
      m.comma &= valid;
    }
    uint64_t escaped = 0;
    if (m.backslash != 0 || escape_carry_) escaped = EscapedBits(m.backslash, escape_carry_, span);
    const uint64_t quote = m.quote & ~escaped;
    const uint64_t in_string = PrefixXor(quote) ^ in_string_carry_;
    in_string_carry_ = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
    // Only brackets change the depth, and only commas at depth 0 separate
    // entries: walk the brackets, and look at the commas of the stretches
    // between them that lie at depth 0 (one per entry, of ~15 structurals).
    uint64_t brackets = m.bracket & ~in_string;
    const uint64_t commas = m.comma & ~in_string;
    int from = 0;  // the stretch at the current depth starts at bit `from`
    for (;;) {
      const int next = brackets != 0 ? __builtin_ctzll(brackets) : 64;
      if (depth_ == 0 && commas != 0) {
        uint64_t c = commas & BitsFrom(from) & ~BitsFrom(next);
        while (c != 0) {
          const size_t at = pos_ + static_cast<size_t>(__builtin_ctzll(c));
          c &= c - 1;
          FinishEntry(at, sink);
          entry_start_ = at + 1;
          entry_after_comma_ = true;
          if (OnePassAt(entry_start_)) {
            // Outside strings at depth 0, with the entry's flags cleared by
            // FinishEntry: the state after the separator is clear.
            pos_ = entry_start_;
            in_string_carry_ = 0;
            escape_carry_ = false;
            at_entry_start_ = to_regions = true;
            break;
          }
        }
      }
      if (to_regions || brackets == 0) break;
      brackets &= brackets - 1;
      from = next + 1;
      const size_t at = pos_ + static_cast<size_t>(next);
      switch (p[next]) {
        case '{':
        case '[':
          if (++depth_ > kMaxEventDepth) entry_too_deep_ = true;
          break;
        case '}':
          if (depth_ == 0) {
            entry_unbalanced_ = true;
          } else if (--depth_ == 0 && entry_first_close_ == kNoClose) {
            entry_first_close_ = at;
          }
          break;
        default:  // ']'
          if (depth_ > 0) {
            if (--depth_ == 0 && entry_first_close_ == kNoClose) entry_first_close_ = at;
            break;
          }
          FinishEntry(at, sink);
          pos_ = at + 1;
          top_ = Top::kCommaOrEnd;
          return;
      }
    }
    if (to_regions) continue;
    pos_ += span;
    if (!entry_too_large_ && pos_ - entry_start_ > opt_.max_event_bytes && pos_ > entry_start_) {
      entry_too_large_ = true;  // stop keeping its bytes; drop it at its end
    }
  }
  if (eof_ && pos_ > end_) pos_ = end_;
}

bool JsonTraceParser::TryRegion(EventSink& sink) {
  char* b = buf_.data();
  const size_t s = pos_;
  // Before the end of input, separators only up to the exact scanner's last
  // grid line count: the entries found before a read error stay the same.
  const size_t reach =
      eof_ ? end_ : end_ - static_cast<size_t>((Offset(end_) - events_start_) % kBlock);
  if (reach <= s) return false;
  size_t limit = std::min({reach, s + kMaxRunBytes, s + opt_.max_event_bytes});
  limit = s + OpensBoundedPrefix(b + s, limit - s, static_cast<size_t>(kMaxEventDepth));
  const size_t cut = FindRegionCut(b, s, limit, end_);
  if (cut == 0) {
    exact_until_ = Offset(limit);
    return false;
  }
  // Events go in file order: the batches and entries before the region first.
  if (pipeline_) pipeline_->Drain(sink, counts_);
  if (!pending_.empty()) DecodePending(sink);
  size_t n = 0;
  if (!decoder_.DecodeRegion(b, buf_.size(), s, cut, base_, counts_, pending_events_, n)) {
    exact_until_ = Offset(cut);
    return false;
  }
  for (size_t i = 0; i < n; ++i) sink.OnEvent(pending_events_[i]);
  pos_ = entry_start_ = cut + 1;
  entry_after_comma_ = true;
  return true;
}

void JsonTraceParser::FinishEntry(size_t end, EventSink& sink) {
  const bool too_large = entry_too_large_ || end - entry_start_ > opt_.max_event_bytes;
  const bool too_deep = entry_too_deep_;
  const size_t first_close = entry_first_close_;
  const bool unbalanced = entry_unbalanced_;
  entry_too_large_ = entry_too_deep_ = entry_unbalanced_ = false;
  entry_first_close_ = kNoClose;
  if (too_large) {
    Drop("event_too_large");
    return;
  }
  const char* b = buf_.data();
  size_t s = entry_start_;
  while (s < end && IsJsonSpace(b[s])) ++s;
  if (s == end) {
    // "[]" is an empty array; an empty entry after a comma is a stray comma.
    if (entry_after_comma_) Drop("bad_json");
    return;
  }
  if (b[s] != '{') {
    Drop("not_object");
    return;
  }
  if (too_deep) {
    Drop("too_deep");
    return;
  }
  if (unbalanced) {
    Drop("bad_json");
    return;
  }
  size_t e = end;
  while (e > s && IsJsonSpace(b[e - 1])) --e;
  if (first_close + 1 != e) {
    Drop("bad_json");
    return;
  }
  if (base_.known) {
    pending_.emplace_back(s, e - s);  // decoded in runs: DecodePending or SubmitBatch
    return;
  }
  if (decoder_.Decode(b + s, e - s, buf_.size() - s, base_, counts_, event_) ==
      DecodeOutcome::kEvent) {
    sink.OnEvent(event_);
  }
}

}  // namespace

std::unique_ptr<TraceParser> MakeJsonTraceParser(ParseOptions options) {
  return std::make_unique<JsonTraceParser>(options);
}

}  // namespace profwatch::parse
