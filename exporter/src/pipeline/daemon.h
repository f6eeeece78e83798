// The serve daemon's machinery: a scan thread (watcher hints + timed full
// rescans -> window assembler -> bounded queue) and a pool of low-priority
// worker threads (analysis::AnalyzeFiles -> new immutable Snapshot ->
// SnapshotStore). The scrape path only reads the store and the registry.
// What a finished analysis means for its run is decided by the pure window
// policy (window_policy.h); the daemon applies its verdict.
//
//   watcher/scanner --> Assembler (under mu_, its fair queue) --> workers
//                                                                            |
//                         SnapshotStore <-- copy-on-write Snapshot <---------+
//
// Self-metrics live in the prometheus::Registry given to the constructor;
// pending windows, the oldest waiting window, owners over a cap and the last
// scan time travel in the Snapshot.
//
// Shares: work is shared by owner (the uid of the run directory), then job,
// then run: ready windows wait in the assembler's fair queue
// (window/fair_queue.h), each analysis is bounded per file and per window
// (--file-max-seconds, --window-max-seconds), and runs, windows, walked
// directories, inotify watches and history bytes are capped per owner. An
// owner over a cap is exported (profwatch_owner_capped{owner,reason}),
// counted (profwatch_scan_refused_total{reason}) and logged once per change.
//
// Thread-safety: Start/Stop/Reload from one controlling thread. Everything
// else is internal: what mu_ guards is declared GUARDED_BY(mu_) and the
// *Locked methods REQUIRES(mu_), which clang's builds check
// (core/thread_annotations.h). Lifetime: the store, registry and clock must outlive the
// Daemon.
#pragma once

#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "analysis/analyze.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "core/result.h"
#include "ledger/ledger.h"
#include "pipeline/refusals.h"
#include "pipeline/self_metrics.h"
#include "pipeline/training_logs.h"
#include "pipeline/window_policy.h"
#include "snapshot/snapshot.h"
#include "store/history.h"
#include "store/inflight_journal.h"
#include "store/state_file.h"
#include "watch/scanner.h"
#include "watch/watcher.h"
#include "window/assembler.h"

namespace profwatch::pipeline {

struct DaemonOptions {
  std::vector<std::string> roots;
  std::map<std::string, std::string> root_jobs;  // watch::ScanOptions::root_jobs
  bool use_inotify = true;
  std::chrono::milliseconds poll_interval{15'000};
  std::string host_filter;  // resolved (not "auto")
  // Walk directory links and read trace file links out of the roots; off,
  // a trace file is read only when its real path lies under a root.
  bool follow_symlinks = false;
  // Trace files per directory (watch::ScanOptions); the window cap is
  // assembler.max_files_per_window.
  int64_t max_files_per_dir = caps::kFilesPerDir.value;
  // Directories walked and inotify watches held per owner (here: the uid of
  // the job directory); runs and windows per owner are in `assembler`. 0: none.
  int64_t max_dirs_per_owner = caps::kDirsPerOwner.value;
  int64_t max_watches_per_owner = caps::kWatchesPerOwner.value;
  // Run state bytes per owner (core/caps.h); 0: none.
  int64_t max_state_bytes_per_owner = caps::kStateBytesPerOwner.value;
  int64_t max_state_bytes = caps::kStateBytes.value;  // all owners together
  // serve --shard: only the jobs this shard owns are walked, analysed, kept
  // in the state file and exported. Restart to change.
  watch::Shard shard;
  window::AssemblerOptions assembler;
  // Windows analysed at once: more than one, so a window that runs to its
  // file budget (analyze.limits) does not hold every other run's.
  int workers = 2;
  int worker_nice = 10;    // added to the workers' nice value
  std::string state_file;  // empty: no persistence
  analysis::AnalyzeOptions analyze;
  std::optional<double> step_seconds;  // --step-time (config step source)
  // Training logs (issue 4): discovery, parsing options. Restart to change.
  TrainingLogsOptions training_logs;
  std::string history_file;  // --history; empty: none. Restart to change.
  // Per owner: each owner's history file rotates at this size.
  uint64_t history_max_bytes = static_cast<uint64_t>(caps::kHistoryBytesPerOwner.value);
  // --metrics-detail: export the detail metrics and zero family series too
  // (snapshot::Snapshot::metrics_detail).
  bool metrics_detail = false;
};

// The daemon's thread names (/proc/PID/task/TID/comm, `top -H`; at most 15
// characters): the scan thread and each analysis worker.
inline constexpr const char* kScanThreadName = "profwatch-scan";
inline constexpr const char* kWorkerThreadName = "profwatch-work";

class Daemon {
 public:
  Daemon(DaemonOptions options, std::shared_ptr<snapshot::SnapshotStore> store,
         std::shared_ptr<prometheus::Registry> registry, const Clock& clock);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Loads --state (publishing it at once), then starts the threads.
  Status Start() EXCLUDES(mu_);
  // Stops accepting work, lets in-flight analyses finish, persists, joins.
  void Stop() EXCLUDES(mu_);
  // Applies reloadable options (analysis, step time, retention, settle,
  // expectations, retries, poll interval, host filter). Roots, workers,
  // inotify, the shard and the state file need a restart; a change to them
  // is logged.
  void Reload(const DaemonOptions& options) EXCLUDES(mu_);

