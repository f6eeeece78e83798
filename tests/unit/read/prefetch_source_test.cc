// PrefetchSource: the same bytes and the same end (EOF or error, with the
// same code, message and RawBytesRead) as the source it wraps.
#include "read/prefetch_source.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>

#include "read/byte_source.h"
#include "read/gzip_check.h"
#include "read_test_util.h"
#include "testing/test_util.h"

namespace profwatch::read {
// Named for this file: the unity build compiles it with its neighbours.
namespace prefetch_source_test {

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

// Unwrapped vs prefetched gzip stack over the same compressed bytes, and vs
// the same stack checked on the reader's thread (read/gzip_check.h).
void CompareOnGzip(const std::string& gz, const std::string& what, size_t chunk,
                   size_t buffer_bytes = 1 << 20, size_t buffers = 4) {
  for (InflateBackend backend : testutil::Backends()) {
    const std::string label = what + " [" + testutil::BackendName(backend) + "]";
    const Outcome plain =
        Drain(*MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), backend), chunk);
    auto pre = MakePrefetchSource(
        MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), backend), buffer_bytes, buffers);
    EXPECT_EQ(pre->Name(), "t.gz");
    ExpectSameOutcome(plain, Drain(*pre, chunk), label);
    auto checked =
        MakeGzipCheckSource(MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), backend));
    EXPECT_EQ(checked->Name(), "t.gz");
    ExpectSameOutcome(plain, Drain(*checked, chunk), label + " checked by the reader");
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

// With zlib, the prefetch source takes over the gzip layer's CRC-32 and
// length checks (HandOverGzipChecks) and applies them on the reading thread.
// Every way a trailer can be wrong or cut must end as the gzip source ends
// on its own: same code, same message and offset, same RawBytesRead.
std::string TwoMembers(const std::string& a, const std::string& b) { return Gzip(a) + Gzip(b); }

void FlipByte(std::string& s, size_t at) { s[at] = static_cast<char>(s[at] ^ 0x5a); }

TEST(PrefetchSourceTest, HandedOverGzipChecksEndLikeTheGzipLayer) {
  const std::string good = Gzip(TestText(300000, 7));
  const size_t n = good.size();
  for (size_t at = n - 8; at < n; ++at) {  // every trailer byte: CRC-32, then ISIZE
    std::string bad = good;
    FlipByte(bad, at);
    CompareOnGzip(bad, "trailer byte " + std::to_string(at - (n - 8)) + " flipped", 8192, 5000, 3);
    // ... and cut short after it: with the CRC-32 in, a wrong one is corrupt.
    for (size_t cut = at + 1; cut < n; ++cut) {
      CompareOnGzip(
          bad.substr(0, cut),
          "byte " + std::to_string(at - (n - 8)) + " flipped, cut at -" + std::to_string(n - cut),
          8192, 5000, 3);
    }
  }
  for (size_t cut = n - 12; cut < n; ++cut) {
    CompareOnGzip(good.substr(0, cut), "good, cut at -" + std::to_string(n - cut), 8192, 5000, 3);
  }
  // A trailer split over two reads of the file (1-byte and 3-byte chunks).
  for (size_t chunk : {size_t{1}, size_t{3}}) {
    for (InflateBackend backend : testutil::Backends()) {
      std::string bad = good;
      FlipByte(bad, n - 7);
      auto make = [&] {
        auto m = std::make_unique<MemorySource>(bad, "t.gz");
        m->SetMaxChunk(chunk);
        return MakeGzipSource(std::move(m), backend);
      };
      const Outcome plain = Drain(*make(), 4096);
      auto pre = MakePrefetchSource(make(), 4096, 2);
      const std::string label = "trailer read in " + std::to_string(chunk) + "-byte pieces";
      ExpectSameOutcome(plain, Drain(*pre, 4096), label);
      ExpectSameOutcome(plain, Drain(*MakeGzipCheckSource(make()), 4096), label + ", checked");
    }
  }
}

TEST(PrefetchSourceTest, HandedOverChecksFollowEveryMember) {
  const std::string a = TestText(200000, 1), b = TestText(150000, 2);
  CompareOnGzip(TwoMembers(a, b), "two good members", 8192, 5000, 3);
  CompareOnGzip(TwoMembers(a, b) + std::string(100, '\0'), "two members and padding", 8192);
  std::string bad_first = TwoMembers(a, b);
  FlipByte(bad_first, Gzip(a).size() - 6);  // the first member's CRC-32
  CompareOnGzip(bad_first, "first member's CRC wrong", 8192, 5000, 3);
  std::string bad_second = TwoMembers(a, b);
  FlipByte(bad_second, bad_second.size() - 2);  // the second member's ISIZE
  CompareOnGzip(bad_second, "second member's length wrong", 8192, 5000, 3);
  CompareOnGzip(TwoMembers("", a), "an empty member first", 8192, 5000, 3);
  // Members smaller than a ring buffer: several end in one buffer.
  std::string many;
  for (int i = 0; i < 20; ++i) many += Gzip(TestText(700 + 13 * static_cast<size_t>(i), i));
  CompareOnGzip(many, "20 small members", 8192, 65536, 2);
  FlipByte(many, many.size() / 2);
  CompareOnGzip(many, "20 small members, one byte flipped", 8192, 65536, 2);
}

