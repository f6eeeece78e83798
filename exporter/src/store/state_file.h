// The daemon's --state file: the published snapshot (runs and their latest
// windows, in store/state_json.h's profwatch.state.v1 form) plus the list of
// analysed windows with their files' fingerprints, so a restarted daemon
// serves the same metrics at once and analyses nothing twice.
//
//   {"schema": "profwatch.daemon.v1",
//    "saved_unix": 1700000000.5,
//    "snapshot": {"schema": "profwatch.state.v1", "runs": [...], ...},
//    "windows": [{"training_job": "j", "run": "r", "run_dir": "/jobs/j/r",
//                 "first_dir": "/jobs/j/r/tensorboard/plugins/profile/2024_...",
//                 "analyzed_unix": 1700000000.1,
//                 "files": [{"path": "...", "dev": 2049, "ino": 1234,
//                            "size": 5678, "mtime_ns": 1700000000123456789}]}]}
//
// Writes are atomic: temp file in the same directory, fsync, rename, fsync of
// the directory. Thread-safety: pure functions; callers serialise writes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "core/result.h"
#include "snapshot/snapshot.h"
#include "store/limits.h"
#include "window/assembler.h"

namespace profwatch::store {

inline constexpr std::string_view kDaemonStateSchema = "profwatch.daemon.v1";

// An entry of the file left out on loading, alone: a run (reason "invalid"
// or "duplicate", store/state_json.h DroppedRun) or a malformed window record
// ("invalid"); `what` names where and why.
struct DroppedStateEntry {
  std::string reason;
  std::string what;
};

struct DaemonState {
  snapshot::Snapshot snapshot;
  std::vector<window::AnalysedWindow> windows;
  // Filled on parsing; never written.
  std::vector<DroppedStateEntry> dropped;
};

std::string SerializeDaemonState(const DaemonState& state, double saved_unix);
// kCorrupt for text that is not a daemon state document (not JSON, not an
// object, no snapshot or windows), kUnsupported for another schema. A run or
// window record that cannot be read is dropped alone (DaemonState::dropped).
Result<DaemonState> ParseDaemonState(std::string_view text);

// Atomic write-to-temp + fsync + rename.
Status WriteFileAtomic(const std::string& path, std::string_view data);

// Whether a file at `path` can be written the way WriteFileAtomic and the
// history's appends write it: its directory exists and takes a new file
// (created and removed again), and `path` is no directory. kIo or
// kPermission naming the path otherwise. For checks at start: a daemon
// that could never save fails then, not at its first save.
Status CheckWritable(const std::string& path);

// Loads `path`. A missing file is an empty state (not an error). An unreadable
// file, or one ParseDaemonState refuses as a whole, is renamed to
// `<path>.corrupt-<unix seconds>` and an empty state returned; the set-aside
// files beyond the kMaxSetAsideStateFiles newest are removed; `*warning` then
// says what happened (and which files went).
DaemonState LoadDaemonStateOrSetAside(const std::string& path, double now_unix,
                                      std::optional<LogEvent>* warning);

// Removes all but the `keep` newest `<path>.corrupt-<digits>` files (by the
// time in their name); returns the paths removed.
std::vector<std::string> PruneSetAsideStateFiles(const std::string& path, size_t keep);

// When the daemon may save its state file next. A save serialises every run
// and window the daemon holds, so it costs time in proportion to them, and
// the daemon serialises while holding the lock its scan and workers need. A fixed
// gap let a daemon holding many thousand runs spend most of its time saving
// while results landed; here the gap after a save is the larger of `min_gap`
// and `cost_factor` times that save's duration, so saving takes at most
// about 1 / (1 + cost_factor) of the daemon's time however large the state.
// A kill loses (re-analyses at the next start) at most the results of one gap.
// The daemon paces its snapshot publishes (a copy of every run) the same way.
// Times come from the caller's (injected) clock. Not thread-safe.
class SaveThrottle {
 public:
  SaveThrottle(std::chrono::nanoseconds min_gap, int cost_factor)
      : min_gap_(min_gap), cost_factor_(cost_factor) {}
  // True when a save may start at `now` (always before the first save).
  bool Due(TimePoint now) const { return now >= next_; }
  // A save ran from `started` to `finished`; a clock step backwards counts
  // as a free save.
  void Saved(TimePoint started, TimePoint finished);
  // The earliest time of the next save; TimePoint::min() before the first.
  TimePoint next() const { return next_; }

 private:
  std::chrono::nanoseconds min_gap_;
  int cost_factor_;
  TimePoint next_ = TimePoint::min();
};

}  // namespace profwatch::store
