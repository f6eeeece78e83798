// NameTable (see name_table.h): linear probing, grown at half full.
#include "aggregate/name_table.h"

#include <cstring>

namespace profwatch::aggregate {
namespace {

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Every byte counts (kernel names share long prefixes and differ anywhere),
// 8 bytes per multiply, inlined: std::hash's out-of-line murmur took 3% of
// a whole analysis. Only the table's speed depends on its quality.
uint64_t HashName(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = (n + 1) * kMul;
  auto mix = [&h](uint64_t v) {
    h = (h ^ v) * kMul;
    h ^= h >> 32;
  };
  if (n >= 8) {
    for (; n > 8; p += 8, n -= 8) mix(Load64(p));
    mix(Load64(s.data() + s.size() - 8));  // the last 8 bytes, overlapping
  } else {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
    mix(v);
  }
  h *= kMul;
  return h ^ (h >> 29);
}

}  // namespace

uint32_t NameTable::Intern(std::string_view s, bool& added) {
  if (slots_.empty()) slots_.resize(64);
  const uint64_t h = HashName(s);
  const auto tag = static_cast<uint32_t>(h >> 32);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot slot = slots_[i];
    if (slot.id_plus_one == 0) break;
    if (slot.tag == tag && names_[slot.id_plus_one - 1] == s) {
      added = false;
      return slot.id_plus_one - 1;
    }
  }
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  hashes_.push_back(h);
  added = true;
  if (2 * names_.size() > slots_.size()) {
    Grow();  // re-inserts every id, this one included
  } else {
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      if (slots_[i].id_plus_one == 0) {
        slots_[i] = Slot{tag, id + 1};
        break;
      }
    }
  }
  return id;
}

void NameTable::Grow() {
  slots_.assign(slots_.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (uint32_t id = 0; id < names_.size(); ++id) {
    const uint64_t h = hashes_[id];
    size_t i = h & mask;
    while (slots_[i].id_plus_one != 0) i = (i + 1) & mask;
    slots_[i] = Slot{static_cast<uint32_t>(h >> 32), id + 1};
  }
}

}  // namespace profwatch::aggregate
