#include "core/text.h"

namespace profwatch {
namespace {

void AppendHexEscape(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

}  // namespace

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return n;
}

bool ValidUtf8Into(std::string_view s, std::string& out) {
  // Nearly always ASCII: one pass to check, one copy.
  size_t i = 0;
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  out.assign(s.data(), i);
  if (i == s.size()) return false;
  bool replaced = false;
  out.reserve(s.size());
  while (i < s.size()) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      replaced = true;
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return replaced;
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  ValidUtf8Into(s, out);
  return out;
}

std::string EscapeControl(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t n = c < 0x80 ? 0 : Utf8SequenceLength(s, i);
    // U+0080..U+009F (C1 controls) are C2 80..C2 9F.
    const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
    if (n == 0 || c1) {
      const size_t bytes = c1 ? 2 : 1;
      for (size_t k = 0; k < bytes; ++k) AppendHexEscape(out, static_cast<unsigned char>(s[i + k]));
      i += bytes;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

size_t ReversibleUtf8Into(std::string_view s, std::string& out) {
  // Nearly always ASCII without a backslash: one pass to check, one copy.
  size_t i = 0;
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80 && s[i] != '\\') ++i;
  out.assign(s.data(), i);
  if (i == s.size()) return 0;
  size_t escaped = 0;
  out.reserve(s.size() + 8);
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      // Doubled only where the decoder would otherwise read an escape.
      const bool doubled = i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == '\\' ||
                                                Utf8SequenceLength(s, i + 1) == 0);
      out += doubled ? "\\\\" : "\\";
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      AppendHexEscape(out, c);
      ++escaped;
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return escaped;
}

std::string ReversibleUtf8(std::string_view s) {
  std::string out;
  ReversibleUtf8Into(s, out);
  return out;
}

std::string FromReversibleUtf8(std::string_view s) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (s.find('\\') == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i++];
    } else if (s[i + 1] == '\\') {
      out += '\\';
      i += 2;
    } else if (s[i + 1] == 'x' && i + 3 < s.size() && hex(s[i + 2]) >= 0 && hex(s[i + 3]) >= 0) {
      out += static_cast<char>(hex(s[i + 2]) * 16 + hex(s[i + 3]));
      i += 4;
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace profwatch
