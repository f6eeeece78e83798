// MemorySource, file source and sniffing.
#include "read/byte_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "read_test_util.h"
#include "testing/test_util.h"

namespace profwatch::read {
namespace {

using ::profwatch::testing::TempDir;
using ::profwatch::testing::WriteFile;
using testutil::ReadAll;

TEST(MemorySourceTest, ReadsAllBytesThenEofStaysEof) {
  MemorySource src("hello world", "mem");
  char buf[4];
  auto a = src.Read(buf, 4);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, 4u);
  EXPECT_EQ(std::string(buf, 4), "hell");
  auto rest = ReadAll(src);
  ASSERT_TRUE(rest);
  EXPECT_EQ(*rest, "o world");
  EXPECT_EQ(src.RawBytesRead(), 11u);
  auto again = src.Read(buf, 4);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0u);
  EXPECT_EQ(src.Name(), "mem");
}

TEST(MemorySourceTest, MaxChunkLimitsEveryRead) {
  MemorySource src("abcdef");
  src.SetMaxChunk(1);
  char buf[16];
  for (char c : std::string("abcdef")) {
    auto got = src.Read(buf, sizeof(buf));
    ASSERT_TRUE(got);
    ASSERT_EQ(*got, 1u);
    EXPECT_EQ(buf[0], c);
  }
  EXPECT_EQ(*src.Read(buf, sizeof(buf)), 0u);
}

TEST(MemorySourceTest, FailAtFailsTheCrossingReadAndStaysFailed) {
  MemorySource src("0123456789");
  src.FailAt(5, Error{ErrorCode::kIo, "injected"});
  char buf[4];
  auto first = src.Read(buf, 4);  // bytes 0..3: does not reach offset 5
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, 4u);
  auto second = src.Read(buf, 4);  // 4..7 crosses 5
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kIo);
  EXPECT_EQ(second.error().context, "injected");
  auto third = src.Read(buf, 1);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, ErrorCode::kIo);
  EXPECT_EQ(src.RawBytesRead(), 4u);
}

TEST(MemorySourceTest, FailAtEndReplacesEof) {
  MemorySource src("abc");
  src.FailAt(3, Error{ErrorCode::kTruncated, "cut"});
  auto all = ReadAll(src);
  ASSERT_FALSE(all);
  EXPECT_EQ(all.error().code, ErrorCode::kTruncated);
}

TEST(FileSourceTest, ReadsRegularFileAndCountsBytes) {
  TempDir dir;
  std::string data = testutil::TestText(300000);
  WriteFile(dir.Sub("a.json"), data);
  auto src = OpenFileSource(dir.Sub("a.json"));
  ASSERT_TRUE(src) << src.error().ToString();
  auto got = ReadAll(**src, 7777);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, data);
  EXPECT_EQ((*src)->RawBytesRead(), data.size());
  EXPECT_EQ((*src)->Name(), dir.Sub("a.json"));
}

TEST(FileSourceTest, MissingFileIsNotFoundAndNamesPath) {
  TempDir dir;
  auto src = OpenFileSource(dir.Sub("nope.json"));
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, ErrorCode::kNotFound);
  EXPECT_NE(src.error().context.find(dir.Sub("nope.json")), std::string::npos);
}

TEST(FileSourceTest, PathThroughAFileIsNotFound) {
  TempDir dir;
  WriteFile(dir.Sub("f"), "x");
  auto src = OpenFileSource(dir.Sub("f/child"));
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, ErrorCode::kNotFound);
}

TEST(FileSourceTest, DirectoryIsUnsupported) {
  TempDir dir;
  auto src = OpenFileSource(dir.path().string());
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(src.error().context.find("directory"), std::string::npos);
}

// Confined (serve): what is read is what the opened descriptor names, every
// link resolved. A link to a file outside the roots is refused, one to a
// file inside is read; so is a path that leads out through a directory link.
TEST(FileSourceTest, ConfinedOpenReadsOnlyFilesWhoseRealPathIsUnderARoot) {
  TempDir dir;
  const std::string root = std::filesystem::canonical(dir.path()).string() + "/root";
  WriteFile(root + "/in/data.json", "inside");
  WriteFile(dir.Sub("out/secret.json"), "secret");
  std::filesystem::create_symlink(root + "/in/data.json", root + "/link_in.json");
  std::filesystem::create_symlink(dir.Sub("out/secret.json"), root + "/link_out.json");
  std::filesystem::create_directory_symlink(dir.Sub("out"), root + "/outdir");
  const Confinement roots = {root};
  auto in = OpenFileSource(root + "/link_in.json", &roots);
  ASSERT_TRUE(in) << in.error().ToString();
  EXPECT_EQ(*ReadAll(**in), "inside");
  for (const std::string& escape : {root + "/link_out.json", root + "/outdir/secret.json"}) {
    auto out = OpenFileSource(escape, &roots);
    ASSERT_FALSE(out) << escape;
    EXPECT_EQ(out.error().code, ErrorCode::kPermission);
    EXPECT_NE(out.error().context.find("outside the watched roots"), std::string::npos)
        << out.error().context;
  }
  // Unconfined (analyze on an explicit path): read where it points.
  auto any = OpenFileSource(root + "/link_out.json");
  ASSERT_TRUE(any);
  EXPECT_EQ(*ReadAll(**any), "secret");
  // A root that is a prefix of the name but not a parent does not count.
  EXPECT_FALSE(PathWithin(root + "2/x", roots));
  EXPECT_TRUE(PathWithin(root + "/x", roots));
  EXPECT_FALSE(PathWithin(root, roots));
}

