// Window assembler: the serve daemon's policy as one pure state machine. It
// turns file observations (from watch/scanner.h) plus the time into analysis
// tasks for complete windows; decides from analysis outcomes whether to
// publish, retry or give up, whether a result replaces the run's exported
// window and which GPU count it is held to; and when a run expires. It never
// opens a file and never reads a clock: the caller passes `now`, so the
// policy is unit tested on a fake clock (tests/unit/window/assembler_test.cc).
//
// Per run (training_job, run), the files are grouped into windows with
// GroupWindows (adjacent <ts> dirs within `skew`, a repeated process key
// starts a new window). A window is ready when
//  - every file's (dev, inode, size, mtime) has been seen unchanged for
//    `settle` and no file joined for `settle` (observed quiet, not assumed:
//    the caller rescans at NextDeadline()); a window found at the first scan
//    whose every file's mtime is already older than `settle` by the clock
//    has been quiet that long, and is ready at that scan, and
//  - it has the expected number of files: `expected_files`, else derived from
//    `expected_gpus` and the run's learned GPUs per file, else the previous
//    window of the run (learned). Short of it, it waits until `window_timeout`
//    after it was first seen and is then emitted flagged short.
// Every window (profiling cycle) that appears while the daemon runs is
// analysed, oldest first, so each one reaches --history; only the newest of a
// run is exported (an older one finishing late never replaces it). Windows
// already present at the first scan (the backlog a fresh daemon finds) other
// than the newest of their run are superseded instead: not analysed, each
// reported once in ScanNotes::superseded. When a run dir is first seen (at
// the first scan, or later: a tree copied in) only its newest
// `windows_at_first_sight` windows are considered; the older ones get no
// state at all and are counted in one ScanNotes::backlog entry per run
// (grouping a run's windows is indexed by <ts> dir, so a scan costs
// O(files log files) however many windows a run holds).
//
// Shares (window/fair_queue.h): each run belongs to the owner of its job
// directory (watch::FileObservation::owner). Per owner at most
// `max_runs_per_owner` runs are tracked (the runs tracked already first,
// then the most recently written) and at most `max_windows_per_owner`
// windows (the newest; an older window the cap leaves out never comes back
// while the daemon runs); what is over is reported in ScanNotes::owner_caps.
// Ready windows wait in a FairQueue served round-robin by owner, job and
// run (TakeNext), so one owner's flood of windows delays the others by at
// most one window per round; a free worker goes to the waiting owners that
// hold the fewest workers, so while another owner waits no owner takes more
// than its share of them.
//
// Read once: a file reached twice in one window (same device and inode: a
// hard link, a bind mount) is one file; it is analysed and counted once
// (WindowTask::duplicates says how many paths were left out). Windows whose newest file is older
// than `retention`, of a run whose training log is too (NoteRunActivity), are
// not analysed at all (reported once in ReadyNotes::expired). A file joining or changing in an
// analysed window makes it ready again (a re-analysis).
//
// Retries: which failed file is retried when, given up or rechecked is the
// retry policy's (AssemblerOptions::retry_policy: the daemon's is
// pipeline/window_policy.h DecideRetry, a pure function); the assembler
// counts each file's tries, hands the policy the facts (RetryFacts) and
// applies its plan (RetryPlan) to the window's state. A given-up file that
// changes is read again (its tries start anew).
// With --expected-gpus, a window with fewer GPUs is held (the run keeps its
// exported window) until a file joins or the window timeout, then published
// incomplete. Only complete windows teach the learned expectations.
//
// Thread-safety: none; the daemon serialises all calls under its mutex.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/caps.h"
#include "core/clock.h"
#include "core/result.h"
#include "watch/owner.h"
#include "watch/scanner.h"
#include "window/fair_queue.h"

