#include "aggregate/name_table.h"

#include <cstdio>

namespace profwatch::aggregate {

std::string CutName(std::string_view name, size_t max_bytes) {
  if (name.size() <= max_bytes) return std::string(name);
  // FNV-1a over the whole name: the marker tells long names of one prefix apart.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  char marker[64];
  const int n = std::snprintf(marker, sizeof(marker), "\xE2\x80\xA6[%zu bytes #%016llx]",
                              name.size(), static_cast<unsigned long long>(h));
  const size_t tail = static_cast<size_t>(n);
  size_t keep = max_bytes > tail ? max_bytes - tail : 0;
  // Never cut inside a UTF-8 character: back off over continuation bytes.
  while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
  std::string out(name.substr(0, keep));
  out.append(marker, tail);
  return out;
}

WindowNames::WindowNames(NameLimits limits,
                         std::vector<std::shared_ptr<const classify::Classifier>> candidates)
    : limits_(limits), candidates_(std::move(candidates)) {}

std::optional<std::string_view> WindowNames::Keep(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = names_.find(name); it != names_.end()) return std::string_view(*it);
  if (names_.size() >= limits_.max_names_per_window ||
      bytes_ + name.size() > limits_.max_name_bytes_per_window) {
    return std::nullopt;
  }
  bytes_ += name.size();
  return std::string_view(*names_.emplace(name).first);
}

std::string_view WindowNames::KeepAlways(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = names_.emplace(name);
  if (added) bytes_ += name.size();
  return *it;
}

size_t WindowNames::names() const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.size();
}

uint64_t WindowNames::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::string_view NameTable::Store(std::string_view s, bool always) {
  if (pool_ != nullptr) {
    if (always) return pool_->KeepAlways(s);
    auto kept = pool_->Keep(s);
    return kept ? *kept : std::string_view();
  }
  return own_.emplace_back(s);
}

std::optional<uint32_t> NameTable::Add(std::string_view s) {
  const std::string_view kept = Store(s, false);
  if (kept.data() == nullptr) return std::nullopt;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.push_back(kept);
  ids_.emplace(kept, id);
  return id;
}

uint32_t NameTable::AddUnindexed(std::string_view s) {
  const auto id = static_cast<uint32_t>(names_.size());
  names_.push_back(Store(s, true));
  return id;
}

std::optional<uint32_t> NameTable::Intern(std::string_view s, bool& added) {
  added = false;
  if (auto id = Find(s)) return id;
  auto id = Add(s);
  added = id.has_value();
  return id;
}

}  // namespace profwatch::aggregate
