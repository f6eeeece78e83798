#include "aggregate/region.h"

#include <vector>

namespace profwatch::aggregate {
namespace {

// Splits at '/' outside parentheses.
std::vector<std::string_view> SplitTopLevel(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && depth > 0) --depth;
    if (s[i] == '/' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

// Appends the components of one path element to `out`: jit frames vanish,
// wrappers are unwrapped (their inner path may hold several components).
void Components(std::string_view c, std::vector<std::string_view>& out, int nesting = 0) {
  if (c.empty() || nesting > 64) return;
  const size_t open = c.find('(');
  if (open != std::string_view::npos && open > 0 && c.back() == ')') {
    const std::string_view fn = c.substr(0, open);
    if (fn == "jit" || fn == "pjit") return;
    const std::string_view inner = c.substr(open + 1, c.size() - open - 2);
    for (std::string_view part : SplitTopLevel(inner)) Components(part, out, nesting + 1);
    return;
  }
  out.push_back(c);
}

}  // namespace

std::string RegionOfScope(std::string_view scope, int depth) {
  std::vector<std::string_view> parts;
  for (std::string_view c : SplitTopLevel(scope)) Components(c, parts);
  std::string region;
  for (size_t i = 0; i < parts.size() && static_cast<int>(i) < depth; ++i) {
    if (i > 0) region += '/';
    region += parts[i];
  }
  return region;
}

}  // namespace profwatch::aggregate
