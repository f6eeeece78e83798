// Bytes from disk (directory and kernel names, log lines) made safe for the
// outputs that carry them: valid UTF-8 for JSON and label values, one line
// of printable text for the text log and the table report.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace profwatch {

// The length of the well-formed UTF-8 sequence starting at s[i] (1 to 4);
// 0 when the byte there does not start one (a stray continuation byte, an
// overlong form, a surrogate, a code point above U+10FFFF, a cut sequence).
size_t Utf8SequenceLength(std::string_view s, size_t i);

// `s` with every byte that does not start a well-formed UTF-8 sequence
// replaced by U+FFFD.
std::string ValidUtf8(std::string_view s);
// The same into `out`; true when some byte was replaced.
bool ValidUtf8Into(std::string_view s, std::string& out);

// `s` as one line of printable text: valid UTF-8 is kept, control
// characters (C0, DEL, and C1 as the U+0080..U+009F sequences) and every
// byte of an invalid sequence are written as \xNN, one escape per byte. So
// a name cannot end a line, move a terminal's cursor or break its
// encoding, and the escapes still tell the bytes apart.
std::string EscapeControl(std::string_view s);

// The reversible form of names (and every other string) written to the
// --state, --history and journal files, the JSON outputs and label values.
// Valid UTF-8 passes unchanged except for one character: the escape, `\`.
//   - a byte that is not part of well-formed UTF-8 (Utf8SequenceLength 0:
//     a stray continuation byte, an overlong form, an encoded surrogate, a
//     cut sequence, 0xF5..0xFF) is written \xHH (lower-case hex);
//   - a literal `\` is doubled to `\\` only where it would otherwise begin
//     an escape: when the next byte is `x`, `\`, or a byte written \xHH.
//     Elsewhere (`a\b`, a trailing `\`) it stays one byte.
// So the result is valid UTF-8, and ReversibleUtf8 is injective:
// FromReversibleUtf8 gives back the exact bytes, and a valid name that
// contains the escape text literally (`x\xff`) never meets the name with the
// byte (`x` 0xFF): they are written `x\\xff` and `x\xff`. Why this and not
// U+FFFD, \udcHH or a marker: U+FFFD merged distinct names into one key;
// JSON parsers (nlohmann) reject lone surrogates; and this keeps every name
// without `\x` or `\\` in it (nearly all) byte for byte as before, the
// names of files written by earlier versions included.
std::string ReversibleUtf8(std::string_view s);
// The same into `out`; returns how many bytes were written as \xHH (0 for
// valid UTF-8, even when a `\` was doubled). `out` differs from `s` exactly
// when it is longer.
size_t ReversibleUtf8Into(std::string_view s, std::string& out);
// The inverse: `\\` -> `\`, `\xHH` (either case) -> the byte; any other `\`
// is kept as it is (text of earlier versions, written without the escape).
std::string FromReversibleUtf8(std::string_view s);

// ReversibleUtf8 applied in place to every string value (not object keys)
// of a JSON tree (nlohmann::json or ordered_json), before it is dumped.
template <class Json>
void ReversibleUtf8Strings(Json& j) {
  if (j.is_string()) {
    auto& s = j.template get_ref<std::string&>();
    std::string out;
    ReversibleUtf8Into(s, out);
    if (out.size() != s.size()) s = std::move(out);
  } else if (j.is_structured()) {
    for (auto& child : j) ReversibleUtf8Strings(child);
  }
}

}  // namespace profwatch
