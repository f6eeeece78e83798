// PrefetchSource: runs the layers below (file read + inflate) on a producer
// thread that fills a small ring of fixed buffers ahead of the reader, so
// inflating the next megabytes overlaps parsing the current ones.
//
// Same bytes, same outcome: the reader sees exactly the inner source's byte
// sequence, then its EOF or its error (same code and message); after either,
// every later Read repeats it. Only how the bytes are split between Read
// calls may differ. RawBytesRead() is the inner count as of the end of the
// buffer being read (exact at EOF or error). Name() is the inner name.
//
// With a WorkShare, the producer runs the reader's offered chores while the
// ring is full (the reader is behind) rather than sleeping, and returns to
// inflating as soon as a buffer frees.
//
// Over a zlib gzip stack, the CRC-32 and length of each gzip member are
// checked on the reader's thread (ByteSource::HandOverGzipChecks), as it
// takes each buffer: inflating is the one stage nothing else can do, and
// the reader has time to spare there (docs/performance.md: what it buys).
// The end stays the same (code, message, RawBytesRead); only before a CRC or
// length mismatch may the reader get the rest of the failing member's bytes,
// which zlib's own check would have held back.
//
// Memory: `buffers` x `buffer_bytes`, fixed. Thread-safety: like any
// ByteSource, one reader thread; the producer thread is private. Destroying
// the source early stops the producer (after at most one inner Read) and
// joins it; the inner source is destroyed with it.
#pragma once

#include <cstddef>
#include <memory>

#include "core/work_share.h"
#include "read/byte_source.h"

namespace profwatch::read {

// Returns `inner` itself when a thread cannot be started (the caller then
// reads synchronously; nothing else changes). REQUIRES: buffers >= 2,
// buffer_bytes > 0.
std::unique_ptr<ByteSource> MakePrefetchSource(std::unique_ptr<ByteSource> inner,
                                               size_t buffer_bytes = size_t{1} << 20,
                                               size_t buffers = 4,
                                               std::shared_ptr<WorkShare> share = nullptr);

}  // namespace profwatch::read
