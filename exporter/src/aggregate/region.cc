#include "aggregate/region.h"

#include <algorithm>
#include <vector>

#include "parse/hlo_schedule.h"

namespace profwatch::aggregate {
namespace {

// Appends the components of one path element to `out`: jit frames vanish,
// wrappers are unwrapped (their inner path may hold several components).
void Components(std::string_view c, std::vector<std::string_view>& out, int nesting = 0) {
  if (c.empty() || nesting > 64) return;
  const size_t open = c.find('(');
  if (open != std::string_view::npos && open > 0 && c.back() == ')') {
    const std::string_view fn = c.substr(0, open);
    if (fn == "jit" || fn == "pjit") return;
    const std::string_view inner = c.substr(open + 1, c.size() - open - 2);
    for (std::string_view part : parse::ScopeComponents(inner)) Components(part, out, nesting + 1);
    return;
  }
  out.push_back(c);
}

}  // namespace

std::string RegionOfScope(std::string_view scope, int depth) {
  std::vector<std::string_view> parts;
  for (std::string_view c : parse::ScopeComponents(scope)) Components(c, parts);
  std::string region;
  for (size_t i = 0; i < parts.size() && static_cast<int>(i) < depth; ++i) {
    if (i > 0) region += '/';
    region += parts[i];
  }
  return region;
}

std::string_view AnnotationRegion(std::string_view name) {
  static constexpr std::string_view kCompiled = "## Call CompiledFxGraph ";
  static constexpr std::string_view kEnd = " ##";
  if (name.size() > kCompiled.size() + kEnd.size() && name.starts_with(kCompiled) &&
      name.ends_with(kEnd)) {
    return "## Call CompiledFxGraph ##";
  }
  return name;
}

AnnotationMatcher::AnnotationMatcher(std::vector<Annotation> annotations)
    : sorted_(std::move(annotations)) {
  std::stable_sort(sorted_.begin(), sorted_.end(), [](const Annotation& a, const Annotation& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
}

std::optional<uint32_t> AnnotationMatcher::RegionOf(int64_t start, int64_t end) {
  while (next_ < sorted_.size() && sorted_[next_].start <= start) open_.push_back(sorted_[next_++]);
  // Annotations that ended by now contain no later kernel either. Nested
  // ranges leave the ended ones on top; overlapping ones may leave some
  // below, dropped once the list grows.
  while (!open_.empty() && open_.back().end <= start) open_.pop_back();
  if (open_.size() > 64) {
    std::erase_if(open_, [&](const Annotation& a) { return a.end <= start; });
  }
  for (size_t i = open_.size(); i-- > 0;) {
    if (open_[i].end >= end) return open_[i].region;
  }
  return std::nullopt;
}

}  // namespace profwatch::aggregate
