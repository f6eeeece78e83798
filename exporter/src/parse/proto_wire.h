// Protocol-buffer wire format: the one reader the XSpace and HLO decoders
// share (parse-internal).
//  - Cursor: one complete in-memory message. Every read checks the end of
//    the enclosing message: running past it means the bytes are corrupt (the
//    enclosing length was complete), never truncated.
//  - Stream: the top level of a message pulled from a ByteSource in chunks,
//    for a message too large to hold (an XSpace): tags, lengths, skips, and
//    whole fields handed over as bytes for a Cursor. Running out of input is
//    kTruncated there.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "parse/limits.h"
#include "read/byte_source.h"

namespace profwatch::parse::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

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

  // Calls on_field(field, wire_type) for each field left in the message;
  // on_field reads or skips the value and returns false on an error (set on
  // this cursor).
  template <typename OnField>
  [[gnu::always_inline]] bool Fields(OnField&& on_field) {
    while (!Done()) {
      uint32_t field = 0, wire_type = 0;
      if (!Tag(&field, &wire_type) || !on_field(field, wire_type)) return false;
    }
    return true;
  }

  // A field's value of the wire type its schema gives it; a field of another
  // wire type is an error that names it (`what`).
  [[gnu::always_inline]] bool Uint(uint32_t wire_type, const char* what, uint64_t* out) {
    return Expect(wire_type, kVarint, what) && Varint(out);
  }
  [[gnu::always_inline]] bool Int(uint32_t wire_type, const char* what, int64_t* out) {
    uint64_t v = 0;
    if (!Uint(wire_type, what, &v)) return false;
    *out = static_cast<int64_t>(v);
    return true;
  }
  [[gnu::always_inline]] bool String(uint32_t wire_type, const char* what, std::string_view* out) {
    return Expect(wire_type, kLen, what) && Bytes(out);
  }
  // A length-delimited field read as a message by read(Cursor&); an error
  // inside it becomes this cursor's error.
  template <typename Read>
  [[gnu::always_inline]] bool Message(uint32_t wire_type, const char* what, Read&& read) {
    std::string_view bytes;
    if (!String(wire_type, what, &bytes)) return false;
    Cursor inner(bytes);
    if (read(inner)) [[likely]] {
      return true;
    }
    return Fail(inner.error());
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

// A tag read from a Stream: the field, its wire type, and the offset of the
// tag's first byte in the input.
struct StreamTag {
  uint64_t field = 0;
  uint32_t wire_type = 0;
  uint64_t at = 0;
};

// The top level of a message pulled from `source` one chunk at a time (into
// `buf`, which the caller keeps between reads). Errors name the input
// offset; running out of input inside a field is kTruncated.
class Stream {
 public:
  Stream(read::ByteSource& source, size_t chunk_bytes, std::vector<char>& buf)
      : source_(source), buf_(buf) {
    buf_.resize(std::max<size_t>(chunk_bytes, 64));
  }

  uint64_t Offset() const { return consumed_ - (end_ - pos_); }
  uint64_t Consumed() const { return consumed_; }
  // The bytes read but not consumed yet (at least one after a Fill that
  // returned true).
  std::string_view Peek() const { return std::string_view(buf_.data() + pos_, end_ - pos_); }

  // Fills the buffer if empty. Returns false at clean EOF.
  Result<bool> Fill() {
    if (pos_ < end_) return true;
    if (eof_) return false;
    auto n = source_.Read(buf_.data(), buf_.size());
    if (!n) return tl::unexpected(n.error());
    pos_ = 0;
    end_ = *n;
    consumed_ += *n;
    if (*n == 0) eof_ = true;
    return *n > 0;
  }

  // The next tag, its field number unchecked. `at_eof_ok`: the input may
  // end before its first byte (the end of the message): nullopt then; else
  // that is kTruncated too.
  Result<std::optional<StreamTag>> Tag(bool at_eof_ok = true, const char* what = "a field tag") {
    const uint64_t at = Offset();
    auto tag = ReadVarint(at_eof_ok, what);
    if (!tag) return tl::unexpected(tag.error());
    if (!tag->has_value()) return std::optional<StreamTag>();
    return std::optional<StreamTag>(StreamTag{**tag >> 3, static_cast<uint32_t>(**tag & 7), at});
  }

  // A varint that may straddle reads.
  Result<uint64_t> Varint(const char* what) {
    auto v = ReadVarint(/*at_eof_ok=*/false, what);
    if (!v) return tl::unexpected(v.error());
    return **v;
  }

  // Returns `n` bytes: a view into the read buffer when they are all there,
  // else a copy assembled in `scratch`. `scratch` grows with the bytes that
  // actually arrive (capped at `n`), so a lying length prefix costs no more
  // memory than the input really has.
  Result<std::string_view> Bytes(uint64_t n, std::string& scratch, const std::string& what) {
    if (n <= end_ - pos_) {
      std::string_view v(buf_.data() + pos_, static_cast<size_t>(n));
      pos_ += n;
      return v;
    }
    scratch.clear();
    const uint64_t start = Offset();
    while (scratch.size() < n) {
      auto more = Fill();
      if (!more) return tl::unexpected(more.error());
      if (!*more) return Short(what, start, scratch.size(), n);
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n - scratch.size(), end_ - pos_));
      if (scratch.capacity() < scratch.size() + take) {
        const uint64_t want = std::max<uint64_t>(scratch.capacity() * 2, scratch.size() + take);
        scratch.reserve(static_cast<size_t>(std::min<uint64_t>(want, n)));
      }
      scratch.append(buf_.data() + pos_, take);
      pos_ += take;
    }
    return std::string_view(scratch);
  }

  // Skips `n` bytes without keeping them.
  Status Skip(uint64_t n, const std::string& what) {
    const uint64_t start = Offset();
    uint64_t left = n;
    while (left > 0) {
      auto more = Fill();
      if (!more) return tl::unexpected(more.error());
      if (!*more) return Short(what, start, n - left, n);
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left, end_ - pos_));
      pos_ += take;
      left -= take;
    }
    return {};
  }

  // Skips the value of a field of tag `tag`. REQUIRES: a wire type other
  // than the groups' (kCorrupt otherwise).
  Status SkipValue(const StreamTag& tag) {
    switch (tag.wire_type) {
      case kVarint: {
        auto v = Varint("a varint field");
        if (!v) return tl::unexpected(v.error());
        return {};
      }
      case kFixed64:
      case kFixed32:
        return Skip(tag.wire_type == kFixed64 ? 8 : 4, "fixed-width field " + Num(tag.field));
      case kLen: {
        auto n = Varint("a length prefix");
        if (!n) return tl::unexpected(n.error());
        return Skip(*n, "field " + Num(tag.field));
      }
      default:
        return MakeError(ErrorCode::kCorrupt,
                         "byte " + Num(tag.at) + ": unsupported wire type " + Num(tag.wire_type));
    }
  }

 private:
  Result<std::optional<uint64_t>> ReadVarint(bool at_eof_ok, const char* what) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      auto more = Fill();
      if (!more) return tl::unexpected(more.error());
      if (!*more) {
        if (shift == 0 && at_eof_ok) return std::optional<uint64_t>();
        return MakeError(ErrorCode::kTruncated,
                         "byte " + Num(Offset()) + ": input ends inside " + what);
      }
      const uint8_t b = static_cast<uint8_t>(buf_[pos_++]);
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return std::optional<uint64_t>(r);
    }
    return MakeError(ErrorCode::kCorrupt,
                     "byte " + Num(Offset()) + ": " + what + " is a varint longer than 10 bytes");
  }

  static tl::unexpected<Error> Short(const std::string& what, uint64_t start, uint64_t got,
                                     uint64_t n) {
    return MakeError(ErrorCode::kTruncated, what + " at byte " + Num(start) +
                                                ": input ends after " + Num(got) + " of its " +
                                                Num(n) + " bytes");
  }

  read::ByteSource& source_;
  std::vector<char>& buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false;
};

}  // namespace profwatch::parse::wire