TEST(FileSourceTest, FifoIsUnsupportedWithoutBlocking) {
  TempDir dir;
  std::string fifo = dir.Sub("pipe");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto src = OpenFileSource(fifo);  // would hang forever if open() waited for a writer
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, ErrorCode::kUnsupported);
}

TEST(FileSourceTest, UnreadableFileIsPermissionError) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: permission bits are bypassed";
  TempDir dir;
  std::string path = dir.Sub("secret.json.gz");
  WriteFile(path, "data");
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  auto src = OpenFileSource(path);
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, ErrorCode::kPermission);
  EXPECT_NE(src.error().context.find(path), std::string::npos);
}

TEST(FileSourceTest, EmptyFileIsImmediateEof) {
  TempDir dir;
  WriteFile(dir.Sub("empty"), "");
  auto src = OpenTraceSource(dir.Sub("empty"));
  ASSERT_TRUE(src);
  auto got = ReadAll(**src);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "");
  EXPECT_EQ((*src)->RawBytesRead(), 0u);
}

TEST(SniffTest, PlainContentPassesThroughWithPeekedBytesReplayed) {
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{4096}}) {
    auto mem = std::make_unique<MemorySource>("{\"traceEvents\":[]}");
    mem->SetMaxChunk(chunk);
    auto src = SniffAndWrap(std::move(mem));
    ASSERT_TRUE(src);
    auto got = ReadAll(**src, chunk);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, "{\"traceEvents\":[]}") << "chunk " << chunk;
    EXPECT_EQ((*src)->RawBytesRead(), 18u);
  }
}

TEST(SniffTest, OneBytePlainFileIsKept) {
  auto src = SniffAndWrap(std::make_unique<MemorySource>("x"));
  ASSERT_TRUE(src);
  EXPECT_EQ(*ReadAll(**src), "x");
}

TEST(SniffTest, GzipContentIsInflatedWhateverTheName) {
  TempDir dir;
  std::string data = testutil::TestText(5000);
  WriteFile(dir.Sub("trace.json"), ::profwatch::testing::Gzip(data));  // no .gz suffix
  for (InflateBackend b : testutil::Backends()) {
    auto src = OpenTraceSource(dir.Sub("trace.json"), b);
    ASSERT_TRUE(src);
    auto got = ReadAll(**src);
    ASSERT_TRUE(got) << got.error().ToString();
    EXPECT_EQ(*got, data);
  }
}

TEST(SniffTest, LoneGzipMagicByteIsTruncatedGzip) {
  for (InflateBackend b : testutil::Backends()) {
    auto src = SniffAndWrap(std::make_unique<MemorySource>(std::string("\x1f", 1)), b);
    ASSERT_TRUE(src);
    auto got = ReadAll(**src);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code, ErrorCode::kTruncated);
  }
}

TEST(SniffTest, ErrorWhilePeekingIsReturned) {
  auto mem = std::make_unique<MemorySource>("abc");
  mem->FailAt(0, Error{ErrorCode::kIo, "disk"});
  auto src = SniffAndWrap(std::move(mem));
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, ErrorCode::kIo);
}

TEST(SniffTest, OpenTraceSourceReportsMissingFile) {
  auto src = OpenTraceSource("/nonexistent/profwatch/x.trace.json.gz");
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, ErrorCode::kNotFound);
}

TEST(InflateBackendTest, ParsesKnownNamesAndRejectsOthers) {
  auto z = ParseInflateBackend("zlib");
  ASSERT_TRUE(z);
  EXPECT_EQ(*z, InflateBackend::kZlib);
  auto i = ParseInflateBackend("isal");
  if (IsalAvailable()) {
    ASSERT_TRUE(i);
    EXPECT_EQ(*i, InflateBackend::kIsal);
  } else {
    ASSERT_FALSE(i);
    EXPECT_EQ(i.error().code, ErrorCode::kConfig);
  }
  auto bad = ParseInflateBackend("zstd");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kConfig);
  EXPECT_FALSE(ParseInflateBackend(""));
  EXPECT_FALSE(ParseInflateBackend("ZLIB"));
}

// ISA-L is the default wherever it is built in; zlib stays the fallback.
TEST(InflateBackendTest, DefaultIsIsalWhereBuiltInElseZlib) {
#ifdef PROFWATCH_HAVE_ISAL
  EXPECT_EQ(DefaultInflateBackend(), InflateBackend::kIsal);
#else
  EXPECT_EQ(DefaultInflateBackend(), InflateBackend::kZlib);
#endif
  EXPECT_EQ(InflateBackendName(InflateBackend::kIsal), "isal");
  EXPECT_EQ(InflateBackendName(InflateBackend::kZlib), "zlib");
  // The name of the default parses back to it.
  EXPECT_EQ(*ParseInflateBackend(InflateBackendName(DefaultInflateBackend())),
            DefaultInflateBackend());
}

TEST(InflateBackendTest, IsalIsCompiledInWhenTheBuildFoundIt) {
#ifdef PROFWATCH_HAVE_ISAL
  EXPECT_TRUE(IsalAvailable());
#else
  EXPECT_FALSE(IsalAvailable());
#endif
}

}  // namespace
}  // namespace profwatch::read
