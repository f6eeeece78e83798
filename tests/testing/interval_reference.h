// Plain reference arithmetic on intervals for tests: unions and differences
// computed the obvious way, independent of aggregate/'s merge and sweep.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace profwatch::testing {

// A set of half-open [start, end) intervals kept as their union.
class ReferenceUnion {
 public:
  void Add(int64_t start, int64_t end) {
    if (end > start) v_.emplace_back(start, end);
  }
  void Append(const ReferenceUnion& other) {
    v_.insert(v_.end(), other.v_.begin(), other.v_.end());
  }
  // The union as sorted, disjoint intervals.
  std::vector<std::pair<int64_t, int64_t>> Disjoint() const {
    std::vector<std::pair<int64_t, int64_t>> s = v_, out;
    std::sort(s.begin(), s.end());
    for (const auto& i : s) {
      if (!out.empty() && i.first <= out.back().second) {
        out.back().second = std::max(out.back().second, i.second);
      } else {
        out.push_back(i);
      }
    }
    return out;
  }
  int64_t Length() const {
    int64_t total = 0;
    for (const auto& [s, e] : Disjoint()) total += e - s;
    return total;
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> v_;
};

// Length of a \ b.
inline int64_t DifferenceLength(const ReferenceUnion& a, const ReferenceUnion& b) {
  ReferenceUnion both = a;
  both.Append(b);
  return both.Length() - b.Length();
}

}  // namespace profwatch::testing
