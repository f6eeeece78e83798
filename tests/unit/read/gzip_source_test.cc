// Gzip layer: round trips, member boundaries, truncation, corruption, and
// zlib/ISA-L equivalence.
#include <zlib.h>

#include <filesystem>
#include <random>

#include "read/byte_source.h"
#include "read_test_util.h"
#include "testing/test_util.h"

namespace profwatch::read {
namespace {

using ::profwatch::testing::Gzip;
using testutil::GzipWithHeader;
using testutil::ReadAll;

struct Outcome {
  bool ok = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string data;
  std::string context;
};

Outcome Inflate(std::string gz, InflateBackend backend, size_t inner_chunk = SIZE_MAX,
                size_t outer_chunk = 64 * 1024) {
  auto mem = std::make_unique<MemorySource>(std::move(gz), "t.json.gz");
  mem->SetMaxChunk(inner_chunk);
  auto src = MakeGzipSource(std::move(mem), backend);
  Outcome o;
  std::vector<char> buf(outer_chunk);
  for (;;) {
    auto got = src->Read(buf.data(), buf.size());
    if (!got) {
      o.code = got.error().code;
      o.context = got.error().context;
      // Sticky: the next read reports the same error.
      auto again = src->Read(buf.data(), buf.size());
      EXPECT_FALSE(again);
      if (!again) {
        EXPECT_EQ(again.error().code, o.code);
      }
      return o;
    }
    if (*got == 0) break;
    o.data.append(buf.data(), *got);
  }
  o.ok = true;
  auto again = src->Read(buf.data(), buf.size());
  EXPECT_TRUE(again && *again == 0);
  return o;
}

class GzipSourceTest : public ::testing::TestWithParam<InflateBackend> {};

INSTANTIATE_TEST_SUITE_P(Backends, GzipSourceTest, ::testing::ValuesIn(testutil::Backends()),
                         [](const auto& info) { return testutil::BackendName(info.param); });

TEST_P(GzipSourceTest, RoundTripsSmallStream) {
  Outcome o = Inflate(Gzip("{\"traceEvents\":[{}]}"), GetParam());
  ASSERT_TRUE(o.ok) << o.context;
  EXPECT_EQ(o.data, "{\"traceEvents\":[{}]}");
}

TEST_P(GzipSourceTest, RoundTripsEmptyMember) {
  Outcome o = Inflate(Gzip(""), GetParam());
  ASSERT_TRUE(o.ok) << o.context;
  EXPECT_EQ(o.data, "");
}

TEST_P(GzipSourceTest, RoundTripsMultiMegabyteStreamAcrossInputBuffers) {
  std::string data = testutil::TestText(6 << 20);
  for (int level : {0, 1, 9}) {
    Outcome o = Inflate(GzipWithHeader(data, level, false), GetParam());
    ASSERT_TRUE(o.ok) << o.context;
    EXPECT_TRUE(o.data == data) << "level " << level;
  }
}

TEST_P(GzipSourceTest, RoundTripsHeaderWithNameAndHeaderCrc) {
  std::string data = testutil::TestText(10000);
  Outcome o = Inflate(GzipWithHeader(data, 6, true), GetParam());
  ASSERT_TRUE(o.ok) << o.context;
  EXPECT_EQ(o.data, data);
}

TEST_P(GzipSourceTest, ConcatenatesMembers) {
  std::string a = testutil::TestText(1000, 1), b = testutil::TestText(400000, 2),
              c = testutil::TestText(3, 3);
  std::string gz = Gzip(a) + Gzip("") + GzipWithHeader(b, 1, true) + Gzip(c);
  Outcome o = Inflate(gz, GetParam());
  ASSERT_TRUE(o.ok) << o.context;
  EXPECT_TRUE(o.data == a + b + c);
}

TEST_P(GzipSourceTest, OneByteReadsOnBothSides) {
  std::string a = testutil::TestText(3000, 4), b = testutil::TestText(2000, 5);
  Outcome o = Inflate(Gzip(a) + Gzip(b), GetParam(), /*inner_chunk=*/1, /*outer_chunk=*/1);
  ASSERT_TRUE(o.ok) << o.context;
  EXPECT_EQ(o.data, a + b);
}

TEST_P(GzipSourceTest, RandomChunkSizesGiveSameBytes) {
  std::string data = testutil::TestText(700000, 6);
  std::string gz = Gzip(data) + Gzip(data.substr(0, 1000));
  std::mt19937 rng(42);
  for (int i = 0; i < 6; ++i) {
    size_t inner = 1 + rng() % 70000, outer = 1 + rng() % 70000;
    Outcome o = Inflate(gz, GetParam(), inner, outer);
    ASSERT_TRUE(o.ok) << o.context;
    EXPECT_TRUE(o.data == data + data.substr(0, 1000)) << inner << "/" << outer;
  }
}

TEST_P(GzipSourceTest, ReportsTruncatedMemberAtEveryCutOffset) {
  std::string gz = GzipWithHeader(testutil::TestText(2000), 6, true);
  for (size_t cut = 0; cut < gz.size(); ++cut) {
    Outcome o = Inflate(gz.substr(0, cut), GetParam());
    ASSERT_FALSE(o.ok) << "cut " << cut;
    EXPECT_EQ(o.code, ErrorCode::kTruncated) << "cut " << cut << ": " << o.context;
  }
}

TEST_P(GzipSourceTest, TruncatedSecondMemberIsTruncated) {
  std::string first = Gzip("first"), second = Gzip(testutil::TestText(500));
  for (size_t cut = 1; cut < second.size(); ++cut) {
    Outcome o = Inflate(first + second.substr(0, cut), GetParam());
    ASSERT_FALSE(o.ok);
    EXPECT_EQ(o.code, ErrorCode::kTruncated) << "cut " << cut;
  }
}

TEST_P(GzipSourceTest, TruncationMessageNamesFileAndOffset) {
  std::string gz = Gzip(testutil::TestText(5000));
  Outcome o = Inflate(gz.substr(0, 100), GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kTruncated);
  EXPECT_NE(o.context.find("t.json.gz"), std::string::npos) << o.context;
  EXPECT_NE(o.context.find("compressed offset 100"), std::string::npos) << o.context;
  EXPECT_NE(o.context.find("gzip stream ends before its trailer (file still being written?)"),
            std::string::npos)
      << o.context;
}

TEST_P(GzipSourceTest, EmptyInputIsTruncated) {
  Outcome o = Inflate("", GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kTruncated);
}

TEST_P(GzipSourceTest, BadMagicIsCorrupt) {
  std::string gz = Gzip("hello");
  gz[1] = 0x8c;
  Outcome o = Inflate(gz, GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt) << o.context;
  EXPECT_NE(o.context.find("t.json.gz"), std::string::npos);
}

TEST_P(GzipSourceTest, PlainTextIsCorrupt) {
  Outcome o = Inflate("{\"traceEvents\":[]}", GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt);
}

TEST_P(GzipSourceTest, UnknownMethodIsCorrupt) {
  std::string gz = Gzip("hello");
  gz[2] = 7;
  Outcome o = Inflate(gz, GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt);
}

TEST_P(GzipSourceTest, BadDataCrcIsCorrupt) {
  std::string gz = Gzip(testutil::TestText(3000));
  gz[gz.size() - 8] ^= 0x01;  // CRC32 lives in the first 4 trailer bytes
  Outcome o = Inflate(gz, GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt) << o.context;
}

TEST_P(GzipSourceTest, BadCrcIsCorruptEvenWhenTheLengthFieldIsCut) {
  // zlib checks the CRC as soon as its 4 bytes arrive; ISA-L must agree.
  std::string gz = Gzip(testutil::TestText(3000));
  gz[gz.size() - 8] ^= 0x40;
  for (size_t cut = 1; cut <= 4; ++cut) {
    Outcome o = Inflate(gz.substr(0, gz.size() - cut), GetParam());
    ASSERT_FALSE(o.ok);
    EXPECT_EQ(o.code, ErrorCode::kCorrupt) << "cut " << cut << ": " << o.context;
  }
  Outcome o = Inflate(gz.substr(0, gz.size() - 5), GetParam());  // CRC itself incomplete
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kTruncated) << o.context;
}

TEST_P(GzipSourceTest, BadLengthTrailerIsCorrupt) {
  std::string gz = Gzip(testutil::TestText(3000));
  gz[gz.size() - 1] ^= 0x01;  // ISIZE
  Outcome o = Inflate(gz, GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt) << o.context;
}

TEST_P(GzipSourceTest, BadHeaderCrcIsCorrupt) {
  std::string gz = GzipWithHeader("abc", 6, true);
  // FHCRC sits after the 10-byte header and the NUL-terminated name.
  size_t hcrc = 10 + std::string("host0.trace.json").size() + 1;
  gz[hcrc] ^= 0x55;
  Outcome o = Inflate(gz, GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt) << o.context;
}

TEST_P(GzipSourceTest, InvalidDeflateBlockIsCorrupt) {
  std::string gz = Gzip("hello hello hello");
  gz[10] = static_cast<char>(0x07);  // BFINAL=1, BTYPE=11 (reserved)
  Outcome o = Inflate(gz, GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt) << o.context;
  EXPECT_NE(o.context.find("compressed offset"), std::string::npos);
}

TEST_P(GzipSourceTest, TrailingZeroPaddingIsIgnored) {
  std::string gz = Gzip("payload") + std::string(1000, '\0');
  Outcome o = Inflate(gz, GetParam(), 7, 3);
  ASSERT_TRUE(o.ok) << o.context;
  EXPECT_EQ(o.data, "payload");
}

TEST_P(GzipSourceTest, TrailingGarbageIsCorrupt) {
  Outcome o = Inflate(Gzip("payload") + "garbage\n", GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt);
  EXPECT_EQ(o.data, "payload");  // bytes before the garbage were delivered
}

TEST_P(GzipSourceTest, GarbageAfterZeroPaddingIsCorrupt) {
  Outcome o = Inflate(Gzip("payload") + std::string(10, '\0') + "x", GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt);
  EXPECT_NE(o.context.find("padding"), std::string::npos);
}

TEST_P(GzipSourceTest, ZeroBytesOnlyIsCorrupt) {
  Outcome o = Inflate(std::string(64, '\0'), GetParam());
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.code, ErrorCode::kCorrupt);
}

