// What a daemon restores at start: its --state file's runs and analysed
// windows (store/state_file.h), and its in-flight journal
// (store/inflight_journal.h), each logged as it is read. The daemon then
// sweeps the runs for retention, charges their state to the ledger and
// hands the windows to its assembler (Daemon::RestoreStateLocked).
//
// Thread-safety: functions of their arguments (the journal is the caller's).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "snapshot/snapshot.h"
#include "store/inflight_journal.h"
#include "watch/shard.h"
#include "window/assembler.h"

namespace profwatch::pipeline {

struct RestoredState {
  // The runs the shard owns. After re-sharding the file may hold runs
  // another shard now owns: they are neither exported nor saved again.
  std::map<snapshot::RunKey, snapshot::RunState> runs;
  std::vector<window::AnalysedWindow> windows;  // every analysed window of the file
  // The reason of each entry left out (the rest of the file loads):
  // profwatch_state_entries_dropped_total{reason}.
  std::vector<std::string> dropped_reasons;
  size_t other_shard_runs = 0;  // left out of `runs`
};

// Loads `path` (an unreadable file is set aside, with a warning), logging
// each entry left out.
RestoredState LoadStateFile(const std::string& path, const watch::Shard& shard, TimePoint now);

// A window is restored only with its run: the window of a run the file no
// longer exports (expired, or another shard's) is analysed again if its run
// is alive, as without the file.
void KeepWindowsOfRuns(std::vector<window::AnalysedWindow>& windows,
                       const std::map<snapshot::RunKey, snapshot::RunState>& runs);

// Loads the in-flight journal, logging a failed read and each window a
// daemon died while analysing (and what happens to it next).
void LoadInflightJournal(store::InflightJournal& journal);

}  // namespace profwatch::pipeline
