// Who a share of the daemon's work belongs to. Anyone who can write under a
// watched root can create job directories, so the daemon shares its work and
// its caps by owner: the uid of the job directory (the directory the
// training_job label is named after, watch/scanner.h), then job, then run.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace profwatch::watch {

using Owner = uint32_t;

// No owner: a watched root itself (no job's), or an owner not known.
inline constexpr Owner kNoOwner = std::numeric_limits<Owner>::max();

// The `owner` label value: the uid in decimal ("none" for kNoOwner). A
// number, not a user name: resolving names may ask a directory service.
inline std::string OwnerLabel(Owner owner) {
  return owner == kNoOwner ? std::string("none") : std::to_string(owner);
}

}  // namespace profwatch::watch
