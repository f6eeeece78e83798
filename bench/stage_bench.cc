// stage_bench: one stage of the analysis path over real files, for the
// benchmark harness (bench/run.py) to measure side by side with `analyze`.
//   stage_bench inflate [--inflate zlib|isal] FILE...   decompress only (the floor)
//   stage_bench parse   [--inflate zlib|isal] FILE...   decompress + parse, no aggregation
// Prints one JSON line: {"mode":..,"json_bytes":..,"raw_bytes":..,"events":..,"seconds":..}.
// Exit 3 on a read/parse error (message on stderr).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "parse/trace_parser.h"
#include "read/byte_source.h"

namespace {

class NullSink final : public profwatch::parse::EventSink {
 public:
  void OnEvent(const profwatch::parse::TraceEvent& e) override {
    ++events;
    checksum += e.dur_ps;
  }
  uint64_t events = 0;
  int64_t checksum = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace profwatch;
  if (argc < 3) {
    std::fprintf(stderr, "usage: stage_bench inflate|parse [--inflate zlib|isal] FILE...\n");
    return 2;
  }
  std::string mode = argv[1];
  read::InflateBackend backend = read::InflateBackend::kZlib;
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--inflate") == 0 && i + 1 < argc) {
      auto b = read::ParseInflateBackend(argv[++i]);
      if (!b) {
        std::fprintf(stderr, "%s\n", b.error().ToString().c_str());
        return 2;
      }
      backend = *b;
    } else {
      files.push_back(argv[i]);
    }
  }
  auto start = std::chrono::steady_clock::now();
  uint64_t json_bytes = 0, raw_bytes = 0, events = 0;
  std::vector<char> buf(1 << 20);
  auto parser = parse::MakeJsonTraceParser();
  for (const auto& f : files) {
    auto src = read::OpenTraceSource(f, backend);
    if (!src) {
      std::fprintf(stderr, "%s\n", src.error().ToString().c_str());
      return 3;
    }
    if (mode == "inflate") {
      for (;;) {
        auto n = (*src)->Read(buf.data(), buf.size());
        if (!n) {
          std::fprintf(stderr, "%s\n", n.error().ToString().c_str());
          return 3;
        }
        if (*n == 0) break;
        json_bytes += *n;
      }
    } else if (mode == "parse") {
      NullSink sink;
      auto summary = parser->Parse(**src, sink);
      if (!summary) {
        std::fprintf(stderr, "%s\n", summary.error().ToString().c_str());
        return 3;
      }
      json_bytes += summary->json_bytes;
      events += sink.events;
    } else {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
    raw_bytes += (*src)->RawBytesRead();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "{\"mode\":\"%s\",\"json_bytes\":%llu,\"raw_bytes\":%llu,\"events\":%llu,\"seconds\":%.6f}\n",
      mode.c_str(), static_cast<unsigned long long>(json_bytes),
      static_cast<unsigned long long>(raw_bytes), static_cast<unsigned long long>(events), seconds);
  return 0;
}
