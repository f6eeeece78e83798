// Fuzzes the streaming JSON trace parser: the input is the decompressed trace
// bytes; the first byte picks the read size (1..64) so event boundaries land
// everywhere, and small event/header limits exercise the drop paths.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

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

class CheckingSink final : public profwatch::parse::EventSink {
 public:
  void OnEvent(const profwatch::parse::TraceEvent& e) override {
    // Touch every view so sanitizers catch dangling ones.
    for (std::string_view s : {e.name, e.cat, e.pid.str, e.tid.str, e.args_name}) {
      for (char c : s) checksum_ += static_cast<unsigned char>(c);
    }
    checksum_ += static_cast<uint64_t>(e.ts_ps) ^ static_cast<uint64_t>(e.dur_ps);
  }
  uint64_t checksum_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  profwatch::parse::ParseOptions options;
  options.chunk_bytes = chunk;
  options.max_event_bytes = 4096;
  options.max_header_value_bytes = 1024;
  FuzzSource source(data + 1, size - 1, 1 + (data[0] / 64) * 17);
  CheckingSink sink;
  auto parser = profwatch::parse::MakeJsonTraceParser(options);
  auto result = parser->Parse(source, sink);
  if (result && result->events > 0 && sink.checksum_ == 1) return 1;  // keep the sink alive
  return 0;
}
