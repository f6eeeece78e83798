#include "figures/kernel_label.h"

#include <array>

namespace profwatch::figures {
namespace {

// Operator names whose symbols would otherwise read as brackets.
constexpr std::array<std::string_view, 9> kOperators = {"operator()", "operator[]", "operator<<",
                                                        "operator>>", "operator<=", "operator>=",
                                                        "operator->", "operator<",  "operator>"};

// Index just past the ')' matching the '(' at `open`, or npos.
size_t MatchParen(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// True when only qualifiers of a member function follow a parameter list.
bool OnlyQualifiersLeft(std::string_view rest) {
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (std::string_view q : {"const", "volatile", "&&", "&", " "}) {
      if (rest.starts_with(q)) {
        rest.remove_prefix(q.size());
        stripped = true;
      }
    }
  }
  return rest.empty();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Appends the name without template arguments and parameter list to `out`;
// false when the brackets do not balance.
bool Shorten(std::string_view s, std::string* out) {
  int angle = 0;
  size_t i = 0;
  while (i < s.size()) {
    if (angle == 0) {
      bool matched_operator = false;
      for (std::string_view op : kOperators) {
        if (s.substr(i).starts_with(op)) {
          out->append(op);
          i += op.size();
          matched_operator = true;
          break;
        }
      }
      if (matched_operator) continue;
    }
    const char c = s[i];
    if (c == '<') {
      ++angle;
    } else if (c == '>') {
      if (--angle < 0) return false;
    } else if (angle == 0 && c == '(') {
      const size_t end = MatchParen(s, i);
      if (end == std::string_view::npos) return false;
      if (OnlyQualifiersLeft(s.substr(end))) return true;  // the parameter list
      out->append(s.substr(i, end - i));                   // e.g. (anonymous namespace)
      i = end;
      continue;
    } else if (angle == 0) {
      out->push_back(c);
    }
    ++i;
  }
  return angle == 0;
}

}  // namespace

std::string ShortKernelName(std::string_view name) {
  std::string_view s = name;
  if (s.starts_with("void ")) s.remove_prefix(5);
  std::string shortened;
  if (!Shorten(s, &shortened) || Trim(shortened).empty()) {
    return CutUtf8(std::string(name), kMaxKernelLabelBytes);
  }
  return CutUtf8(std::string(Trim(shortened)), kMaxKernelLabelBytes);
}

std::string CutUtf8(std::string s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  // Step back over continuation bytes (10xxxxxx) to a character boundary.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

}  // namespace profwatch::figures
