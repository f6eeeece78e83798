// Internal to aggregate/. NameTable: interns kernel names to dense ids 0, 1,
// 2, ... in first-seen order. Not thread-safe (one owner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace profwatch::aggregate {

class NameTable {
 public:
  // The id of `s`; `added` tells whether `s` was new (its id is size() - 1).
  uint32_t Intern(std::string_view s, bool& added);
  const std::string& operator[](uint32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  // Looks names up by string_view without building a std::string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  std::vector<std::string> names_;
};

}  // namespace profwatch::aggregate
