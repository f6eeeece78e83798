// NameTable (see name_table.h): linear probing, grown at half full.
#include "aggregate/name_table.h"

#include <cstring>
#include <functional>

namespace profwatch::aggregate {
namespace {

// The cache slot of `s`: its length and first and last 8 bytes, mixed.
size_t CacheSlot(std::string_view s, int bits) {
  uint64_t head = 0, tail = 0;
  if (s.size() >= 8) {
    std::memcpy(&head, s.data(), 8);
    std::memcpy(&tail, s.data() + s.size() - 8, 8);
  } else if (!s.empty()) {
    std::memcpy(&head, s.data(), s.size());
  }
  const uint64_t mixed = (head * 0x9E3779B97F4A7C15ULL) ^ (tail * 0xC2B2AE3D27D4EB4FULL) ^ s.size();
  return static_cast<size_t>((mixed * 0xFF51AFD7ED558CCDULL) >> (64 - bits));
}

}  // namespace

uint32_t NameTable::Intern(std::string_view s, bool& added) {
  uint32_t& cached = cache_[CacheSlot(s, kCacheBits)];
  if (cached != 0 && names_[cached - 1] == s) {
    added = false;
    return cached - 1;
  }
  const uint32_t id = Lookup(s, added);
  cached = id + 1;
  return id;
}

uint32_t NameTable::Lookup(std::string_view s, bool& added) {
  if (slots_.empty()) slots_.resize(64);
  const uint64_t h = std::hash<std::string_view>{}(s);
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
