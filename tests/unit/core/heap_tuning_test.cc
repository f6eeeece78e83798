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

// A buffer of the sizes the analysis frees per file (a 528 KiB decode batch)
// is neither mapped on its own nor, once freed, handed back to the system; a
// block beyond the threshold (a long interval list) still is mapped.
TEST(HeapTuningTest, BuffersComeFromTheHeapAndStayThere) {
  ASSERT_TRUE(KeepBuffersInHeap());
  const size_t buffer = size_t{528} << 10;
  ASSERT_LT(buffer, kHeapMmapThreshold);
  const struct mallinfo2 before = mallinfo2();
  auto block = std::make_unique<char[]>(buffer);
  std::memset(block.get(), 1, buffer);
  const struct mallinfo2 held = mallinfo2();
  EXPECT_EQ(held.hblks, before.hblks) << "the buffer got a mapping of its own";
  EXPECT_GE(held.uordblks, before.uordblks + buffer);
  block.reset();
  EXPECT_EQ(mallinfo2().arena, held.arena) << "the freed buffer was trimmed off the heap";

  auto list = std::make_unique<char[]>(kHeapMmapThreshold * 2);
  EXPECT_EQ(mallinfo2().hblks, before.hblks + 1) << "a block past the threshold is mapped";
}

#else

TEST(HeapTuningTest, BuffersComeFromTheHeapAndStayThere) {
  // Sanitizers replace malloc (glibc's mallopt then has no effect to observe,
  // and ASan's returns 0), and other C libraries have no mallopt.
  KeepBuffersInHeap();
  GTEST_SKIP() << "not glibc's own allocator: nothing to observe";
}

#endif

}  // namespace
}  // namespace profwatch
