// The store stage's fixed bounds, in one place (issue 62): what the state
// file, the history and the in-flight journal keep. The --history file's
// size per owner is core/caps.h's kHistoryBytesPerOwner.
//
// Thread-safety: constants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace profwatch::store {

// How many set-aside files (`<path>.corrupt-<unix seconds>`) are kept beside
// the state file: a file that keeps failing is set aside at every start, and
// only the newest few are worth reading.
inline constexpr size_t kMaxSetAsideStateFiles = 3;
// The longest history line written whole: twice the per-run state cap
// (core/caps.h kRunStateBytes), since a line holds the run's state and a
// report of it.
inline constexpr uint64_t kMaxHistoryLineBytes = 64ull << 20;
// Records the in-flight journal keeps besides the ones in flight.
inline constexpr size_t kMaxKeptJournalRecords = 256;

}  // namespace profwatch::store