  // Counters, for tests.
  int64_t WindowsAnalyzed() const { return windows_analyzed_.load(); }

  // A worker is stuck when it has been busy on one window for longer than
  // its window's time budget (analyze.limits.window_max_time, else the
  // per-file max_time) by the injected clock: the budget checks end a
  // window's reads there, so it is work no budget check reaches. Published
  // as profwatch_workers_stuck; /-/ready answers 503 while every worker is.

 private:
  // The state file's bytes, serialised under mu_ and written after it is
  // released. `seq` orders the saves: an older one never replaces a newer.
  struct StateSave {
    uint64_t seq = 0;
    std::string path;
    std::string data;
    TimePoint started;  // when serialising began (the throttle's cost)
  };
  // The scan thread's timing between loops.
  struct ScanCadence {
    bool need_scan = true;
    bool hinted = false;      // entries or trace files changed: rescan
    bool log_hinted = false;  // only other files were written: re-read the logs
    TimePoint last_scan{};
    TimePoint last_log_poll{};
  };

  // Restores --state (pipeline/state_restore.h) into runs_, the ledger and
  // the assembler, sweeping it for retention.
  void RestoreStateLocked(TimePoint now) REQUIRES(mu_);
  void ScanLoop();
  // Walks the roots and feeds the result to the assembler; returns when it
  // was taken (the clock after the walk), nullopt when the stop flag cut
  // the walk short (nothing is fed).
  std::optional<TimePoint> ScanOnce(const watch::ScanOptions& scan_options);
  // The assembler, ledger, reports and confinement roots after a
  // scan; returns the run dirs the assembler took (the others are over a cap).
  std::set<std::string> ObserveScanLocked(const watch::ScanResult& result, TimePoint now)
      REQUIRES(mu_);
  // Applies what changed in the ledger: refusal counters by owner
  // and reason, one log line per change (pipeline/refusals.h).
  void ApplyLedgerLocked() REQUIRES(mu_);
  // Queues ready windows, recounts workers, sweeps retention,
  // publishes (at once after a scan, else throttled) and returns a due
  // state save. `changed`: published state changed before this call.
  std::optional<StateSave> DispatchLocked(TimePoint now, bool scanned, bool changed) REQUIRES(mu_);
  // How long the scan thread may sleep: until the next poll, assembler
  // deadline, hint gap or throttled publish, at most kMaxScanIdle.
  std::chrono::milliseconds SleepTimeout(const ScanCadence& cadence,
                                         std::chrono::milliseconds poll_interval, TimePoint now);
  // Recounts the busy and stuck workers at `now` and logs each
  // window that became stuck once; true when a published count changed.
  bool UpdateWorkersLocked(TimePoint now) REQUIRES(mu_);
  void WorkerLoop(int index);
  // The crash-loop guard before `task` is analysed (DecideInflight on the
  // in-flight journal): false when the window is failed as crashed instead
  // (recorded here); true when it may be analysed, its journal record then
  // in flight and this worker counted in analysing_ (alone when a daemon
  // died on it before). EndAnalysis undoes the count and ends the record.
  bool BeginAnalysis(const window::WindowTask& task, const DaemonOptions& options, bool* alone);
  void EndAnalysis(const window::WindowTask& task, bool alone, bool finished);
  void RunTask(const window::WindowTask& task, const DaemonOptions& options);
  // Asks the assembler and the window policy about the finished
  // analysis of `task` and applies the verdict (counters, log events, run
  // state, history, publish); returns a due state save.
  std::optional<StateSave> RecordResultLocked(const window::WindowTask& task, FinishedWindow w,
                                              const DaemonOptions& options, TimePoint now)
      REQUIRES(mu_);
  // Appends the run's history line (--history) to its owner's
  // file, warning on failure and logging an owner's first rotation.
  void AppendHistoryLocked(const snapshot::RunState& rs, watch::Owner owner, TimePoint now)
      REQUIRES(mu_);
  // Builds and publishes the next snapshot from runs_, then counts
  // the window results it carries (unpublished_).
  void PublishLocked(TimePoint now) REQUIRES(mu_);
  // PublishLocked now (true), or once publish_throttle_ allows
  // (false; the scan loop publishes what is pending).
  bool PublishSoonLocked(TimePoint now) REQUIRES(mu_);
  void RetentionSweepLocked(TimePoint now) REQUIRES(mu_);
  // The state to save now (nullopt without --state). The
  // throttle counts the save from here; WriteState adds the write's cost.
  std::optional<StateSave> SerializeStateLocked(TimePoint now) REQUIRES(mu_);
  // SerializeStateLocked now, or nullopt and pending until
  // persist_throttle_ allows (the scan loop, which wakes at least every
  // second, saves what is pending). A save serialises every run: the
  // throttle bounds the share of time spent saving (store::SaveThrottle).
  std::optional<StateSave> PersistSoonLocked(TimePoint now) REQUIRES(mu_);
  // Without mu_: writes `save` (atomic write-rename) unless a newer save is
  // on disk already, counting a failed write; nothing for nullopt.
  void WriteState(std::optional<StateSave> save) EXCLUDES(mu_);
  // Sets the run's window_failure (profwatch_window_failed),
  // creating a window-less run entry when the run has none yet.
  void FlagFailureLocked(const window::WindowTask& task, std::string_view reason) REQUIRES(mu_);
  // Training logs (scan thread): registers the scanned runs, then polls the
  // logs outside mu_ and applies what changed under it. True if published
  // state changed.
  // Only runs the assembler took (`run_dirs`) are followed.
  void ObserveLogRuns(const watch::ScanResult& result, const std::set<std::string>& run_dirs);
  // `discover`: also look for logs of runs without one (on scans).
  bool PollTrainingLogs(TimePoint now, bool discover);
  // The run's log profiler_steps, one input of the profile-step
  // choice (aggregate/profile_steps.h).
  void ApplyRunProfileStepsLocked(const window::WindowTask& task, DaemonOptions& options) const
      REQUIRES(mu_);
  // Picks the step source, logging a missing one once per run.
  void ChooseStepLocked(snapshot::RunState& rs, const DaemonOptions& options) REQUIRES(mu_);

