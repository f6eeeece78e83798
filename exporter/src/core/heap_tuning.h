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

// Blocks below this come from the heap, not from their own mapping.
inline constexpr size_t kHeapMmapThreshold = size_t{32} << 20;
// Free memory at the top of the heap is returned to the system only beyond
// this much: the daemon keeps at most this over what it last used.
inline constexpr size_t kHeapTrimThreshold = size_t{64} << 20;

// Sets both for the process (glibc; elsewhere a no-op). Returns whether the
// allocator took them. Call once at start, before threads are created.
bool KeepBuffersInHeap();

}  // namespace profwatch
