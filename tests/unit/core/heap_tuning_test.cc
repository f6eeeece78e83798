#include "core/heap_tuning.h"

#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

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

// The VmFlags of the mapping holding `addr`, from /proc/self/smaps.
std::string VmFlagsAt(uintptr_t addr) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= addr && addr < to;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool KernelHasTransparentHugePages() {
  struct stat st;
  return stat("/sys/kernel/mm/transparent_hugepage/enabled", &st) == 0;
}

// The heap grows by the reserve at once, the kernel marks its aligned middle
// for huge pages ("hg"), and a block freed later does not trim the reserve
// off (it stays below the trim threshold).
TEST(HeapTuningTest, ReserveIsAdvisedForHugePagesAndKept) {
  ASSERT_TRUE(KeepBuffersInHeap());
  ASSERT_LT(kHugePageHeapBytes, kHeapTrimThreshold);
  if (!KernelHasTransparentHugePages()) {
    EXPECT_FALSE(BackHeapWithHugePages());
    GTEST_SKIP() << "kernel without transparent huge pages: the advice is refused";
  }
  ASSERT_TRUE(BackHeapWithHugePages());
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(after.arena, kHugePageHeapBytes);
  EXPECT_GE(after.keepcost, kHugePageHeapBytes / 2) << "the reserve is not the free top chunk";
  const auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  const uintptr_t middle = end - kHugePageHeapBytes / 2;
  EXPECT_NE(VmFlagsAt(middle).find(" hg"), std::string::npos) << VmFlagsAt(middle);

  auto block = std::make_unique<char[]>(size_t{600} << 10);
  std::memset(block.get(), 1, size_t{600} << 10);
  block.reset();
  EXPECT_EQ(mallinfo2().arena, after.arena) << "a free trimmed the reserve";
}

#else

TEST(HeapTuningTest, ReserveIsAdvisedForHugePagesAndKept) {
  // As below: nothing of glibc's heap to observe.
  BackHeapWithHugePages();
  GTEST_SKIP() << "not glibc's own allocator: nothing to observe";
}

TEST(HeapTuningTest, BuffersComeFromTheHeapAndStayThere) {
  // Sanitizers replace malloc (glibc's mallopt then has no effect to observe,
  // and ASan's returns 0), and other C libraries have no mallopt.
  KeepBuffersInHeap();
  GTEST_SKIP() << "not glibc's own allocator: nothing to observe";
}

#endif

}  // namespace
}  // namespace profwatch
