// The daemon's in-flight journal, `<--state file>.inflight`: a few lines
// naming the windows being analysed now and those a daemon died on, so a
// window that kills the daemon (out of memory, a crash) cannot start a
// crash loop (pipeline/window_policy.h DecideInflight decides from it).
// Each line is one JSON object:
//
//   {"key":"<run dir>\n<window>","training_job":"j","run":"r","window":"2024_...",
//    "digest":"<16 hex digits>","deaths":1,"in_flight":true}
//
// `digest`: the window's files as they were (FilesDigest); `deaths`: how
// many daemons died while analysing them; `in_flight`: an analysis of them
// has begun and not ended. Load counts a window found in flight as one
// death more (its daemon died on it) and clears the flag.
//
// Every change rewrites the whole (small) file: a temporary file beside it,
// renamed over it. Neither is synced: the journal guards against the daemon
// dying, and the kernel keeps a dead process's writes; after a power loss
// it may be lost, which costs at most the analyses it would have spared.
// Records: the windows in flight (one per worker) and at most kMaxKeptJournalRecords
// others (those that had a death), the oldest dropped first.
//
// Thread-safety: every method takes an internal mutex.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "core/result.h"
#include "store/limits.h"

namespace profwatch::store {

struct InflightRecord {
  std::string key;  // InflightKey(run dir, window)
  std::string training_job, run, window;
  uint64_t digest = 0;
  int deaths = 0;
  bool in_flight = false;
  uint64_t seq = 0;  // order of the last change (not written: file order)
};

// A digest of a window's files: each path with its device, inode, size and
// mtime (nanoseconds), or its stat error. Files are taken in the order
// given.
uint64_t FilesDigest(const std::vector<std::string>& paths);

std::string InflightKey(std::string_view run_dir, std::string_view window);

class InflightJournal {
 public:
  // `path` empty: no journal (every call does nothing).
  explicit InflightJournal(std::string path) : path_(std::move(path)) {}

  // Reads the file: a record in flight is one death more, and no longer in
  // flight; the result is written back. A missing file is an empty journal;
  // an unreadable line is skipped (`*warning` says how many).
  Status Load(std::optional<LogEvent>* warning);
  // The records as loaded or changed since.
  std::vector<InflightRecord> Records() const;
  std::optional<InflightRecord> Find(const std::string& key) const;
  // An analysis of `r` begins: it replaces the key's record, in flight.
  Status Begin(InflightRecord r);
  // The analysis of `key` ended: with a result (`finished`), the record
  // goes; without (shut down mid-way), it is no longer in flight and keeps
  // its deaths.
  Status End(const std::string& key, bool finished);
  const std::string& path() const { return path_; }

 private:
  Status WriteLocked();

  const std::string path_;
  mutable std::mutex mu_;
  std::map<std::string, InflightRecord> records_;  // by key
  uint64_t seq_ = 0;
};

}  // namespace profwatch::store
