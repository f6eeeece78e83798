// Fuzzes the gzip layer: the input is fed through MemorySource + gzip source
// with every compiled-in backend; they must agree (same success or failure,
// same bytes on success, same error class on failure) and never crash. Also
// exercises sniffing, and the read-ahead and check sources, which take
// zlib's CRC-32 and length checks over (HandOverGzipChecks): they must end
// exactly as the gzip layer does on its own (same error code and message).
//
// One tolerated difference: on garbage deflate data cut short, one library
// may reject a malformed Huffman table at once (kCorrupt) while the other
// reads on and runs out of input first (kTruncated). ISA-L is stricter about
// code-length sets than zlib; no input that a writer could produce while
// still writing hits this (see corpus/gzip/lazy_vs_strict_huffman.gz).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "read/byte_source.h"
#include "read/gzip_check.h"
#include "read/prefetch_source.h"

namespace {

using profwatch::ErrorCode;
using profwatch::read::InflateBackend;

constexpr size_t kMaxOutput = 32 << 20;  // stop gzip bombs early

struct Outcome {
  bool ok = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string context;
  std::string out;
};

Outcome Run(std::unique_ptr<profwatch::read::ByteSource> src, size_t chunk) {
  Outcome o;
  std::vector<char> buf(chunk);
  while (o.out.size() < kMaxOutput) {
    auto got = src->Read(buf.data(), buf.size());
    if (!got) {
      o.code = got.error().code;
      o.context = got.error().context;
      return o;
    }
    if (*got == 0) break;
    o.out.append(buf.data(), *got);
  }
  o.ok = true;
  return o;
}

Outcome Inflate(const std::string& data, InflateBackend backend, size_t inner_chunk,
                size_t outer_chunk) {
  auto mem = std::make_unique<profwatch::read::MemorySource>(data, "fuzz");
  mem->SetMaxChunk(inner_chunk);
  return Run(profwatch::read::MakeGzipSource(std::move(mem), backend), outer_chunk);
}

Outcome InflateAhead(const std::string& data, size_t inner_chunk, size_t outer_chunk) {
  auto mem = std::make_unique<profwatch::read::MemorySource>(data, "fuzz");
  mem->SetMaxChunk(inner_chunk);
  return Run(profwatch::read::MakePrefetchSource(
                 profwatch::read::MakeGzipSource(std::move(mem), InflateBackend::kZlib), 4096, 2),
             outer_chunk);
}

Outcome InflateChecked(const std::string& data, size_t inner_chunk, size_t outer_chunk) {
  auto mem = std::make_unique<profwatch::read::MemorySource>(data, "fuzz");
  mem->SetMaxChunk(inner_chunk);
  return Run(profwatch::read::MakeGzipCheckSource(
                 profwatch::read::MakeGzipSource(std::move(mem), InflateBackend::kZlib)),
             outer_chunk);
}

void Check(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "fuzz_gzip: backends disagree: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  // Chunk sizes vary with the input so boundaries get exercised too.
  size_t inner = size > 0 ? 1 + data[size / 2] % 64 : 1;
  Outcome z = Inflate(input, InflateBackend::kZlib, SIZE_MAX, 65536);
  Outcome z_small = Inflate(input, InflateBackend::kZlib, inner, 7);
  Check(z.ok == z_small.ok && z.code == z_small.code, "zlib outcome depends on chunking");
  Check(z.out.substr(0, kMaxOutput) == z_small.out.substr(0, kMaxOutput) || !z.ok,
        "zlib bytes depend on chunking");
  // The read-ahead source checks CRC-32 and length itself; same inner reads,
  // so the same error message (offset) too. Before an error it may deliver
  // more of the member (up to its end) than zlib's own check lets through.
  Outcome ahead = InflateAhead(input, inner, 4096);
  Outcome z_same_reads = Inflate(input, InflateBackend::kZlib, inner, 4096);
  Check(ahead.ok == z_same_reads.ok && ahead.code == z_same_reads.code,
        "read-ahead outcome (checks handed over)");
  Check(ahead.ok || ahead.context == z_same_reads.context, "read-ahead error message");
  Check(!ahead.ok || ahead.out.substr(0, kMaxOutput) == z_same_reads.out.substr(0, kMaxOutput),
        "read-ahead bytes");
  Outcome checked = InflateChecked(input, inner, 4096);
  Check(checked.ok == z_same_reads.ok && checked.code == z_same_reads.code,
        "checked outcome (checks handed over)");
  Check(checked.ok || checked.context == z_same_reads.context, "checked error message");
  Check(!checked.ok || checked.out.substr(0, kMaxOutput) == z_same_reads.out.substr(0, kMaxOutput),
        "checked bytes");
  if (profwatch::read::IsalAvailable()) {
    Outcome i = Inflate(input, InflateBackend::kIsal, inner, 4096);
    Check(z.ok == i.ok, "success/failure");
    if (z.ok) {
      Check(z.out == i.out, "output bytes");
    } else {
      bool lazy_vs_strict = (z.code == ErrorCode::kTruncated && i.code == ErrorCode::kCorrupt) ||
                            (z.code == ErrorCode::kCorrupt && i.code == ErrorCode::kTruncated);
      Check(z.code == i.code || lazy_vs_strict, "error class");
    }
  }
  auto sniffed =
      profwatch::read::SniffAndWrap(std::make_unique<profwatch::read::MemorySource>(input));
  if (sniffed) Run(std::move(*sniffed), 4096);
  return 0;
}
