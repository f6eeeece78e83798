// Internal to aggregate/. NameTable: interns kernel names to dense ids 0, 1,
// 2, ... in first-seen order. Every kernel event looks its name up, so this is
// an open-addressing table over a power-of-two array of (hash tag, id):
// std::unordered_map cost a division and a node chase per event. In front of
// it, a small direct-mapped cache keyed by the length and the first and last
// 8 bytes answers the names of a busy stretch without hashing them whole
// (hashing was ~2/3 of a lookup); every hit is confirmed by comparing the
// names, so a collision only costs the full lookup. Not thread-safe (one
// owner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace profwatch::aggregate {

class NameTable {
 public:
  // The id of `s`; `added` tells whether `s` was new (its id is size() - 1).
  uint32_t Intern(std::string_view s, bool& added);
  const std::string& operator[](uint32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  struct Slot {
    uint32_t tag = 0;          // high half of the name's hash: most misses end here
    uint32_t id_plus_one = 0;  // 0: empty
  };
  uint32_t Lookup(std::string_view s, bool& added);  // the table, without the cache
  void Grow();

  std::vector<Slot> slots_;  // size a power of two, at most half full
  std::vector<std::string> names_;
  std::vector<uint64_t> hashes_;  // per id, to rebuild slots_ on growth
  static constexpr int kCacheBits = 8;
  uint32_t cache_[1 << kCacheBits] = {};  // id + 1 of a recent name, 0: empty
};

}  // namespace profwatch::aggregate
