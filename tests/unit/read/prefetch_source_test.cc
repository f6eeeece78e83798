// PrefetchSource: the same bytes and the same end (EOF or error, with the
// same code, message and RawBytesRead) as the source it wraps.
#include "read/prefetch_source.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>

#include "read/byte_source.h"
#include "read_test_util.h"
#include "testing/test_util.h"

namespace profwatch::read {
namespace {

using ::profwatch::testing::Gzip;
using testutil::TestText;

struct Outcome {
  std::string data;
  bool ok = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string context;
  uint64_t raw = 0;
};

Outcome Drain(ByteSource& src, size_t chunk) {
  Outcome o;
  std::vector<char> buf(chunk);
  for (;;) {
    auto got = src.Read(buf.data(), buf.size());
    if (!got) {
      o.code = got.error().code;
      o.context = got.error().context;
      // Sticky error.
      auto again = src.Read(buf.data(), buf.size());
      EXPECT_FALSE(again.has_value());
      if (!again) {
        EXPECT_EQ(again.error().context, o.context);
      }
      break;
    }
    if (*got == 0) {
      o.ok = true;
      auto again = src.Read(buf.data(), buf.size());  // sticky EOF
      EXPECT_TRUE(again.has_value() && *again == 0);
      break;
    }
    o.data.append(buf.data(), *got);
  }
  o.raw = src.RawBytesRead();
  return o;
}

void ExpectSameOutcome(const Outcome& a, const Outcome& b, const std::string& what) {
  EXPECT_EQ(a.ok, b.ok) << what;
  if (a.ok) {
    EXPECT_EQ(a.data.size(), b.data.size()) << what;
    EXPECT_TRUE(a.data == b.data) << what;
  } else {
    // Before a data error even the plain gzip source delivers more or fewer
    // (garbage) bytes depending on its callers' read sizes: the two must
    // agree on what both delivered, then fail the same way.
    const size_t common = std::min(a.data.size(), b.data.size());
    EXPECT_TRUE(a.data.compare(0, common, b.data, 0, common) == 0) << what;
  }
  EXPECT_EQ(a.code, b.code) << what;
  EXPECT_EQ(a.context, b.context) << what;
  EXPECT_EQ(a.raw, b.raw) << what;
}

// Unwrapped vs prefetched gzip stack over the same compressed bytes.
void CompareOnGzip(const std::string& gz, const std::string& what, size_t chunk,
                   size_t buffer_bytes = 1 << 20, size_t buffers = 4) {
  for (InflateBackend backend : testutil::Backends()) {
    auto plain = MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), backend);
    auto pre = MakePrefetchSource(
        MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), backend), buffer_bytes, buffers);
    EXPECT_EQ(pre->Name(), "t.gz");
    ExpectSameOutcome(Drain(*plain, chunk), Drain(*pre, chunk),
                      what + " [" + testutil::BackendName(backend) + "]");
  }
}

std::string ReadBinary(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(PrefetchSourceTest, SameBytesAndEndOnEveryGzipFixture) {
  std::vector<std::string> roots = {testing::ProjectFixture("")};
  if (std::string shared = testing::SharedFixture(""); !shared.empty()) roots.push_back(shared);
  int seen = 0;
  for (const auto& root : roots) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      if (!e.is_regular_file() || e.path().extension() != ".gz") continue;
      const std::string gz = ReadBinary(e.path().string());
      CompareOnGzip(gz, e.path().string(), 64 * 1024);
      CompareOnGzip(gz, e.path().string() + " small ring", 4096, 1000, 2);
      ++seen;
    }
  }
  EXPECT_GT(seen, 0);
}

TEST(PrefetchSourceTest, OneByteReadsGiveTheSameBytes) {
  CompareOnGzip(Gzip(TestText(300000)), "1-byte reads", 1, 4096, 3);
}

TEST(PrefetchSourceTest, TruncatedGzipGivesTheSameErrorAtTheSamePlace) {
  const std::string gz = Gzip(TestText(500000, 3));
  for (size_t cut : {size_t{0}, size_t{1}, size_t{10}, gz.size() / 3, gz.size() - 9, gz.size() - 4,
                     gz.size() - 1}) {
    CompareOnGzip(gz.substr(0, cut), "cut at " + std::to_string(cut), 8192, 3000, 2);
  }
}

