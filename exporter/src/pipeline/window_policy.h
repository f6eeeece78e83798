// The daemon's policy for a finished window analysis, as pure functions:
// which failed files are retried, given up or rechecked (DecideRetry, the
// assembler's retry policy); given the task, the analysis outcome and the
// assembler's decision on it,
// the run's state now and the time, DecideWindow returns the run's next
// state, the errors and retries to count by reason, the window's result
// label and the log events. No I/O, no clock, no globals, no logging: the
// daemon (daemon.cc) applies the verdict under its mutex and emits the
// events, so every path is unit tested on a fake clock
// (tests/unit/pipeline/window_policy_test.cc).
//
// The same holds for the worker bookkeeping (CountWorkers: busy and stuck
// workers), the assembler's ready notes (held and expired windows) and the
// crash-loop guard (DecideInflight: a window the daemon died on).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aggregate/window_stats.h"
#include "analysis/analyze.h"
#include "core/caps.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/result.h"
#include "pipeline/limits.h"
#include "snapshot/snapshot.h"
#include "window/assembler.h"

namespace profwatch::pipeline {

// The `reason` of profwatch_window_errors_total for a file given up after
// --max-retries; the other reasons are core/result.h's ErrorCodeName values.
inline constexpr std::string_view kGiveUpReason = "give_up";
// The `reason` of profwatch_window_errors_total (and profwatch_window_failed)
// for a window whose analysis left no usable kernel data (0 GPUs or no kernel
// time) because files failed, were given up or are missing: it is not
// exported, the run keeps its previous window.
inline constexpr std::string_view kNoDataReason = "no_data";

// The `reason` (profwatch_window_errors_total, profwatch_window_failed) of a
// window the daemon died on twice while analysing it: core/result.h's
// kCrashed.
inline constexpr std::string_view kCrashedReason = "crashed";

// profwatch_windows_analyzed_total{result}: error when nothing usable came
// of the analysis (it failed, a file is retried, or no kernel data);
// incomplete when published or held short of files or GPUs; ok otherwise.
enum class WindowResult { kOk, kIncomplete, kError };

// A finished analysis of a task from Assembler::TakeReady.
struct FinishedWindow {
  window::AnalysisOutcome outcome;
  // The assembler's decision on `outcome` (Assembler::OnAnalyzed).
  window::AnalysisDecision decision;
  // The analysis' figures; null when it failed as a whole (the outcome's
  // window_error).
  std::shared_ptr<const aggregate::WindowStats> stats;
  std::string format;    // analysis::WindowAnalysis::format
  double seconds = 0.0;  // how long the analysis took (logged)
};

struct WindowPolicyOptions {
  std::optional<double> step_seconds;  // --step-time
  std::chrono::milliseconds window_timeout{0};
  // The most bytes one run's state (store/state_json.h SerializeRunState)
  // may take: a published window whose run state would be larger is not
  // exported (reason too_large; why this default: core/caps.h
  // kRunStateBytes).
  size_t max_run_state_bytes = static_cast<size_t>(caps::kRunStateBytes.value);
  // What the run's owner may still keep (--max-state-bytes-per-owner less
  // its other runs' states); nullopt: no owner cap.
  std::optional<size_t> owner_state_room = std::nullopt;
  // What the run may keep under --max-state-bytes (ledger::Ledger::RoomFor);
  // nullopt: no cap.
  std::optional<size_t> daemon_state_room = std::nullopt;
};

struct WindowVerdict {
  // The run's state after this result; nullopt: unchanged. Set when the
  // window is published, and when the run is flagged with a failure (a
  // window-less run entry when the run had none).
  std::optional<snapshot::RunState> next;
  // `next` carries this window: the run now exports the task's serial. Its
  // window_log is empty for a new window of the run: the caller places it
  // in the training log (after `replaced_log`, the steps of the window it
  // replaces, when there was one), picks its step source, then writes its
  // history line.
  bool published = false;
  std::optional<snapshot::WindowLogSteps> replaced_log;
  // An older window analysed after the run's exported one: not exported,
  // still a profiling cycle of the run, so this is its history line's state.
  std::optional<snapshot::RunState> superseded_history;
  // Why this attempt failed for real (profwatch_window_failed), "" if not.
  std::string failure;
  // profwatch_window_errors_total and profwatch_window_retries_total
  // increments, by reason.
  std::map<std::string, int64_t> errors;
  std::map<std::string, int64_t> retries;
  WindowResult result = WindowResult::kOk;
  std::vector<LogEvent> logs;
  // The published run state's bytes (SerializeRunState), 0 when nothing was
  // published: what the run now keeps (the ledger charges its owner).
  size_t state_bytes = 0;
};

// profwatch_window_failed{reason} of a window whose run state would take
// its owner past --max-state-bytes-per-owner.
inline constexpr std::string_view kOwnerStateCapReason = caps::kStateBytesPerOwner.reason;
// ... and of one that would take all owners' past --max-state-bytes.
inline constexpr std::string_view kStateCapReason = caps::kStateBytes.reason;

// The outcome of `result` as the assembler takes it.
window::AnalysisOutcome OutcomeOf(const Result<analysis::WindowAnalysis>& result);

// The window `previous` exports, as the assembler takes it; `serial`: the
// task serial it came from (0: restored from --state).
std::optional<window::ExportedWindow> ExportedOf(const snapshot::RunState* previous,
                                                 uint64_t serial);

// `previous` (or a new window-less run of the task's, active as of the
// task's newest file, so retention also ends a run that only ever failed)
// with window_failure set to `reason`.
snapshot::RunState FlaggedRun(const window::WindowTask& task, const snapshot::RunState* previous,
                              std::string_view reason);

// The retry policy (window::AssemblerOptions::retry_policy; the assembler
// counts the tries and applies the plan), by the error code of each failed
// file (core/result.h RetryClass):
//  - kTruncated, kIo, kNotFound (kSoon): the result is held back and the
//    window retried after RetryBackoff of the file's tries (sooner when the
//    file changes and settles again); these tries are reported as
//    `retrying` (a file still being written is not an error); after
//    max_retries tries the file is given up and the window analysed without
//    it, flagged incomplete;
//  - kCorrupt, kPermission, kOverBudget (kOnChange): the rest of the window is published
//    at once; the window is retried when the file's (inode, size, mtime)
//    changes, and an unreadable (kPermission) file also at recheck_at
//    (RetryBackoff of its tries), since fixing permissions changes none of
//    those; the file is given up after max_retries tries;
//  - others (kUnsupported, kTooLarge, ...: kNever): published as they are,
//    never retried.
// Files given up while others remain: the rest is analysed at once. A
// published window is not analysed again before reanalysis_interval after
// its analysis ended, nor sooner than that analysis took.
window::RetryPlan DecideRetry(const window::RetryFacts& facts);
// The wait before the `tries`th retry: max(settle, 1 s) doubled per try
// after the first, at most max_backoff.
std::chrono::milliseconds RetryBackoff(int tries, std::chrono::milliseconds settle,
                                       std::chrono::milliseconds max_backoff);

// The verdict on `w`, the analysis of `task`, for the run whose state is
// `previous` (null: the run has none yet), at `now`.
WindowVerdict DecideWindow(const window::WindowTask& task, const FinishedWindow& w,
                           const snapshot::RunState* previous, TimePoint now,
                           const WindowPolicyOptions& options);

// An analysis worker: since when it is busy on a window (unset: idle).
struct WorkerSlot {
  std::optional<TimePoint> since;
  window::RunId run;
  std::string window;
  bool logged_stuck = false;  // its window was logged as stuck
};

struct WorkerCounts {
  int64_t busy = 0;
  // Busy longer than the per-file time budget: every file of a real window
  // ends far sooner, so it is a window of files that each run to the budget,
  // or work no budget check reaches.
  int64_t stuck = 0;
  std::vector<LogEvent> logs;  // one warning per window newly stuck
};

// Counts `slots` at `now` against `budget` (<= 0: none is ever stuck) and
// marks each newly stuck slot logged, so its window is warned about once.
WorkerCounts CountWorkers(std::vector<WorkerSlot>& slots, TimePoint now,
                          std::chrono::nanoseconds budget);

// What the in-flight journal (store/inflight_journal.h) knows of a window
// from earlier daemons: the identity of its files (a digest of their paths,
// devices, inodes, sizes and mtimes) and how many daemons died while
// analysing it with those files.
struct InflightHistory {
  uint64_t digest = 0;
  int deaths = 0;
};

struct InflightDecision {
  // false: fail the window as crashed (kCrashedReason) without analysing it.
  bool analyse = true;
  // Analyse it alone (no other window in flight), so that if the daemon dies
  // again the death is this window's.
  bool alone = false;
  int deaths = 0;  // deaths with these files so far
  std::vector<LogEvent> logs;
};

// The decision on `task` about to be analysed, whose files' digest is now
// `digest`, given what the journal holds of it (null: nothing). Files that
// changed start afresh.
InflightDecision DecideInflight(const window::WindowTask& task, uint64_t digest,
                                const InflightHistory* history);

// The error a window failed as crashed carries (its outcome's window_error).
Error CrashedError(int deaths);

// The info line per window of the startup backlog not analysed: an older
// window found at the first scan, or (at a later scan) the run's newest
// window at startup that a newer window replaced before its analysis; each
// says which.
std::vector<LogEvent> SupersededEvents(const std::vector<window::Assembler::Superseded>& notes);

// The info lines for windows held for files and windows not analysed
// because they are older than --retention.
std::vector<LogEvent> ReadyNoteEvents(const window::Assembler::ReadyNotes& notes, TimePoint now,
                                      std::chrono::milliseconds window_timeout,
                                      std::chrono::milliseconds retention);

}  // namespace profwatch::pipeline
