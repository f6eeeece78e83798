// The gzip CRC-32 (IEEE 802.3, reflected; zlib's crc32()) of a byte run.
//
// PrefetchSource checks each zlib member's CRC on the parsing thread. With
// ISA-L built in, its carry-less-multiply CRC is used for that, for speed
// over zlib's table-driven one (figures: docs/performance.md); without ISA-L it
// is zlib's. Either gives the same value, whatever the backend inflating.
#pragma once

#include <cstddef>
#include <cstdint>

namespace profwatch::read {

// Continues `crc` (0 for an empty run) over `len` bytes at `data`:
// GzipCrc32(GzipCrc32(0, a), b) == GzipCrc32(0, a + b).
uint32_t GzipCrc32(uint32_t crc, const void* data, size_t len);

// Which implementation GzipCrc32 uses: "isal" or "zlib".
const char* GzipCrc32Implementation();

}  // namespace profwatch::read
