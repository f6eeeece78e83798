#include "aggregate/name_table.h"

namespace profwatch::aggregate {

uint32_t NameTable::Intern(std::string_view s, bool& added) {
  if (auto it = ids_.find(s); it != ids_.end()) {
    added = false;
    return it->second;
  }
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  ids_.emplace(names_.back(), id);
  added = true;
  return id;
}

}  // namespace profwatch::aggregate