TEST_P(GzipSourceTest, InnerErrorPassesThrough) {
  std::string gz = Gzip(testutil::TestText(100000));
  auto mem = std::make_unique<MemorySource>(gz, "x.gz");
  mem->SetMaxChunk(1000);
  mem->FailAt(5000, Error{ErrorCode::kIo, "x.gz: read: EIO"});
  auto src = MakeGzipSource(std::move(mem), GetParam());
  auto got = ReadAll(*src);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, ErrorCode::kIo);
  EXPECT_EQ(got.error().context, "x.gz: read: EIO");
}

TEST_P(GzipSourceTest, RawBytesReadCountsCompressedBytes) {
  std::string data = testutil::TestText(2 << 20);
  std::string gz = Gzip(data);
  ASSERT_LT(gz.size(), data.size() / 2);
  auto src = MakeGzipSource(std::make_unique<MemorySource>(gz, "x.gz"), GetParam());
  EXPECT_EQ(src->Name(), "x.gz");
  EXPECT_EQ(src->RawBytesRead(), 0u);
  auto got = ReadAll(*src);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size(), data.size());
  EXPECT_EQ(src->RawBytesRead(), gz.size());
}

TEST_P(GzipSourceTest, RawBytesReadPassesThroughSniffing) {
  ::profwatch::testing::TempDir dir;
  std::string gz = Gzip(testutil::TestText(50000));
  ::profwatch::testing::WriteFile(dir.Sub("h.trace.json.gz"), gz);
  auto src = OpenTraceSource(dir.Sub("h.trace.json.gz"), GetParam());
  ASSERT_TRUE(src);
  auto got = ReadAll(**src);
  ASSERT_TRUE(got);
  EXPECT_EQ((*src)->RawBytesRead(), gz.size());
  EXPECT_EQ((*src)->Name(), dir.Sub("h.trace.json.gz"));
}

