#include "core/heap_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

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

}  // namespace profwatch
