// Checking gzip members' CRC-32 and length outside the gzip layer.
//
// A zlib gzip stack can leave those checks to whoever reads its bytes
// (ByteSource::HandOverGzipChecks): zlib's own CRC-32 is table-driven and
// slower than ISA-L's carry-less-multiply one (read/gzip_crc.h; the figures
// are in docs/performance.md). GzipMemberChecker applies the handed-over
// checks to the bytes as they are read; the read-ahead source runs it on the
// parsing thread, MakeGzipCheckSource on the reader's own.
//
// Same end as the gzip layer checking itself (code, message, RawBytesRead);
// only before a CRC or length mismatch may the reader get the rest of the
// failing member's bytes, which zlib's own check would have held back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "read/byte_source.h"

namespace profwatch::read {

class GzipMemberChecker {
 public:
  // `data[0, len)` are the stream's bytes after its first `out_before`, and
  // `checks` those of the members that end in them (from TakeGzipChecks,
  // taken after the reads that brought them). On a mismatch, cuts `len` at
  // the failing member's end and ends there: `error` is the gzip layer's
  // message, `raw_after` its RawBytesRead, `eof` false. For input cut inside
  // a trailer (`error` already set, truncated), a CRC-32 that arrived and is
  // wrong makes the error corrupt, as zlib does.
  void Check(const char* data, uint64_t out_before, const std::vector<GzipMemberCheck>& checks,
             size_t& len, bool& eof, std::optional<Error>& error, uint64_t& raw_after);

 private:
  uint32_t crc_ = 0;  // CRC-32 of the current member's bytes so far
  uint64_t len_ = 0;  // ... and their count
};

// `inner` with the checks of its gzip members done by this source, on the
// caller's thread, with GzipCrc32. Returns `inner` itself when it does not
// hand them over (not a zlib gzip stack, or already read from).
std::unique_ptr<ByteSource> MakeGzipCheckSource(std::unique_ptr<ByteSource> inner);

}  // namespace profwatch::read
