#include "core/heap_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>

namespace profwatch {

bool KeepBuffersInHeap() {
#if defined(__GLIBC__)
  // Setting either disables glibc's own threshold adjustment, so set both.
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapMmapThreshold)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapTrimThreshold)) == 1;
#else
  return false;
#endif
}

bool BackHeapWithHugePages() {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  // The PMD size of x86-64 and of arm64 with 4 KiB pages. Elsewhere the
  // aligned range below is empty or the advice fails: no harm either way.
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  constexpr size_t kDefaultTopPad = size_t{128} << 10;  // glibc's, per mallopt(3)
  // With M_TOP_PAD, glibc's next heap growth takes that much beyond the
  // request. Blocks a little larger than the free top chunk (and below the
  // mmap threshold) force that growth now; freeing them leaves the whole
  // reserve as the top chunk, kept (below the trim threshold).
  if (mallopt(M_TOP_PAD, static_cast<int>(kHugePageHeapBytes)) != 1) return false;
  constexpr size_t kStep = size_t{64} << 10;
  const size_t arena_before = mallinfo2().arena;
  void* held[16];
  size_t n = 0;
  bool grew = false;
  while (n < std::size(held) && !grew) {
    const size_t want = std::min(mallinfo2().keepcost + kStep, kHeapMmapThreshold - kStep);
    held[n] = std::malloc(want);
    if (held[n] == nullptr) break;
    ++n;
    grew = mallinfo2().arena > arena_before;
  }
  for (size_t i = 0; i < n; ++i) std::free(held[i]);
  mallopt(M_TOP_PAD, static_cast<int>(kDefaultTopPad));
  // The main arena is the brk heap: [break - arena bytes, break).
  const auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  const size_t arena = mallinfo2().arena;
  if (!grew || end == static_cast<uintptr_t>(-1) || arena > end) return false;
  const uintptr_t from = (end - arena + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t to = end & ~(kHuge - 1);
  if (to <= from) return false;
  return madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE) == 0;
#else
  return false;
#endif
}

}  // namespace profwatch
