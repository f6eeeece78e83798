// GzipCrc32 against zlib's crc32, which the gzip trailer was written with.
#include "read/gzip_crc.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace profwatch::read {
namespace {

uint32_t ZlibCrc(const unsigned char* p, size_t n) {
  return static_cast<uint32_t>(crc32_z(0, p, n));
}

TEST(GzipCrc32Test, CheckValueOfTheStandard) {
  // The CRC-32/ISO-HDLC check value (the "123456789" test vector).
  EXPECT_EQ(GzipCrc32(0, "123456789", 9), 0xCBF43926u);
  EXPECT_EQ(GzipCrc32(0, "", 0), 0u);
  EXPECT_EQ(GzipCrc32(0x12345678u, "", 0), 0x12345678u);
}

TEST(GzipCrc32Test, MatchesZlibAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<unsigned char> bytes(4096 + 64);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  // Lengths around the vector widths (16/32/64/128/256 bytes) and offsets
  // that misalign the start, where SIMD CRCs have their edge cases.
  for (size_t offset = 0; offset < 64; offset += 7) {
    for (size_t len = 0; len <= 4096; len += (len < 300 ? 1 : 97)) {
      ASSERT_EQ(GzipCrc32(0, bytes.data() + offset, len), ZlibCrc(bytes.data() + offset, len))
          << "offset " << offset << " len " << len;
    }
  }
}

TEST(GzipCrc32Test, ContinuesAcrossPiecesLikeOneRun) {
  std::mt19937 rng(11);
  std::vector<unsigned char> bytes(1 << 20);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  const uint32_t whole = ZlibCrc(bytes.data(), bytes.size());
  ASSERT_EQ(GzipCrc32(0, bytes.data(), bytes.size()), whole);
  for (size_t piece : {size_t{1}, size_t{3}, size_t{255}, size_t{4096}, size_t{65537}}) {
    uint32_t crc = 0;
    for (size_t at = 0; at < bytes.size(); at += piece) {
      crc = GzipCrc32(crc, bytes.data() + at, std::min(piece, bytes.size() - at));
    }
    EXPECT_EQ(crc, whole) << "pieces of " << piece;
  }
}

TEST(GzipCrc32Test, UsesIsalWhenBuiltWithIt) {
#ifdef PROFWATCH_HAVE_ISAL
  EXPECT_STREQ(GzipCrc32Implementation(), "isal");
#else
  EXPECT_STREQ(GzipCrc32Implementation(), "zlib");
#endif
}

}  // namespace
}  // namespace profwatch::read
