// The daemon's --history file, written by HistoryWriter and read back by
// `profwatch compare` (FindInHistory). Every analysed window becomes one JSON
// line (JSON Lines):
//   {"schema":"profwatch.history.v1","time":<unix s>,"training_job":..,
//    "run":..,"window":..,"incomplete":..,
//    "state":<the run's RunState, as in the state file (state_json.h)>,
//    "report":<profwatch.window.v1 object, for people and jq>}
// compare reads "state": the analysis result itself, never the report.
// The reader skips a line without "state" and ignores unknown keys.
// Each line goes out with a single write() on an O_APPEND descriptor, so a
// reader never sees half a line from a completed write. Size is bounded:
// before a write that would take the file past max_bytes (and the file is
// not empty) it is renamed to FILE.1 (replacing an older FILE.1) and a new
// FILE is started; at most about 2 x max_bytes are kept.
//
// The daemon keeps one such file per owner (OwnerHistory): the lines of the
// runs whose job directory belongs to uid N go to FILE.uidN (rotated to
// FILE.uidN.1), so one owner's windows never rotate away another's; FILE
// itself holds the lines of the daemon's own user's runs (a single-user
// setup writes FILE alone, as before) and of runs without a known owner.
// FindInHistory reads them all.
//
// Thread-safety: Append() is serialized by an internal mutex.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/caps.h"
#include "core/result.h"
#include "snapshot/snapshot.h"
#include "store/limits.h"
#include "watch/owner.h"

namespace profwatch::store {

inline constexpr std::string_view kHistorySchema = "profwatch.history.v1";

// The history line of one run's current window (no trailing newline), with
// `report` as its "report" (the caller renders it: expose::RunReportToJson).
// A line over `max_bytes` is written without "state" and "report" (compare
// skips it), with "cut":"line_bytes" and "line_bytes": what it would have
// been; `*cut` (when given) tells.
std::string HistoryLine(const snapshot::RunState& rs, double now_unix,
                        nlohmann::ordered_json report, uint64_t max_bytes = kMaxHistoryLineBytes,
                        bool* cut = nullptr);

class HistoryWriter {
 public:
  HistoryWriter(std::string path, uint64_t max_bytes);
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  // Appends `line` plus '\n', rotating first when needed (`rotated`, when
  // not null, tells whether it did). kIo on failure (the next call reopens
  // and retries).
  Status Append(const std::string& line, bool* rotated = nullptr);
  const std::string& path() const { return path_; }

 private:
  Status OpenLocked();
  void CloseLocked();

  std::mutex mu_;
  std::string path_;
  uint64_t max_bytes_;
  int fd_ = -1;
};

// The owner's history file of `path` (see above): FILE.uidN, FILE for
// `self` (the daemon's uid) and kNoOwner.
std::string OwnerHistoryPath(const std::string& path, watch::Owner owner, watch::Owner self);

// --history as the daemon writes it: a HistoryWriter per owner, each
// rotating at `max_bytes_per_owner`. At most kOpenWriters files are open at
// once (the least recently written is closed first).
class OwnerHistory {
 public:
  static constexpr size_t kOpenWriters = 64;
  // `self`: the owner whose lines go to `path` itself (the daemon's uid).
  OwnerHistory(std::string path, uint64_t max_bytes_per_owner, watch::Owner self);

  Status Append(watch::Owner owner, const std::string& line, bool* rotated = nullptr);
  // The file `owner`'s lines go to.
  std::string PathOf(watch::Owner owner) const { return OwnerHistoryPath(path_, owner, self_); }

 private:
  std::mutex mu_;
  std::string path_;
  uint64_t max_bytes_;
  watch::Owner self_;
  uint64_t tick_ = 0;
  struct Open {
    std::unique_ptr<HistoryWriter> writer;
    uint64_t used = 0;
  };
  std::map<watch::Owner, Open> open_;
};

struct HistoryQuery {
  std::string training_job;
  std::string run;
  std::optional<std::string> window;
};
// "JOB/RUN" or "JOB/RUN@WINDOW" (RUN may contain '/'); nullopt otherwise.
std::optional<HistoryQuery> ParseHistoryQuery(std::string_view text);

// The run state of the latest matching line (by its "time"; of equal times
// the later in the file) of FILE.1, FILE and every owner's FILE.uidN(.1).
// kNotFound (naming the query and the file) when no line matches;
// unreadable lines are skipped; kIo when no file can be read.
Result<snapshot::RunState> FindInHistory(const std::string& file, const HistoryQuery& query);

}  // namespace profwatch::store
