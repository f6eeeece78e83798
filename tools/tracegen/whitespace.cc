#include "whitespace.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "gen_util.h"

namespace profwatch::tracegen {

bool ParseWhitespace(std::string_view name, Whitespace* out) {
  if (name == "compact") {
    *out = Whitespace::kCompact;
  } else if (name == "indented") {
    *out = Whitespace::kIndented;
  } else if (name == "brace") {
    *out = Whitespace::kBrace;
  } else {
    return false;
  }
  return true;
}

std::string Respace(std::string_view json, Whitespace style) {
  std::string out;
  out.reserve(json.size() + json.size() / 4);
  int depth = 0;
  auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<size_t>(level < 0 ? 0 : level) * 2, ' ');
  };
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      // The whole string, escapes included, as it is.
      size_t j = i + 1;
      while (j < json.size() && json[j] != '"') j += json[j] == '\\' ? 2 : 1;
      out.append(json.substr(i, j + 1 - i));
      i = j;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    const bool closing = c == '}' || c == ']';
    // An empty object or array stays "{}" / "[]".
    const bool empty = closing && !out.empty() && (out.back() == '{' || out.back() == '[');
    if (closing) --depth;
    if (style == Whitespace::kIndented && closing && !empty) newline(depth);
    if (style == Whitespace::kBrace && c == '}' && !empty) out += "\n    ";
    out += c;
    if (c == '{' || c == '[') ++depth;
    if (style == Whitespace::kIndented) {
      const bool opening = c == '{' || c == '[';
      // Peek past whitespace: an opening bracket followed by its close
      // stays on its line.
      size_t k = i + 1;
      while (k < json.size() &&
             (json[k] == ' ' || json[k] == '\t' || json[k] == '\n' || json[k] == '\r')) {
        ++k;
      }
      const bool next_closes = k < json.size() && (json[k] == '}' || json[k] == ']');
      if ((opening && !next_closes) || c == ',') newline(depth);
      if (c == ':') out += ' ';
    } else if (style == Whitespace::kBrace && (c == ',' || c == ':')) {
      out += ' ';
    }
  }
  return out;
}

bool RespaceFile(const std::string& in, const std::string& out, Whitespace style,
                 std::string* error) {
  gzFile gz = gzopen(in.c_str(), "rb");  // reads plain files as they are
  if (gz == nullptr) {
    *error = "cannot read " + in + ": " + std::strerror(errno);
    return false;
  }
  std::string text;
  char buf[1 << 16];
  int n;
  while ((n = gzread(gz, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  const bool read_ok = n == 0;
  gzclose(gz);
  if (!read_ok) {
    *error = "cannot read " + in;
    return false;
  }
  const std::string spaced = Respace(text, style);
  if (out.size() > 3 && out.compare(out.size() - 3, 3, ".gz") == 0) {
    return WriteGzipParts(out, {&spaced}, error);
  }
  FILE* f = std::fopen(out.c_str(), "wb");
  if (f == nullptr) {
    *error = "cannot write " + out + ": " + std::strerror(errno);
    return false;
  }
  const bool ok = std::fwrite(spaced.data(), 1, spaced.size(), f) == spaced.size();
  if (std::fclose(f) != 0 || !ok) {
    *error = "cannot write " + out;
    return false;
  }
  return true;
}

}  // namespace profwatch::tracegen