TEST(PrefetchSourceTest, OnlyZlibHandsItsChecksOver) {
  const std::string gz = Gzip(TestText(50000, 4));
  auto zlib = MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), InflateBackend::kZlib);
  ASSERT_TRUE(zlib->HandOverGzipChecks());
  std::string bad = gz;
  FlipByte(bad, gz.size() - 8);
  auto handed = MakeGzipSource(std::make_unique<MemorySource>(bad, "t.gz"), InflateBackend::kZlib);
  ASSERT_TRUE(handed->HandOverGzipChecks());
  // The gzip layer itself now ends cleanly: the check is the reader's.
  auto bytes = testutil::ReadAll(*handed);
  ASSERT_TRUE(bytes.has_value()) << bytes.error().context;
  EXPECT_EQ(*bytes, TestText(50000, 4));
  std::vector<GzipMemberCheck> checks;
  handed->TakeGzipChecks(checks);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_TRUE(checks[0].complete);
  EXPECT_EQ(checks[0].end, 50000u);
  EXPECT_EQ(checks[0].isize, 50000u);
  const uLong crc = crc32_z(0, reinterpret_cast<const Bytef*>(bytes->data()), bytes->size());
  EXPECT_EQ(checks[0].crc, static_cast<uint32_t>(crc) ^ 0x5au);  // the flipped low byte
  EXPECT_NE(checks[0].crc_error.find("incorrect data check [zlib]"), std::string::npos);
  // Not after the first read, and not by ISA-L (its CRC is fast and its own).
  auto started = MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), InflateBackend::kZlib);
  char c;
  ASSERT_TRUE(started->Read(&c, 1).has_value());
  EXPECT_FALSE(started->HandOverGzipChecks());
  if (IsalAvailable()) {
    auto isal = MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), InflateBackend::kIsal);
    EXPECT_FALSE(isal->HandOverGzipChecks());
  }
  // Through sniffing (a replay source in front of the gzip layer) too.
  auto sniffed = SniffAndWrap(std::make_unique<MemorySource>(gz, "t.gz"));
  ASSERT_TRUE(sniffed.has_value());
  EXPECT_TRUE((*sniffed)->HandOverGzipChecks());
}

TEST(PrefetchSourceTest, CheckSourceWrapsOnlyWhatHandsOver) {
  const std::string gz = Gzip(TestText(50000, 4));
  // Plain bytes and an ISA-L stack are returned as they are.
  auto plain = std::make_unique<MemorySource>("{}", "plain");
  ByteSource* plain_ptr = plain.get();
  EXPECT_EQ(MakeGzipCheckSource(std::move(plain)).get(), plain_ptr);
  if (IsalAvailable()) {
    auto isal = MakeGzipSource(std::make_unique<MemorySource>(gz, "t.gz"), InflateBackend::kIsal);
    ByteSource* isal_ptr = isal.get();
    EXPECT_EQ(MakeGzipCheckSource(std::move(isal)).get(), isal_ptr);
  }
  // A zlib stack is wrapped, and the wrapper catches what zlib no longer does.
  std::string bad = gz;
  FlipByte(bad, gz.size() - 8);
  auto zlib = MakeGzipSource(std::make_unique<MemorySource>(bad, "t.gz"), InflateBackend::kZlib);
  ByteSource* zlib_ptr = zlib.get();
  auto checked = MakeGzipCheckSource(std::move(zlib));
  EXPECT_NE(checked.get(), zlib_ptr);
  auto all = testutil::ReadAll(*checked);
  ASSERT_FALSE(all.has_value());
  EXPECT_EQ(all.error().code, ErrorCode::kCorrupt);
  EXPECT_NE(all.error().context.find("incorrect data check"), std::string::npos);
}

TEST(PrefetchSourceTest, HandedOverChecksKeepTheHeaderCrcCheck) {
  // FHCRC: a header with its own CRC-16, checked by zlib while it reads the
  // header; the hand-over turns only the data's check off.
  const std::string gz = testutil::GzipWithHeader(TestText(100000, 8), 6, true);
  CompareOnGzip(gz, "FHCRC header", 8192, 5000, 3);
  const size_t header_crc = 10 + sizeof "host0.trace.json";  // fixed header, FNAME, NUL
  std::string bad = gz;
  FlipByte(bad, header_crc);
  CompareOnGzip(bad, "FHCRC header with a wrong CRC-16", 8192, 5000, 3);
  std::string bad_data = gz;
  FlipByte(bad_data, gz.size() - 5);
  CompareOnGzip(bad_data, "FHCRC header, wrong data CRC-32", 8192, 5000, 3);
}

}  // namespace prefetch_source_test
}  // namespace profwatch::read