  const Clock& clock_;
  std::shared_ptr<snapshot::SnapshotStore> store_;
  std::shared_ptr<prometheus::Registry> registry_;
  SelfMetrics metrics_;  // in registry_

  mutable Mutex mu_;
  DaemonOptions options_ GUARDED_BY(mu_);
  window::Assembler assembler_ GUARDED_BY(mu_);
  std::map<snapshot::RunKey, snapshot::RunState> runs_ GUARDED_BY(mu_);
  std::map<snapshot::RunKey, uint64_t> exported_serial_ GUARDED_BY(mu_);
  double last_scan_unix_ GUARDED_BY(mu_) = 0;
  int64_t last_permission_errors_ GUARDED_BY(mu_) = 0;
  int64_t last_symlinks_skipped_ GUARDED_BY(mu_) = 0;
  // Workers wait here for the assembler's fair queue (Schedule, TakeNext).
  CondVar queue_cv_;
  // Workers analysing a window now (past BeginAnalysis), and
  // whether one analyses a window alone (a daemon died on it before): no
  // other analysis starts meanwhile, and it starts only when none runs.
  int analysing_ GUARDED_BY(mu_) = 0;
  bool alone_ GUARDED_BY(mu_) = false;
  CondVar alone_cv_;
  // `<--state>.inflight` (store/inflight_journal.h); no-op without --state.
  store::InflightJournal journal_{""};
  // Per worker: since when (clock_) it works on a window, and whether that
  // window was logged as stuck.
  std::vector<WorkerSlot> busy_ GUARDED_BY(mu_);
  int64_t workers_busy_ GUARDED_BY(mu_) = 0;   // published
  int64_t workers_stuck_ GUARDED_BY(mu_) = 0;  // published
  bool stopping_ GUARDED_BY(mu_) = false;
  // Held while a state save is written, never together with mu_.
  Mutex persist_mu_;
  uint64_t written_seq_ GUARDED_BY(persist_mu_) = 0;
  uint64_t save_seq_ GUARDED_BY(mu_) = 0;
  store::SaveThrottle persist_throttle_ GUARDED_BY(mu_);
  bool persist_pending_ GUARDED_BY(mu_) = false;
  std::string state_save_error_ GUARDED_BY(mu_);  // published
  store::SaveThrottle publish_throttle_ GUARDED_BY(mu_);
  bool publish_pending_ GUARDED_BY(mu_) = false;
  // Window results not yet in a published snapshot, by result label.
  struct ResultCounts {
    int64_t ok = 0;
    int64_t incomplete = 0;
    int64_t error = 0;
  } unpublished_ GUARDED_BY(mu_);

