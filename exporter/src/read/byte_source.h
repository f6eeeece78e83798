// ByteSource: a pull stream of bytes. File and gzip sources stack; memory is
// bounded by the caller's buffer. Not thread-safe: one reader at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace profwatch::read {

// The integrity check of one gzip member, handed from the gzip layer to the
// thread that consumes its bytes (see ByteSource::HandOverGzipChecks).
struct GzipMemberCheck {
  uint64_t end = 0;      // output offset just past the member's bytes
  bool complete = true;  // false: the input ended in the trailer, after its CRC-32
  uint32_t crc = 0;      // CRC-32 of the member's bytes, from the trailer
  uint32_t isize = 0;    // their length mod 2^32, from the trailer (complete only)
  // The errors a mismatch ends the stream with, worded as the gzip layer's
  // own, and RawBytesRead() as that layer would have reported it then.
  std::string crc_error;
  uint64_t crc_error_raw = 0;
  std::string length_error;
  uint64_t length_error_raw = 0;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // Asks a gzip stack to leave the CRC-32 and length checks of its members to
  // the reader of its bytes (read/prefetch_source: the read-ahead thread then
  // only inflates, and the parsing thread checks). True when this source (or
  // the one it wraps) is such a stack and agreed; it then still ends with the
  // same errors, except that a mismatch is not reported by its Read: the
  // reader gets a GzipMemberCheck from TakeGzipChecks and must apply it. Call
  // before the first Read.
  virtual bool HandOverGzipChecks() { return false; }
  // Appends the checks of the members that ended in the bytes returned so
  // far, in order (after HandOverGzipChecks returned true).
  virtual void TakeGzipChecks(std::vector<GzipMemberCheck>& /*out*/) {}

  // Reads up to `n` bytes into `buf` (REQUIRES: n > 0). Returns the count
  // read; 0 means clean EOF. Errors: kIo (read failed), kTruncated (stream
  // ended before its end marker, e.g. a gzip member without its trailer),
  // kCorrupt (bytes are not valid for this layer). After an error or EOF
  // further calls return the same outcome.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;

  // Bytes consumed from the underlying file so far (compressed bytes for a
  // gzip stack). Feeds profwatch_trace_bytes_read_total.
  virtual uint64_t RawBytesRead() const = 0;

  // Human-readable origin for error messages (usually the path).
  virtual std::string_view Name() const = 0;
};

// In-memory source for tests and fuzzers. If `fail_at` is set, a Read that
// would cross that offset returns `fail_error` instead (injectable errors):
// the failing Read delivers no bytes, and every later Read fails the same way.
// FailAt(size()) replaces EOF with the error.
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string data, std::string name = "<memory>");
  void FailAt(size_t offset, Error error);
  // Makes every Read return at most `max_chunk` bytes (exercises boundaries).
  void SetMaxChunk(size_t max_chunk) { max_chunk_ = max_chunk; }

  Result<size_t> Read(char* buf, size_t n) override;
  uint64_t RawBytesRead() const override { return pos_; }
  std::string_view Name() const override { return name_; }

 private:
  std::string data_;
  std::string name_;
  size_t pos_ = 0;
  size_t max_chunk_ = static_cast<size_t>(-1);
  bool has_fail_ = false;
  size_t fail_at_ = 0;
  bool failed_ = false;  // the injected error fired: every later Read repeats it
  Error fail_error_;
};

// Directories a file must lie under to be read: real paths (symlinks
// resolved, no trailing '/'). Null: anywhere.
using Confinement = std::vector<std::string>;

// Opens `path` read-only (O_CLOEXEC | O_NONBLOCK) and returns the descriptor,
// which the caller closes. With `confine_to`, the real path of the opened
// file, as the kernel names the descriptor (/proc/self/fd), must lie under
// one of its directories, else kPermission: the check is on what was opened,
// so a path swapped for a link after any earlier check cannot escape it.
// kNotFound (ENOENT, ENOTDIR), kPermission (EACCES, EPERM) or kIo on failure.
Result<int> OpenReadOnly(const std::string& path, const Confinement* confine_to = nullptr);

// True when the real path `real` lies under one of `dirs` (real paths).
bool PathWithin(const std::string& real, const Confinement& dirs);

// Opens a regular file for reading (O_CLOEXEC; reads retry on EINTR), confined
// as OpenReadOnly says. kNotFound (ENOENT, ENOTDIR), kPermission (EACCES,
// EPERM, or outside `confine_to`) or kIo on failure; kUnsupported for a
// directory or other non-regular file (a FIFO is refused without blocking).
// Messages name the path.
Result<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path,
                                                   const Confinement* confine_to = nullptr);

enum class InflateBackend { kZlib, kIsal };
// True when the ISA-L backend was compiled in (Debian libisal-dev present).
bool IsalAvailable();
// What analyze and serve use unless told otherwise: ISA-L where it is built
// in (the same bytes and error classes as zlib, and faster: see
// docs/performance.md), else zlib (-DPROFWATCH_WITH_ISAL=OFF, no libisal).
InflateBackend DefaultInflateBackend();
// "isal" or "zlib".
std::string_view InflateBackendName(InflateBackend backend);
// Parses "zlib" / "isal"; kConfig on anything else or isal when unavailable.
Result<InflateBackend> ParseInflateBackend(std::string_view name);

// Wraps `inner` (gzip bytes, possibly several concatenated members) and yields
// the inflated bytes. A stream that ends mid-member (or an empty input) is
// kTruncated; bad magic/header/data/CRC is kCorrupt. After a complete member,
// zero bytes up to EOF are accepted as padding; any other trailing bytes are
// kCorrupt (gzip(1) would only warn). Error contexts name the source and the
// compressed byte offset. Both backends give the same bytes and the same error
// class on every input (the fuzz target checks it; the one tolerated
// difference is documented in tests/fuzz/fuzz_gzip.cc). The input buffer is
// a fixed 256 KiB; kIsal falls back to zlib when ISA-L is not compiled in.
std::unique_ptr<ByteSource> MakeGzipSource(std::unique_ptr<ByteSource> inner,
                                           InflateBackend backend = InflateBackend::kZlib);

// Returns `prefix` (bytes already pulled from `inner`, e.g. for sniffing)
// first, then the rest of `inner`. RawBytesRead is `inner`'s.
std::unique_ptr<ByteSource> MakeReplaySource(std::string prefix, std::unique_ptr<ByteSource> inner);

// Opens `path`, sniffs the first bytes (gzip magic 1f 8b) and returns either a
// gzip stack or the plain file: the content decides, not the file name.
Result<std::unique_ptr<ByteSource>> OpenTraceSource(const std::string& path,
                                                    InflateBackend backend = InflateBackend::kZlib,
                                                    const Confinement* confine_to = nullptr);

// Same sniffing for an arbitrary source (tests, fuzzers). The peeked bytes are
// replayed; RawBytesRead() passes through. An empty input gives the plain
// source (0 bytes at EOF: the parser reports the empty file); a lone 0x1f byte
// is taken as a gzip stream still being written (kTruncated on Read). An error
// while peeking is returned as is.
Result<std::unique_ptr<ByteSource>> SniffAndWrap(std::unique_ptr<ByteSource> raw,
                                                 InflateBackend backend = InflateBackend::kZlib);

}  // namespace profwatch::read
