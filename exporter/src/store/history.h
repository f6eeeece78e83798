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
// Thread-safety: Append() is serialized by an internal mutex.
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "snapshot/snapshot.h"

namespace profwatch::store {

inline constexpr std::string_view kHistorySchema = "profwatch.history.v1";
inline constexpr uint64_t kDefaultHistoryMaxBytes = 64ull << 20;
// The longest history line written whole: twice the per-run state cap
// (pipeline/window_policy.h kMaxRunStateBytes), since a line holds the
// run's state and a report of it.
inline constexpr uint64_t kMaxHistoryLineBytes = 64ull << 20;

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

  // Appends `line` plus '\n', rotating first when needed. kIo on failure (the
  // next call reopens and retries).
  Status Append(const std::string& line);
  const std::string& path() const { return path_; }

 private:
  Status OpenLocked();
  void CloseLocked();

  std::mutex mu_;
  std::string path_;
  uint64_t max_bytes_;
  int fd_ = -1;
};

struct HistoryQuery {
  std::string training_job;
  std::string run;
  std::optional<std::string> window;
};
// "JOB/RUN" or "JOB/RUN@WINDOW" (RUN may contain '/'); nullopt otherwise.
std::optional<HistoryQuery> ParseHistoryQuery(std::string_view text);

// The run state of the latest matching line, looked up in FILE.1 then FILE
// (oldest first). kNotFound (naming the query and the file) when no line
// matches; unreadable lines are skipped; kIo when neither file can be read.
Result<snapshot::RunState> FindInHistory(const std::string& file, const HistoryQuery& query);

}  // namespace profwatch::store
