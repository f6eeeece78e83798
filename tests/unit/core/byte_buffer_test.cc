// ByteBuffer: a vector of bytes that keeps what was written across growth,
// moves and swaps like std::vector, and still value-initialises on request.
#include "core/byte_buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>

namespace profwatch {
namespace {

TEST(ByteBufferTest, GrowingKeepsTheBytesWritten) {
  ByteBuffer b;
  b.resize(5);
  std::memcpy(b.data(), "trace", 5);
  b.resize(1 << 20);  // reallocates: the first bytes must move with it
  EXPECT_EQ(b.size(), size_t{1} << 20);
  EXPECT_EQ(std::string(b.data(), 5), "trace");
  b.resize(3);
  EXPECT_EQ(std::string(b.data(), b.size()), "tra");
}

TEST(ByteBufferTest, ExplicitValuesAreStillWritten) {
  ByteBuffer b(4, 'x');  // the fill constructor uses construct(p, value)
  EXPECT_EQ(std::string(b.begin(), b.end()), "xxxx");
  b.assign(3, ' ');
  EXPECT_EQ(std::string(b.begin(), b.end()), "   ");
  b.resize(6, '!');
  EXPECT_EQ(std::string(b.begin(), b.end()), "   !!!");
}

TEST(ByteBufferTest, MovesAndSwapsHandTheStorageOver) {
  ByteBuffer a(8, 'a');
  const char* storage = a.data();
  ByteBuffer b = std::move(a);
  EXPECT_EQ(b.data(), storage);  // no copy: batches hand buffers over whole
  ByteBuffer().swap(b);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.capacity(), 0u);  // swapping with an empty one frees it
}

}  // namespace
}  // namespace profwatch
