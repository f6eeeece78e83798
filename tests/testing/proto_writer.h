// A tiny protocol-buffer writer for hand-built XSpaces and HloProtos in tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace profwatch::testing {

inline std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
inline std::string VarintField(uint32_t field, int64_t v) {
  return Varint(uint64_t{field} << 3 | 0) + Varint(static_cast<uint64_t>(v));
}
inline std::string LenField(uint32_t field, std::string_view bytes) {
  return Varint(uint64_t{field} << 3 | 2) + Varint(bytes.size()) + std::string(bytes);
}

}  // namespace profwatch::testing
