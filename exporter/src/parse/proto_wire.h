// Protocol-buffer wire format over one complete in-memory message: the
// reader the XSpace and HLO decoders share (parse-internal). Every read checks
// the end of the enclosing message: running past it means the bytes are
// corrupt (the enclosing length was complete), never truncated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace profwatch::parse::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

inline constexpr uint64_t kMaxFieldNumber = (uint64_t{1} << 29) - 1;

inline std::string Num(uint64_t v) { return std::to_string(v); }

// Cursor over one complete in-memory message.
class Cursor {
 public:
  Cursor(const uint8_t* p, const uint8_t* end) : begin_(p), p_(p), end_(end) {}
  explicit Cursor(std::string_view s)
      : Cursor(reinterpret_cast<const uint8_t*>(s.data()),
               reinterpret_cast<const uint8_t*>(s.data()) + s.size()) {}

  bool Done() const { return p_ == end_; }
  size_t Offset() const { return static_cast<size_t>(p_ - begin_); }

  // The fast paths are inline; errors build their message out of line so
  // the hot loop stays small.
  [[gnu::always_inline]] bool Varint(uint64_t* out) {
    if (p_ < end_ && *p_ < 0x80) [[likely]] {
      *out = *p_++;
      return true;
    }
    if (end_ - p_ >= 10) [[likely]] {
      // Enough bytes for any varint: no end checks per byte.
      uint64_t r = 0;
      for (int shift = 0; shift < 64; shift += 7) {  // 10 bytes at most
        const uint8_t b = *p_++;
        r |= static_cast<uint64_t>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          *out = r;
          return true;
        }
      }
      return Fail("varint longer than 10 bytes");
    }
    return VarintNearEnd(out);
  }

  [[gnu::always_inline]] bool Tag(uint32_t* field, uint32_t* wire_type) {
    uint64_t tag = 0;
    if (!Varint(&tag)) return false;
    const uint64_t f = tag >> 3;
    if (f == 0 || f > kMaxFieldNumber) [[unlikely]] {
      return FailField(f);
    }
    *field = static_cast<uint32_t>(f);
    *wire_type = static_cast<uint32_t>(tag & 7);
    return true;
  }

  [[gnu::always_inline]] bool Bytes(std::string_view* out) {
    uint64_t n = 0;
    if (!Varint(&n)) return false;
    if (n > static_cast<uint64_t>(end_ - p_)) [[unlikely]] {
      return FailLength(n);
    }
    *out = std::string_view(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
    p_ += n;
    return true;
  }

  bool Skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: {
        uint64_t v;
        return Varint(&v);
      }
      case kFixed64:
        return Advance(8);
      case kFixed32:
        return Advance(4);
      case kLen: {
        std::string_view v;
        return Bytes(&v);
      }
      default:
        return Fail("unsupported wire type " + Num(wire_type));
    }
  }

  // Reads a field that must have `want` wire type; names it in the error.
  bool Expect(uint32_t wire_type, uint32_t want, const char* what) {
    if (wire_type == want) [[likely]] {
      return true;
    }
    return FailWireType(wire_type, want, what);
  }
  [[gnu::noinline]] bool FailWireType(uint32_t wire_type, uint32_t want, const char* what) {
    return Fail(std::string(what) + " has wire type " + Num(wire_type) + ", expected " + Num(want));
  }

  [[gnu::noinline]] bool VarintNearEnd(uint64_t* out) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return Fail("varint runs past the end of its message");
      const uint8_t b = *p_++;
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *out = r;
        return true;
      }
    }
    return Fail("varint longer than 10 bytes");
  }
  [[gnu::noinline]] bool FailField(uint64_t f) { return Fail("invalid field number " + Num(f)); }
  [[gnu::noinline]] bool FailLength(uint64_t n) {
    return Fail("length " + Num(n) + " exceeds the " + Num(static_cast<uint64_t>(end_ - p_)) +
                " bytes left in its message");
  }

  [[gnu::noinline]] bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  bool Advance(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) return Fail("fixed-width field runs past its message");
    p_ += n;
    return true;
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  std::string error_;
};

}  // namespace profwatch::parse::wire
