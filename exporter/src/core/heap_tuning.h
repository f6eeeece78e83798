// Keeps the per-file buffers of an analysis in the heap between files.
//
// glibc serves an allocation above its mmap threshold (128 KiB at start) with
// mmap and hands it back with munmap when freed. An analysis frees its read
// ring, parser buffers and decode batches (~6 MB of 256-528 KiB blocks) at the
// end of every file: measured on the 1e5-event benchmark file, that teardown
// took 0.6 ms of a 28 ms analysis (page freeing, and TLB shootdowns to the CPU
// of the read-ahead thread still alive), and the next file's buffers fault
// their pages in again. From the heap they are reused instead.
#pragma once

#include <cstddef>

namespace profwatch {

// Blocks below this come from the heap. Larger ones (interval lists growing
// towards 16 MiB) keep a mapping of their own, which goes back to the system
// as soon as they grow or are freed: with a 32 MiB threshold the old copies
// stayed in the heap and the 1e7-event file peaked at 48-50 MB instead of 39.
inline constexpr size_t kHeapMmapThreshold = size_t{1} << 20;
// Free memory at the top of the heap is returned to the system only beyond
// this much: the daemon keeps at most this over what it last used.
inline constexpr size_t kHeapTrimThreshold = size_t{16} << 20;

// Sets both for the process (glibc; elsewhere a no-op). Returns whether the
// allocator took them. Call once at start, before threads are created.
bool KeepBuffersInHeap();

// For one-shot runs (`analyze`, `compare`, the benchmark's stage programs):
// grows the heap once by this much and asks for transparent huge pages on it
// (madvise MADV_HUGEPAGE, which Debian's default THP mode "madvise" honours).
// A first touch of a 4 KiB page costs ~2.5 us in a VM; an analysis of the
// 1e5-event benchmark file touched ~1,400 more pages than the inflate floor,
// ~3.5 ms of CPU, and with huge pages ~100. Below kHeapTrimThreshold so that
// frees never trim the reserve off. Not for the daemon: it would hold the
// reserve's touched huge pages for good, and a huge-page fault may compact
// memory on a host whose memory is fragmented.
inline constexpr size_t kHugePageHeapBytes = size_t{12} << 20;

// Call after KeepBuffersInHeap, before threads are created. Returns whether
// the advice was taken for at least one huge page (false under sanitizers, off
// glibc, or without THP in the kernel); either way allocation works as before.
bool BackHeapWithHugePages();

}  // namespace profwatch