namespace profwatch::window {

struct Window;  // grouping.h

struct FileFailure {
  std::string path;
  Error error;
};

// What the retry policy decides on: a finished task's failed files with
// their tries, and the knobs of AssemblerOptions it applies.
struct FailedFileTry {
  FileFailure failure;
  int tries = 0;  // the file's tries, this one included
};
struct RetryFacts {
  // false: the window was dropped while in flight (no state to retry with).
  bool tracked = true;
  bool window_error = false;  // the analysis failed as a whole
  // Short of files or GPUs before any give-up: some were excluded, missing
  // or failed.
  bool incomplete_input = false;
  std::vector<FailedFileTry> failed;  // not given up before; kNever ones too
  int active_files = 0;               // the window's files not given up before
  TimePoint now{};
  TimePoint taken_at{};  // when the task was taken (the analysis took now - taken_at)
  int max_retries = 0;
  std::chrono::milliseconds settle{0};
  std::chrono::milliseconds max_backoff{0};
  std::chrono::milliseconds reanalysis_interval{0};
};
// What the assembler applies.
struct RetryPlan {
  enum class Next {
    kRetryAt,     // held back; analysed again at retry_at (or when a file settles)
    kAnalyseNow,  // files were given up: the rest at once
    kDone,        // analysed: published unless the analysis failed as a whole
  };
  Next next = Next::kDone;
  std::vector<FileFailure> gave_up;   // given up now
  std::vector<FileFailure> retrying;  // held back for a retry (kRetryAt)
  TimePoint retry_at{};
  bool publish = false;
  bool incomplete = false;
  // kDone: an unreadable file's window is tried again then.
  std::optional<TimePoint> recheck_at;
  // kDone: a change does not make the window ready before this; unset: as
  // it was.
  std::optional<TimePoint> reanalyse_after;
};
// A pure function (no state, no clock but RetryFacts::now).
using RetryPolicy = RetryPlan (*)(const RetryFacts&);

struct AssemblerOptions {
  std::chrono::seconds skew{120};
  std::chrono::milliseconds settle{10'000};
  std::chrono::milliseconds window_timeout{600'000};
  int expected_files = 0;  // 0 = not configured
  int expected_gpus = 0;   // 0 = not configured
  int max_retries = 5;
  std::chrono::milliseconds retention{24LL * 3600 * 1000};
  std::chrono::milliseconds max_backoff{300'000};
  // <ts> dirs dated more than this ahead of the wall clock are skipped until
  // the clock catches up (one host's clock skew or a copied tree must not
  // become the latest window and hide the real ones).
  std::chrono::milliseconds future_tolerance{3'600'000};
  // How far the wall clock <ts> names may use (local time) is ahead of UTC.
  std::chrono::seconds wall_clock_ahead{0};
  // A window with more files is not tracked (ScanNotes::capped): no state is
  // kept for its files and it is never analysed (serve --max-files-per-window).
  int64_t max_files_per_window = caps::kFilesPerWindow.value;
  // Windows of a run dir considered when it is first seen (see above).
  int windows_at_first_sight = kWindowsAtFirstSight;
  // Runs and windows tracked per owner (serve --max-runs-per-owner,
  // --max-windows-per-owner); 0: no cap.
  int64_t max_runs_per_owner = caps::kRunsPerOwner.value;
  int64_t max_windows_per_owner = caps::kWindowsPerOwner.value;
  // A window whose files change after it was analysed is analysed again no
  // sooner than this after its last analysis ended, nor sooner than that
  // analysis took (serve --reanalysis-interval): a window its owner keeps
  // writing to holds at most half a worker, and its last content is still
  // analysed once the changes stop. 0: only `settle` paces it.
  std::chrono::milliseconds reanalysis_interval{kDefaultReanalysisInterval};
  // Decides retries, give-ups and rechecks from a task's failures (see
  // Retries above). REQUIRES: set (the Assembler aborts without one).
  RetryPolicy retry_policy = nullptr;

  // Long enough that a window rewritten every few seconds costs a few
  // analyses a minute; short enough that a late host's file joining an
  // analysed window is in the exported figures within a minute.
  static constexpr std::chrono::milliseconds kDefaultReanalysisInterval{30'000};
  // The newest windows of a run considered when the run dir is first seen:
  // the backlog rule analyses only the newest one at start; a few more keep
  // a window whose <ts> dirs are still being written (a late host) and the
  // window it may split from in the same state; a tree copied in while the
  // daemon runs has its latest cycles analysed.
  static constexpr int kWindowsAtFirstSight = 8;
};

// The reasons of profwatch_scan_refused_total and profwatch_owner_limited
// for an owner over its run or window cap.
inline constexpr std::string_view kOwnerRunCapReason = "owner_run_cap";
inline constexpr std::string_view kOwnerWindowCapReason = "owner_window_cap";

struct RunId {
  std::string training_job;
  std::string run;
  auto operator<=>(const RunId&) const = default;
};

struct FileFingerprint {
  std::string path;
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  auto operator<=>(const FileFingerprint&) const = default;
};

// A window that was analysed (and published), as persisted in the state file
// so a restarted daemon does not analyse it again.
struct AnalysedWindow {
  RunId run;
  std::string run_dir;
  std::string first_dir;  // grouping dir of the window's first <ts>
  std::vector<FileFingerprint> files;
  double analyzed_unix = 0;
};

struct WindowTask {
  uint64_t serial = 0;  // identity of the tracked window in this assembler
  RunId run;
  watch::Owner owner = watch::kNoOwner;  // of the run's job directory
  std::string run_dir;
  std::string window_id;                    // first <ts> dir name
  int64_t first_time = 0;                   // seconds, from the first <ts> name
  std::vector<std::string> timestamp_dirs;  // real directories, time order
  std::vector<std::string> files;           // to analyse (given-up files excluded)
  std::vector<std::string> excluded;        // given-up files
  int total_files = 0;                      // distinct files present, including excluded
  // Paths left out because they name a file already in the window (same
  // device and inode): read once, counted once.
  int duplicates = 0;
  int expected_files = 0;          // gate used; 0 = none
  bool short_of_expected = false;  // emitted at the window timeout
  bool reanalysis = false;         // the window was analysed before
  double last_activity_unix = 0;   // newest file mtime
  // When it became ready and began to wait for a worker (the injected clock).
  TimePoint ready_since{};
  // The last error of the first given-up file in `excluded` (why it was
  // given up), for the window's failure reason.
  std::optional<ErrorCode> excluded_error;
};

struct AnalysisOutcome {
  // AnalyzeFiles failed as a whole (no file readable): its error.
  std::optional<Error> window_error;
  std::vector<FileFailure> failed;  // per-file failures of a successful analysis
  int gpus = 0;                     // GPUs found (to learn GPUs per file)
};

// The window a run exports now, as the caller's snapshot has it.
struct ExportedWindow {
  uint64_t serial = 0;     // WindowTask::serial it came from; 0: restored from --state
  int64_t first_time = 0;  // seconds of its first <ts> dir
  int gpus = 0;
  int expected_gpus = 0;  // the expectation it was held to
  bool incomplete = false;
};

struct AnalysisDecision {
  bool publish = false;     // publish this result as the run's latest window
  bool incomplete = false;  // flag the published window incomplete
  bool retry = false;       // held back; the window will be emitted again
  // Not published because the run already exports a newer window (an older
  // window finished after it): log it, keep the newer one.
  bool superseded = false;
  // GPUs the published window should have: --expected-gpus, else the GPUs of
  // the complete window it replaces (learned; an incomplete one passes its
  // own expectation on); 0 = no expectation. Fewer GPUs than this make it
  // incomplete.
  int expected_gpus = 0;
  // Held back: fewer GPUs than --expected-gpus before the window timeout.
  // The run keeps its exported window; this one is analysed again when a
  // file joins or changes, or at the timeout (then published incomplete).
  bool waiting_for_gpus = false;
  // With waiting_for_gpus: when it is published anyway (the window timeout).
  std::optional<TimePoint> held_until;
  // Files given up by this outcome: log once with path and reason, count
  // reason="give_up".
  std::vector<FileFailure> gave_up;
  // Failures held back for a retry (kSoon, tries left): a file still being
  // written, not yet an error. Counted as retries; it becomes an error only
  // when it is given up.
  std::vector<FileFailure> retrying;
};

class Assembler {
 public:
  explicit Assembler(AssemblerOptions options);

  // New options (config reload); they apply from the next call on.
  void SetOptions(AssemblerOptions options) { options_ = options; }

  // Seeds windows analysed by an earlier process (state file): when the same
  // files are seen unchanged they are not analysed again.
  void Restore(const std::vector<AnalysedWindow>& windows);

  // What a scan skipped, each reported once: <ts> dirs dated in the future,
  // and run dirs whose (training_job, run) another run dir already has (two
  // roots labelling two runs alike; the lexically first dir is kept).
  struct RunClash {
    RunId run;
    std::string kept_dir;
    std::string skipped_dir;
  };
  // An older window of the startup backlog that is not analysed.
  struct Superseded {
    RunId run;
    std::string window_id;
    std::string newest_id;  // the run's newest window, analysed instead
    int files = 0;
    // Reported by the first scan (an older window of the backlog); false:
    // the run's newest window at startup, still waiting for its analysis
    // when a newer one appeared at a later scan.
    bool at_startup = false;
  };
  // A window over AssemblerOptions::max_files_per_window, not tracked.
  struct CappedWindow {
    RunId run;
    std::string window_id;  // first <ts> dir name
    std::string first_dir;  // its grouping dir
    int64_t files = 0;
    watch::Owner owner = watch::kNoOwner;
  };
  // A settled window held for files it is short of, reported once per
  // window: `files` present, `expected_files` expected (from `expected_from`:
  // "--expected-files", "--expected-gpus" or "previous window"); it is
  // analysed when they arrive or at `until` (first seen + window timeout).
  struct Held {
    RunId run;
    std::string window_id;
    int files = 0;
    int expected_files = 0;
    std::string expected_from;
    TimePoint until;
  };
  // A window not analysed because its newest file is older than
  // `retention`, reported once per window.
  struct Expired {
    RunId run;
    std::string window_id;
    double last_activity_unix = 0;
    watch::Owner owner = watch::kNoOwner;
  };
  // Windows of a run dir first seen with more than windows_at_first_sight:
  // the older ones are not considered (counted, one entry per run dir);
  // also windows dated before those appearing later (counted as they come).
  struct Backlog {
    RunId run;
    int64_t windows = 0;    // newly left out
    std::string newest_id;  // the oldest window considered
  };
  // An owner over its run or window cap in this scan: `over` runs or
  // windows of it are not tracked now, `newly` of them for the first time
  // (count those once); `example` names one (job/run or job/run@window).
  struct OwnerCap {
    watch::Owner owner = watch::kNoOwner;
    std::string_view reason;  // kOwnerRunCapReason or kOwnerWindowCapReason
    int64_t over = 0;
    int64_t newly = 0;
    int64_t cap = 0;
    std::string example;
  };
  struct ScanNotes {
    std::vector<std::string> future_dirs;
    std::vector<RunClash> clashes;
    std::vector<Superseded> superseded;
    std::vector<CappedWindow> capped;  // each reported once while over the cap
    std::vector<Backlog> backlog;
    std::vector<OwnerCap> owner_caps;  // every owner over a cap now
  };

  // A complete scan of all roots taken at `now`. Files absent from it are
  // gone (their windows are forgotten unless in flight).
  ScanNotes ObserveScan(const std::vector<watch::FileObservation>& files, TimePoint now);

  // Queues every window ready at `now` in the fair queue (where it waits
  // for a worker); returns how many joined it.
  size_t Schedule(TimePoint now);
  // The next waiting window in fair order (FairQueue), in flight from now
  // until OnAnalyzed(); nullopt when none waits.
  std::optional<WindowTask> TakeNext(TimePoint now);
  // Schedule, then up to `max` TakeNext: for tests and callers without a
  // queue of their own.
  std::vector<WindowTask> TakeReady(TimePoint now, size_t max);
  // Windows waiting for a worker, and since when the longest-waiting one
  // waits (nullopt: none).
  size_t Waiting() const { return waiting_.size(); }
  std::optional<TimePoint> OldestWaitingSince() const { return waiting_.OldestSince(); }
  std::map<watch::Owner, size_t> WaitingByOwner() const { return waiting_.WaitingByOwner(); }

  // What TakeReady() found held for files or expired since the last call,
  // each window once.
  // An analysed window that changed and waits for --reanalysis-interval
  // before it is analysed again, reported once per wait.
  struct Paced {
    RunId run;
    std::string window_id;
    TimePoint until;
  };
  struct ReadyNotes {
    std::vector<Held> held;
    std::vector<Expired> expired;
    std::vector<Paced> paced;
  };
  ReadyNotes TakeReadyNotes();

  // The result of a task from TakeReady(). `exported`: the window the run
  // exports now (nullopt: none yet); it decides superseding and the learned
  // GPU expectation.
  AnalysisDecision OnAnalyzed(const WindowTask& task, const AnalysisOutcome& outcome, TimePoint now,
                              const std::optional<ExportedWindow>& exported = std::nullopt);

  // When a pending window could next become ready (a settle period ends, a
  // retry or timeout is due): the caller should rescan then. nullopt: nothing
  // pending.
  std::optional<TimePoint> NextDeadline() const;

  // The run's training log was written at `unix_seconds`: a run whose log
  // is within `retention` is alive, and its windows are analysed however old
  // their files are (retention is the run's, as RunExpired decides it).
  void NoteRunActivity(const RunId& run, double unix_seconds);

  // True when a run whose newest window or training-log line is from
  // `last_activity_unix` has been quiet longer than `retention` at `now`: it
  // leaves the exposition.
  bool RunExpired(double last_activity_unix, TimePoint now) const;

  // Windows waiting for completeness, a retry or a worker (newest per run only).
  int64_t PendingCount() const;
  // Files of every tracked window (state held per file), for tests.
  int64_t TrackedFiles() const;
  // The same per run (runs with none left out).
  std::map<RunId, int64_t> PendingByRun() const;
  // Run dirs left out at their owner's run cap by the last scan.
  const std::set<std::string>& RefusedRunDirs() const { return refused_run_dirs_; }
  // Everything analysed, for the state file.
  std::vector<AnalysedWindow> Analysed() const;

 private:
  // kWaiting: ready, in the fair queue; kQueued: taken by a worker.
  enum class State { kAssembling, kRetryWait, kWaiting, kQueued, kDone, kSuperseded, kExpired };
  struct FileTrack {
    FileFingerprint fp;
    TimePoint first_seen;
    TimePoint last_change;
    int tries = 0;
    bool gave_up = false;
    std::optional<ErrorCode> last_error;
    FileFingerprint failed_fp;  // fingerprint when it last failed
  };
  struct Tracked {
    uint64_t serial = 0;
    RunId run;
    watch::Owner owner = watch::kNoOwner;
    std::string run_dir;
    std::string id;
    int64_t first_time = 0;
    std::vector<std::string> group_dirs;
    std::vector<std::string> real_dirs;
    std::vector<std::string> files;  // paths, window order
    std::map<std::string, FileTrack> tracks;
    int distinct_files = 0;  // files by (dev, inode)
    State state = State::kAssembling;
    // kWaiting: the state it returns to when it changes while waiting, and
    // the gate it was found ready with.
    State before_waiting = State::kAssembling;
    int waiting_gate = 0;
    bool waiting_short = false;
    TimePoint first_seen;
    TimePoint last_change;  // a file joined or changed
    std::optional<TimePoint> ready_since;
    std::optional<TimePoint> next_retry;
    // kDone: analyse again at this time (an unreadable file, or short of
    // --expected-gpus until the window timeout).
    std::optional<TimePoint> recheck_at;
    bool force_ready = false;  // re-run at once (a file was just given up)
    bool changed_in_flight = false;
    bool analysed_before = false;
    // When a worker last took it, and the earliest time a re-analysis may
    // start (AssemblerOptions::reanalysis_interval); paced_reported: in
    // ReadyNotes::paced for the current wait.
    TimePoint taken_at{};
    std::optional<TimePoint> reanalyse_after;
    bool paced_reported = false;
    // Its last result was complete (or restored from --state): it may teach
    // the next window of the run how many files to expect.
    bool taught = false;
    std::vector<FileFingerprint> analysed_fp;  // fingerprints of the last published analysis
    double analyzed_unix = 0;
    bool seen_in_last_scan = false;
    double last_activity_unix = 0;
    // First seen in the first scan: an older one of these is superseded.
    bool backlog = false;
    bool superseded_reported = false;
    // kDone: its last analysis found fewer GPUs than --expected-gpus and it
    // waits for them until recheck_at (pending, not published).
    bool held_for_gpus = false;
    bool held_reported = false;     // in ReadyNotes::held once
    bool expired_reported = false;  // in ReadyNotes::expired once
  };

  // Waiting for files, GPUs, a retry or a worker: not analysed for good yet.
  static bool IsPending(const Tracked& t);

  // ObserveScan's steps. The scan's observations by run dir, and one run
  // dir's by grouping path (<ts> dir / name) with each <ts> dir's real dir.
  using RunObservations = std::map<std::string, std::vector<const watch::FileObservation*>>;
  struct ScanFiles {
    std::map<std::string, const watch::FileObservation*> by_group_path;
    std::map<std::string, std::string> real_dir_of;
  };
  // One run dir of a scan, grouped into windows (oldest first).
  struct RunWindows {
    RunId run;
    watch::Owner owner = watch::kNoOwner;
    ScanFiles scan;
    std::vector<Window> windows;
    int64_t capped_out = 0;  // windows under the run dir's cap_time (not in `windows`)
  };
  // Per run dir: windows dated before `backlog_time` are the older windows
  // found at first sight (`backlog` of them at the last scan); windows
  // before `cap_time` were left out at the owner's window cap. Neither is
  // tracked. Kept while the run dir is on disk.
  struct Horizon {
    int64_t backlog_time = INT64_MIN;
    int64_t cap_time = INT64_MIN;
    int64_t backlog = 0;
  };
  // The observations by run dir, <ts> dirs dated in the future left out
  // (each reported once in `notes`).
  RunObservations ByRunDir(const std::vector<watch::FileObservation>& files, TimePoint now,
                           ScanNotes& notes);
  // Keeps one run dir per (training_job, run), the lexically first: two
  // would overwrite each other's series. The others are reported once.
  void DropClashes(RunObservations& by_run, ScanNotes& notes);
  // Tracks the windows of one run dir (over-cap ones reported and left
  // out, their first dirs added to `capped_now`); returns their serials.
  std::vector<uint64_t> ObserveRunDir(const std::string& run_dir, const RunWindows& rw,
                                      TimePoint now, ScanNotes& notes,
                                      std::set<std::string>& capped_now);
  // Leaves out the runs of an owner over max_runs_per_owner (reported).
  void CapRunsPerOwner(RunObservations& by_run, ScanNotes& notes);
  // One run dir's windows.
  static RunWindows GroupRunDir(const std::vector<const watch::FileObservation*>& obs,
                                int64_t skew_seconds);
  // Drops the windows under each run dir's horizons, setting the horizon of
  // a run dir seen for the first time (reported in notes.backlog).
  void ApplyHorizons(std::map<std::string, RunWindows>& runs, ScanNotes& notes);
  // Leaves out the oldest windows of an owner over max_windows_per_owner,
  // raising the run dirs' cap_time so they stay out (reported).
  void CapWindowsPerOwner(std::map<std::string, RunWindows>& runs, ScanNotes& notes);
  // The tracked window of `run_dir` not in `used` that shares a <ts> dir
  // with `w` (found by the <ts> dir index), else a new one (seeded from
  // --state when restored).
  Tracked& MatchOrTrack(const std::string& run_dir, const Window& w, const std::set<uint64_t>& used,
                        TimePoint now);
  // Marks `t` seen and sets its run, id, time and dirs from `w`.
  void Place(Tracked& t, const Window& w, const ScanFiles& scan);
  // Sets `t`'s files and tracks from `w`; true when a file joined, changed
  // or went away (a changed given-up file gets its tries back).
  bool UpdateFiles(Tracked& t, const Window& w, const ScanFiles& scan, TimePoint now);
  // The state a scan leaves `t` in (`changed`: UpdateFiles' answer).
  void OnScanned(Tracked& t, bool changed);
  // Of the startup backlog only the newest window of a run is analysed;
  // every window that appears while the daemon runs is (history keeps each).
  void SupersedeBacklog(const std::vector<uint64_t>& run_serials, ScanNotes& notes);
  // Retry, give-up and publish from the files' outcomes (OnAnalyzed without
  // the run's exported window): the facts to the retry policy, its plan
  // applied.
  AnalysisDecision RetryDecision(const WindowTask& task, const AnalysisOutcome& outcome,
                                 TimePoint now);
  // Counts a try of each failed file of `t` not given up (and clears the
  // tries of the files that analysed cleanly): the facts' failed files.
  std::vector<FailedFileTry> CountTries(Tracked& t, const WindowTask& task,
                                        const AnalysisOutcome& outcome);
  // Applies `plan` to `t` (its files, state and times).
  void ApplyRetryPlan(Tracked& t, const RetryPlan& plan, TimePoint now, AnalysisDecision& d);
  std::vector<FileFingerprint> Fingerprints(const Tracked& t) const;
  // Also records ReadyNotes (a window held for files, or expired).
  bool IsReady(Tracked& t, TimePoint now, int* gate, bool* short_of_expected);
  int ExpectedFiles(const Tracked& t) const;
  // Takes `t` out of the fair queue, back to the state it waited from.
  void StopWaiting(Tracked& t);
  // Sets whether `t` may teach the next window of its run (the taught index).
  void SetTaught(Tracked& t, bool taught);
  void IndexTaught(const Tracked& t, bool add);

  AssemblerOptions options_;
  uint64_t next_serial_ = 1;
  std::map<uint64_t, Tracked> tracked_;
  // Changed with the indexes below only through Track() and Untrack().
  Tracked& Track(uint64_t serial, const std::string& run_dir);
  std::map<uint64_t, Tracked>::iterator Untrack(std::map<uint64_t, Tracked>::iterator it);
  // Which tracked window holds each grouping dir (<ts> dir): MatchOrTrack
  // looks a window up by its dirs instead of comparing it with every window
  // of its run. Kept by Place() and Untrack().
  std::map<std::string, uint64_t> serial_by_group_dir_;
  // The taught windows of each run dir by (first_time, serial) with their
  // distinct file counts: the learned expectation is the one just before a
  // window (ExpectedFiles), found by lookup.
  std::map<std::string, std::map<std::pair<int64_t, uint64_t>, int>> taught_by_run_dir_;
  std::map<std::string, Horizon> horizons_;
  // Run dirs left out at their owner's run cap in the last scan.
  std::set<std::string> refused_run_dirs_;
  FairQueue waiting_;
  std::map<std::pair<std::string, std::string>, AnalysedWindow> restored_;  // (run_dir, first_dir)
  std::map<RunId, double> gpus_per_file_;
  std::map<RunId, double> run_activity_;  // NoteRunActivity
  std::set<std::string> future_dirs_;     // reported future-dated <ts> dirs
  std::set<std::string> clashed_dirs_;    // reported run dirs skipped for a clash
  ReadyNotes ready_notes_;
  std::set<std::string> capped_windows_;  // first dirs of reported over-cap windows
  TimePoint last_scan_{};
  bool scanned_ = false;  // a first scan was observed
};

}  // namespace profwatch::window
