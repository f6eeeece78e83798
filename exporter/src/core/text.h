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

}  // namespace profwatch
