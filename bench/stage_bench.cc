// stage_bench: one stage of the analysis path over real files, for the
// benchmark harness (bench/run.py) to measure side by side with `analyze`.
//   stage_bench inflate [--inflate zlib|isal] FILE...   decompress only (the floor)
//   stage_bench parse   [--inflate zlib|isal] FILE...   decompress + parse, no aggregation,
//                                                      with the parse options of `analyze`
//   stage_bench ondemand [--inflate zlib|isal] FILE...  decompress + a bare On-Demand pass
// `ondemand` is issue #64's floor of the design: the traceEvents array cut
// into regions of up to 64 KiB after a '}' ',' '{' and each decoded as one
// simdjson document, every entry's fields and args' fields visited, each
// value taken as its raw token (nothing converted, nothing kept). It reads
// compact JSON as tracegen writes it (no whitespace between entries, no
// "},{" inside a string); anything else is an error, not a figure.
// Prints one JSON line: {"mode":..,"json_bytes":..,"raw_bytes":..,"events":..,"seconds":..}.
// Exit 3 on a read/parse error (message on stderr).
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "parse/trace_parser.h"
#include "read/byte_source.h"

namespace {

// The bare On-Demand pass over the entries [b, e) (b[-1] and *e are
// overwritten and restored). False on any simdjson error.
bool WalkRegion(simdjson::ondemand::parser& parser, char* b, char* e, size_t capacity,
                uint64_t& entries, uint64_t& token_bytes) {
  namespace od = simdjson::ondemand;
  auto walk = [&] {
    od::document doc;
    od::array arr;
    if (parser.iterate(b - 1, static_cast<size_t>(e - b) + 2, capacity).get(doc) ||
        doc.get_array().get(arr)) {
      return false;
    }
    for (auto entry : arr) {
      od::object obj;
      if (entry.get_object().get(obj)) return false;
      for (auto field : obj) {
        if (field.error()) return false;
        od::field& f = field.value_unsafe();
        od::object args;
        if (f.key().raw()[0] != 'a' || f.value().get_object().get(args)) {
          token_bytes += f.value().raw_json_token().size();
          continue;
        }
        for (auto arg : args) {
          if (arg.error()) return false;
          token_bytes += arg.value_unsafe().value().raw_json_token().size();
        }
      }
      ++entries;
    }
    return true;
  };
  const char before = b[-1], after = *e;
  b[-1] = '[';
  *e = ']';
  const bool ok = walk();
  b[-1] = before;
  *e = after;
  return ok;
}

// Inflates `src` and walks its traceEvents array region by region. Returns
// the entries walked, or -1 (message on stderr).
int64_t BareOnDemand(profwatch::read::ByteSource& src, uint64_t& json_bytes) {
  constexpr size_t kChunk = 256 << 10, kRegion = 64 << 10;
  std::vector<char> buf(2 * kChunk + kRegion + simdjson::SIMDJSON_PADDING);
  simdjson::ondemand::parser parser;
  size_t begin = 0, end = 0;  // text not walked yet: [begin, end)
  bool in_array = false, eof = false;
  uint64_t entries = 0, token_bytes = 0;
  auto fail = [](const char* why) {
    std::fprintf(stderr, "stage_bench ondemand: %s\n", why);
    return int64_t{-1};
  };
  for (;;) {
    while (!eof && end - begin < kChunk) {
      // The byte before `begin` moves along: WalkRegion borrows it for '['.
      const size_t from = begin > 0 ? begin - 1 : 0;
      std::memmove(buf.data(), buf.data() + from, end - from);
      end -= from;
      begin -= from;
      auto n = src.Read(buf.data() + end, buf.size() - simdjson::SIMDJSON_PADDING - end);
      if (!n) return fail(n.error().ToString().c_str());
      eof = *n == 0;
      end += *n;
      json_bytes += *n;
    }
    const std::string_view text(buf.data() + begin, end - begin);
    if (!in_array) {  // the first entry, after '"traceEvents":['
      const size_t at = text.find("\"traceEvents\":[{");
      if (at == std::string_view::npos || at + 15 > kChunk) return fail("no traceEvents");
      begin += at + 15;
      in_array = true;
      continue;
    }
    // At the end of input the rest of the array, when it fits a region:
    // the entries up to the array's ']'. Else up to kRegion bytes of
    // entries, ending with the last '}' before a ",{".
    const size_t close = eof ? text.rfind(']') : std::string_view::npos;
    const bool last = close != std::string_view::npos && close <= kRegion;
    const size_t cut =
        last ? close : text.substr(0, std::min(text.size(), kRegion)).rfind("},{") + 1;
    if (cut == 0 || (last && close == 0)) return fail("no entry boundary within a region");
    char* b = buf.data() + begin;
    if (!WalkRegion(parser, b, b + cut, buf.size() - begin + 1, entries, token_bytes)) {
      return fail("simdjson rejected a region");
    }
    if (last) break;
    begin += cut + 1;  // past the ',': the next entry's '{'
  }
  if (token_bytes == 0) return fail("no values");
  return static_cast<int64_t>(entries);
}

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
    std::fprintf(stderr,
                 "usage: stage_bench inflate|parse|ondemand [--inflate zlib|isal] FILE...\n");
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
  // As analysis/analyze.cc parses: the exact dur_ps only, no double.
  parse::ParseOptions options;
  options.dur_as_double = false;
  auto parser = parse::MakeJsonTraceParser(options);
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
    } else if (mode == "ondemand") {
      const int64_t n = BareOnDemand(**src, json_bytes);
      if (n < 0) return 3;
      events += static_cast<uint64_t>(n);
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
