// Helpers shared by the read/ tests.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <string_view>
#include <vector>

#include "read/byte_source.h"

namespace profwatch::read::testutil {

// Reads `source` to EOF in reads of at most `chunk` bytes.
inline Result<std::string> ReadAll(ByteSource& source, size_t chunk = 64 * 1024) {
  std::string out;
  std::vector<char> buf(chunk);
  for (;;) {
    Result<size_t> got = source.Read(buf.data(), buf.size());
    if (!got) return tl::unexpected(got.error());
    if (*got == 0) return out;
    out.append(buf.data(), *got);
  }
}

// gzip with an optional FNAME and header CRC (exercises header parsing).
inline std::string GzipWithHeader(std::string_view data, int level, bool name_and_hcrc) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  gz_header hdr{};
  char name[] = "host0.trace.json";
  if (name_and_hcrc) {
    hdr.name = reinterpret_cast<Bytef*>(name);
    hdr.hcrc = 1;
    hdr.os = 3;
    EXPECT_EQ(deflateSetHeader(&zs, &hdr), Z_OK);
  }
  std::string out(deflateBound(&zs, data.size()) + 128, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Backends to run every behaviour test against.
inline std::vector<InflateBackend> Backends() {
  std::vector<InflateBackend> b{InflateBackend::kZlib};
  if (IsalAvailable()) b.push_back(InflateBackend::kIsal);
  return b;
}

inline std::string BackendName(InflateBackend b) {
  return b == InflateBackend::kZlib ? "zlib" : "isal";
}

// Deterministic, moderately compressible bytes (JSON-like text).
inline std::string TestText(size_t size, uint32_t seed = 1) {
  std::string s;
  s.reserve(size + 64);
  uint32_t x = seed * 2654435761u + 1;
  while (s.size() < size) {
    x = x * 1664525u + 1013904223u;
    s += "{\"ph\":\"X\",\"pid\":" + std::to_string(x % 9) + ",\"ts\":" + std::to_string(x >> 8) +
         ".5" + std::to_string(x % 97) + ",\"name\":\"kernel_" + std::to_string(x % 1000) + "\"},";
  }
  s.resize(size);
  return s;
}

}  // namespace profwatch::read::testutil