  std::unique_ptr<watch::Watcher> watcher_;
  std::thread scan_thread_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> rescan_requested_{false};
  std::atomic<int64_t> windows_analyzed_{0};

  // The job names clashing now (logged once each).
  std::set<std::string> clashing_jobs_ GUARDED_BY(mu_);

  // Training logs: the tailers belong to the scan thread; the figures go
  // into runs_ under mu_.
  std::unique_ptr<TrainingLogs> training_logs_;
  std::map<snapshot::RunKey, int64_t> log_profile_steps_ GUARDED_BY(mu_);
  std::set<snapshot::RunKey> step_missing_logged_ GUARDED_BY(mu_);
  std::unique_ptr<store::OwnerHistory> history_;
  // The last condition seen per configured root, and what the
  // snapshot exports of it.
  std::map<std::string, watch::RootCondition> root_conditions_ GUARDED_BY(mu_);
  std::map<std::string, bool> watch_roots_ GUARDED_BY(mu_);
  // What is refused and what the per-owner caps leave out, by
  // owner (refusals counted once while they stay; runs skipped for
  // retention, which the landing page lists). Bounded by what is on disk.
  ledger::Ledger ledger_ GUARDED_BY(mu_);
  // Tracked files at the last scan: when a scan drops many, the freed heap
  // is handed back to the kernel (malloc_trim).
  int64_t tracked_files_ GUARDED_BY(mu_) = 0;
  // The watch roots' real paths at the last scan; without
  // --follow-symlinks the workers read only files under them.
  read::Confinement confine_roots_ GUARDED_BY(mu_);
};

}  // namespace profwatch::pipeline
