// Who a share of the daemon's work belongs to. Anyone who can write under a
// watched root can create job and run directories, so the daemon shares its
// work and its caps by owner: the uid of the run directory, the user who
// created the run (in a group-writable job directory, each user's runs are
// their own), then job, then run. Directories walked and inotify watches
// are counted by the owner of the job directory they lie under
// (watch/scanner.h).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "core/log.h"

namespace profwatch::watch {

using Owner = uint32_t;

// No owner: a watched root itself (no job's), or an owner not known.
inline constexpr Owner kNoOwner = std::numeric_limits<Owner>::max();

// The `owner` label value: the uid in decimal ("none" for kNoOwner). A
// number, not a user name: resolving names may ask a directory service.
inline std::string OwnerLabel(Owner owner) {
  return owner == kNoOwner ? std::string("none") : std::to_string(owner);
}

// The `owner` field of a log line: the uid as a number (a JSON number in the
// JSON log), none (null; `none` in text) for kNoOwner.
inline LogField OwnerField(Owner owner) {
  if (owner == kNoOwner) return {"owner", nullptr};
  return {"owner", static_cast<uint64_t>(owner)};
}

}  // namespace profwatch::watch
