#include "core/heap_tuning.h"

#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstring>
#include <memory>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PROFWATCH_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PROFWATCH_SANITIZER_MALLOC 1
#endif
#endif

namespace profwatch {
namespace {

#if defined(__GLIBC__) && !defined(PROFWATCH_SANITIZER_MALLOC)

// A buffer of the sizes the analysis frees per file (a 528 KiB decode batch,
// a 4 MiB outsized-event buffer) is neither mapped on its own nor, once
// freed, handed back to the system.
TEST(HeapTuningTest, BuffersComeFromTheHeapAndStayThere) {
  ASSERT_TRUE(KeepBuffersInHeap());
  for (size_t size : {size_t{528} << 10, size_t{4} << 20}) {
    const struct mallinfo2 before = mallinfo2();
    auto block = std::make_unique<char[]>(size);
    std::memset(block.get(), 1, size);
    const struct mallinfo2 held = mallinfo2();
    EXPECT_EQ(held.hblks, before.hblks) << size << " bytes got a mapping of their own";
    EXPECT_GE(held.uordblks, before.uordblks + size);
    block.reset();
    const struct mallinfo2 after = mallinfo2();
    EXPECT_EQ(after.arena, held.arena) << size << " bytes were trimmed off the heap";
  }
}

#else

TEST(HeapTuningTest, OnlyGlibcsOwnAllocatorTakesTheSettings) {
  // Sanitizers replace malloc (and ignore mallopt); other C libraries lack it.
  EXPECT_FALSE(KeepBuffersInHeap());
}

#endif

}  // namespace
}  // namespace profwatch
