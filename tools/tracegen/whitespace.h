// Re-spacing a JSON text: the same tokens, other whitespace between them
// (JSON allows any amount between any two tokens). Readers must report the
// same from every form; older PyTorch writes Kineto traces pretty-printed.
#pragma once

#include <string>
#include <string_view>

namespace profwatch::tracegen {

enum class Whitespace {
  kCompact,   // no whitespace at all outside strings
  kIndented,  // one value a line, two spaces a level (json.dumps(indent=2))
  kBrace,     // ", " and ": ", and a newline and four spaces before every
              // closing brace, arrays on one line (older Kineto)
};

// Parses "compact", "indented" or "brace".
bool ParseWhitespace(std::string_view name, Whitespace* out);

// `json` with its whitespace outside strings replaced by `style`'s. The
// text is not validated: a string's escapes are kept as they are.
std::string Respace(std::string_view json, Whitespace style);

// Reads `in` (gzip or plain), writes it re-spaced to `out` (gzip when `out`
// ends in .gz).
bool RespaceFile(const std::string& in, const std::string& out, Whitespace style,
                 std::string* error);

}  // namespace profwatch::tracegen
