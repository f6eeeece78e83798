// Fuzzes the streaming JSON trace parser: the input is the decompressed trace
// bytes; the first byte picks the read size (1..64) so event boundaries land
// everywhere, and small event/header limits exercise the drop paths. A
// custom mutator adds whitespace between tokens (JSON allows any there, and
// older PyTorch pretty-prints its traces) besides libFuzzer's own mutations.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "aggregate/bytes.h"
#include "aggregate/flops.h"
#include "parse/op_shape_reader.h"
#include "parse/trace_parser.h"
#include "read/byte_source.h"

namespace {

class FuzzSource final : public profwatch::read::ByteSource {
 public:
  FuzzSource(const uint8_t* data, size_t size, size_t max_chunk)
      : data_(data), size_(size), max_chunk_(max_chunk) {}
  profwatch::Result<size_t> Read(char* buf, size_t n) override {
    const size_t take = std::min({n, max_chunk_, size_ - pos_});
    if (take > 0) std::memcpy(buf, data_ + pos_, take);
    pos_ += take;
    return take;
  }
  uint64_t RawBytesRead() const override { return pos_; }
  std::string_view Name() const override { return "<fuzz>"; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t max_chunk_;
  size_t pos_ = 0;
};

// Hashes every field of every event in order (FNV-1a), touching every view
// so sanitizers catch dangling ones.
class HashingSink final : public profwatch::parse::EventSink {
 public:
  void OnEvent(const profwatch::parse::TraceEvent& e) override {
    for (std::string_view s : {e.name, e.cat, e.pid.str, e.tid.str, e.args_name, e.args_hlo_module,
                               e.args_input_dims, e.args_concrete_inputs, e.args_input_type}) {
      Mix(s.size());
      for (char c : s) Mix(static_cast<unsigned char>(c));
    }
    for (int64_t v : {int64_t{e.ph}, int64_t{e.has_name}, static_cast<int64_t>(e.pid.kind),
                      e.pid.num, static_cast<int64_t>(e.tid.kind), e.tid.num, int64_t{e.has_ts},
                      e.ts_ps, int64_t{e.has_dur}, int64_t{e.dur_exact}, e.dur_ps,
                      int64_t{e.has_args_device}, e.args_device, int64_t{e.has_args_stream},
                      e.args_stream, int64_t{e.has_args_external_id}, e.args_external_id}) {
      Mix(static_cast<uint64_t>(v));
    }
    // Operator shapes as the aggregator reads them (never trusted), through
    // the FLOP and byte formulas: a known count is never negative.
    const profwatch::parse::OpShapes shapes =
        shapes_.Read(e.args_input_dims, e.args_concrete_inputs, e.args_input_type);
    if (auto f = profwatch::aggregate::TorchOpFlops(e.name, shapes)) {
      if (f->known && f->flops < 0) __builtin_trap();
      Mix(static_cast<uint64_t>(f->flops));
    }
    if (auto b = profwatch::aggregate::TorchOpBytes(e.name, shapes)) {
      if (b->known && b->bytes < 0) __builtin_trap();
      Mix(static_cast<uint64_t>(b->bytes));
    }
  }
  uint64_t hash = 1469598103934665603ULL;

 private:
  void Mix(uint64_t v) { hash = (hash ^ v) * 1099511628211ULL; }
  profwatch::parse::OpShapeReader shapes_;
};

struct Run {
  uint64_t hash = 0;
  bool ok = false;
  int code = 0;
  profwatch::parse::ParseSummary summary;
};

Run ParseWith(const uint8_t* data, size_t size, size_t read_chunk,
              profwatch::parse::ParseOptions options) {
  FuzzSource source(data, size, read_chunk);
  HashingSink sink;
  auto result = profwatch::parse::MakeJsonTraceParser(options)->Parse(source, sink);
  Run r;
  r.hash = sink.hash;
  r.ok = result.has_value();
  if (result) {
    r.summary = *result;
  } else {
    r.code = static_cast<int>(result.error().code);
  }
  return r;
}

bool Same(const Run& a, const Run& b) {
  if (a.hash != b.hash || a.ok != b.ok || a.code != b.code) return false;
  if (!a.ok) return true;
  const auto &x = a.summary, &y = b.summary;
  return x.events == y.events && x.empty_events == y.empty_events &&
         x.metadata_events == y.metadata_events && x.drops == y.drops && x.schema == y.schema &&
         x.time_base_us == y.time_base_us && x.json_bytes == y.json_bytes;
}

}  // namespace

// libFuzzer's own mutation; absent (null) where the target is linked with the
// replay driver instead of libFuzzer.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size)
    __attribute__((weak));

// Every other mutation puts a run of JSON whitespace after a structural
// character (`{ [ , :`) or before a closing one, outside strings: the same
// tokens spaced otherwise. The first byte (the read options) is kept.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  uint64_t r = seed * 0x9e3779b97f4a7c15ULL + 1;
  auto next = [&r] {
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    return r;
  };
  if ((next() & 1) == 0 && LLVMFuzzerMutate != nullptr)
    return LLVMFuzzerMutate(data, size, max_size);
  std::vector<size_t> places;  // insert before these offsets
  bool quoted = false;
  for (size_t i = 1; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (quoted) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    if (c == '}' || c == ']') places.push_back(i);
    if (c == '{' || c == '[' || c == ',' || c == ':') places.push_back(i + 1);
  }
  const size_t run = 1 + next() % 6;
  if (places.empty() || size + run > max_size) {
    return LLVMFuzzerMutate != nullptr ? LLVMFuzzerMutate(data, size, max_size) : size;
  }
  const size_t at = places[next() % places.size()];
  std::memmove(data + at + run, data + at, size - at);
  static constexpr char kSpace[] = {' ', '\n', '\t', '\r'};
  for (size_t k = 0; k < run; ++k) data[at + k] = static_cast<uint8_t>(kSpace[next() % 4]);
  return size + run;
}

// Decoding every entry alone, decoding back-to-back entries in runs, and
// decoding in batches on a helper thread must agree event for event, on any
// bytes.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  profwatch::parse::ParseOptions options;
  options.chunk_bytes = 1 + data[0] % 64;
  options.max_event_bytes = 4096;
  options.max_header_value_bytes = 1024;
  const size_t read_chunk = 1 + (data[0] / 64) * 17;
  options.decode_runs = false;  // the reference: every entry decoded alone
  const Run alone = ParseWith(data + 1, size - 1, read_chunk, options);
  options.decode_runs = true;
  if (!Same(alone, ParseWith(data + 1, size - 1, read_chunk, options))) __builtin_trap();
  options.decode_threads = 1;
  if (!Same(alone, ParseWith(data + 1, size - 1, read_chunk, options))) __builtin_trap();
  return 0;
}