// --- zlib and ISA-L must agree byte for byte and error class for class. ---

void ExpectBackendsAgree(const std::string& input, const std::string& what) {
  if (!IsalAvailable()) return;
  Outcome z = Inflate(input, InflateBackend::kZlib);
  Outcome i = Inflate(input, InflateBackend::kIsal);
  ASSERT_EQ(z.ok, i.ok) << what << ": zlib=" << z.context << " isal=" << i.context;
  if (z.ok) {
    EXPECT_TRUE(z.data == i.data) << what;
  } else {
    EXPECT_EQ(z.code, i.code) << what << ": zlib=" << z.context << " isal=" << i.context;
  }
}

class BackendEquivalenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsalAvailable()) GTEST_SKIP() << "ISA-L backend not compiled in";
  }
};

TEST_F(BackendEquivalenceTest, AgreeOnEveryTruncationAndSingleByteCorruption) {
  std::string gz = GzipWithHeader(testutil::TestText(1500), 6, true) + Gzip("tail");
  for (size_t cut = 0; cut <= gz.size(); ++cut) {
    ExpectBackendsAgree(gz.substr(0, cut), "cut " + std::to_string(cut));
  }
  for (size_t pos = 0; pos < gz.size(); ++pos) {
    for (uint8_t flip : {0x01, 0x80, 0xff}) {
      std::string bad = gz;
      bad[pos] = static_cast<char>(bad[pos] ^ flip);
      ExpectBackendsAgree(bad, "flip " + std::to_string(flip) + " at " + std::to_string(pos));
    }
  }
}

TEST_F(BackendEquivalenceTest, AgreeOnEdgeInputs) {
  std::string data = testutil::TestText(300000);
  ExpectBackendsAgree("", "empty");
  ExpectBackendsAgree(std::string(1, '\x1f'), "magic byte");
  ExpectBackendsAgree(std::string(64, '\0'), "zeros");
  ExpectBackendsAgree("plain", "plain");
  ExpectBackendsAgree(Gzip(data) + std::string(3, '\0'), "padding");
  ExpectBackendsAgree(Gzip(data) + "junk", "garbage");
  ExpectBackendsAgree(Gzip(data) + Gzip(data), "two members");
  ExpectBackendsAgree(GzipWithHeader(data, 0, false), "stored blocks");
}

TEST_F(BackendEquivalenceTest, AgreeOnSharedFixtures) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(root, "");
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".gz") continue;
    ++files;
    std::string raw = ::profwatch::testing::ReadFile(entry.path().string());
    Outcome z = Inflate(raw, InflateBackend::kZlib);
    Outcome i = Inflate(raw, InflateBackend::kIsal);
    EXPECT_TRUE(z.ok) << entry.path() << ": " << z.context;
    ASSERT_EQ(z.ok, i.ok) << entry.path();
    EXPECT_TRUE(z.data == i.data) << entry.path();
    if (!z.ok) {
      EXPECT_EQ(z.code, i.code) << entry.path();
    }
  }
  EXPECT_GT(files, 0u);
}

}  // namespace
}  // namespace profwatch::read