TEST(PrefetchSourceTest, CorruptGzipGivesTheSameErrorAtTheSamePlace) {
  const std::string good = Gzip(TestText(400000, 5));
  for (size_t at : {size_t{0}, size_t{3}, good.size() / 2, good.size() - 6}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    CompareOnGzip(bad, "flip at " + std::to_string(at), 8192, 5000, 3);
  }
  CompareOnGzip(good + "garbage!", "trailing garbage", 8192);
}

TEST(PrefetchSourceTest, InjectedIoErrorComesAfterTheBytesBeforeIt) {
  const std::string text = TestText(100000, 9);
  auto make = [&] {
    auto m = std::make_unique<MemorySource>(text, "mem");
    m->SetMaxChunk(777);
    m->FailAt(54321, Error{ErrorCode::kIo, "mem: disk on fire"});
    return m;
  };
  // MemorySource fails the Read that would cross the offset, so where the
  // bytes stop depends on the read sizes: a ring buffer of 3 x 777 bytes asks
  // the inner source for the same 777-byte pieces as the plain reader.
  auto plain = make();
  auto pre = MakePrefetchSource(make(), 3 * 777, 2);
  Outcome a = Drain(*plain, 4096), b = Drain(*pre, 4096);
  ExpectSameOutcome(a, b, "injected");
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.code, ErrorCode::kIo);
  EXPECT_GT(b.data.size(), 50000u);
  EXPECT_LE(b.data.size(), 54321u);
}

TEST(PrefetchSourceTest, EmptySourceIsCleanEof) {
  auto pre = MakePrefetchSource(std::make_unique<MemorySource>("", "empty"));
  Outcome o = Drain(*pre, 16);
  EXPECT_TRUE(o.ok);
  EXPECT_TRUE(o.data.empty());
  EXPECT_EQ(o.raw, 0u);
}

TEST(PrefetchSourceTest, DestroyingEarlyStopsTheProducer) {
  // The producer is blocked on a full ring when the reader goes away; the
  // destructor must stop and join it (a hang here fails by ctest timeout).
  const std::string gz = Gzip(TestText(2000000, 11));
  for (size_t read_first : {size_t{0}, size_t{1}, size_t{100000}}) {
    auto pre =
        MakePrefetchSource(MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz")), 4096, 2);
    std::vector<char> buf(read_first + 1);
    size_t got = 0;
    while (got < read_first) {
      auto n = pre->Read(buf.data() + got, read_first - got);
      ASSERT_TRUE(n.has_value());
      ASSERT_GT(*n, 0u);
      got += *n;
    }
    EXPECT_EQ(std::string(buf.data(), got), TestText(2000000, 11).substr(0, got));
    pre.reset();
  }
}

TEST(PrefetchSourceTest, RawBytesReadReachesTheCompressedSize) {
  const std::string gz = Gzip(TestText(1000000, 2));
  auto pre =
      MakePrefetchSource(MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz")), 65536, 4);
  Outcome o = Drain(*pre, 100000);
  ASSERT_TRUE(o.ok);
  EXPECT_EQ(o.data.size(), 1000000u);
  EXPECT_EQ(o.raw, gz.size());
}

// With a WorkShare, the producer does the reader's chores while its ring is
// full (here: the reader has not read yet), and the bytes are unchanged.
TEST(PrefetchSourceTest, FullRingRunsOfferedChoresAndKeepsTheBytes) {
  const std::string text = TestText(500000, 4);
  auto share = std::make_shared<WorkShare>();
  std::atomic<int> chores{0};
  std::promise<void> ten_done;
  share->Offer([&] {
    const int n = ++chores;
    if (n == 10) ten_done.set_value();
    return n <= 10;  // ten units of work, then none
  });
  auto pre = MakePrefetchSource(std::make_unique<MemorySource>(text, "mem"), 4096, 2, share);
  share->Notify();
  // Nobody reads: the ring fills and the producer turns to the chores.
  ten_done.get_future().wait();
  Outcome o = Drain(*pre, 1000);
  ASSERT_TRUE(o.ok);
  EXPECT_TRUE(o.data == text);
  share->Offer({});
  EXPECT_GE(chores.load(), 11);  // the 11th call found no work
}

}  // namespace
}  // namespace profwatch::read
