// What a scan refuses and what the per-owner caps leave out, as the ledger
// (ledger/ledger.h) takes it, and the log lines its changes call for. Pure
// functions: the daemon feeds each scan through ObserveScanRefusals, then
// applies the ledger's changes (counters by owner and reason, and the lines
// of RefusalEvents), keeping no bookkeeping of its own.
//
// Thread-safety: pure functions of their arguments (the ledger is the
// caller's, under its lock).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/ledger.h"
#include "pipeline/window_policy.h"
#include "watch/owner.h"
#include "watch/scanner.h"
#include "window/assembler.h"

namespace profwatch::pipeline {

// The `reason`s of profwatch_scan_refused_total.
inline constexpr std::string_view kDirFileCapReason = "dir_file_cap";
inline constexpr std::string_view kWindowFileCapReason = "window_file_cap";
inline constexpr std::string_view kOutsideRootReason = "outside_root";
// Runs none of whose windows is analysed because the run was quiet longer
// than --retention (each run once while it stays so; listed on /).
inline constexpr std::string_view kRetentionReason = "retention";
// Directories of an owner over --max-dirs-per-owner, not walked.
inline constexpr std::string_view kOwnerDirCapReason = "owner_dir_cap";
// profwatch_owner_capped only: directories past --max-watches-per-owner,
// found by polling alone (nothing is refused).
inline constexpr std::string_view kOwnerWatchCapReason = "owner_watch_cap";

// The caps the log lines name.
struct RefusalLimits {
  int64_t max_files_per_window = 0;
  int64_t max_dirs_per_owner = 0;
  int64_t max_watches_per_owner = 0;
  std::string host_filter;  // resolved ("" : none)
};

// Feeds one scan into the ledger: directories over their file cap, windows
// over theirs (reported once by the assembler), links out of the root,
// directories no layout reads, a --host-filter that matched nothing, and
// what the per-owner caps leave out (the assembler's run and window caps,
// the walk's directory cap, the watcher's `unwatched` directories).
void ObserveScanRefusals(ledger::Ledger& ledger, const watch::ScanResult& result,
                         const window::Assembler::ScanNotes& notes,
                         const std::map<watch::Owner, int64_t>& unwatched,
                         const RefusalLimits& limits);

// A run whose windows expired unanalysed (`exported`: it has an exported
// window, so it expires rather than being skipped).
void ObserveExpired(ledger::Ledger& ledger, const window::Assembler::Expired& e, bool exported);

// The ledger's key of a run (a run refused for retention, a run's kept state).
std::string LedgerRunKey(std::string_view training_job, std::string_view run);

// One line per change: a refusal that began (several paths of one reason
// in one line where a scan may find many), one that ended where it is worth
// saying (a directory back under its cap), an owner over a cap or back
// under it.
std::vector<LogEvent> RefusalEvents(const ledger::Changes& changes, const RefusalLimits& limits);

// Job names found under several roots now (watch::ScanResult::job_clashes,
// their labels qualified by root): one warning per name as it begins to
// clash, one info line as it ends; `known` (the caller's, the names
// clashing at the last call) becomes the names clashing now.
std::vector<LogEvent> JobClashEvents(std::set<std::string>& known,
                                     const std::vector<watch::JobClash>& now);

}  // namespace profwatch::pipeline
