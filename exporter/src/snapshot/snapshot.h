// Snapshot: the immutable state the scrape path renders. The pipeline builds
// a new Snapshot after each analysed window (or training-log update, or
// retention sweep) and publishes it; Collect() only copies the pointer and
// converts. Each run carries its window's figures (figures/), computed when
// its window or step time changes, never at a scrape. SnapshotStore is
// thread-safe; a Snapshot is never mutated after publication.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "aggregate/window_stats.h"
#include "core/mutex.h"
#include "figures/window_figures.h"

namespace profwatch::snapshot {

struct RunKey {
  std::string training_job;  // job directory name
  std::string run;           // run directory name
  auto operator<=>(const RunKey&) const = default;
};

// Latest training-log figures of a run (all optional: the log may be absent).
struct TrainingInfo {
  std::optional<int64_t> last_step;
  std::optional<double> last_step_seconds;
  std::optional<double> steady_step_seconds;
  std::optional<double> tokens_per_second_per_device;
  std::optional<double> tflops_per_device;
  std::optional<double> mfu_ratio;
  std::optional<double> loss;
  std::optional<double> last_step_unix;
};

// Where the latest window sits in its training log and the step time that
// gives it (docs/step-time.md, "Step time of a window"). Mirrors
// steplog::WindowSteps plus the result; persisted in the --state file.
struct WindowLogSteps {
  bool bound = false;                   // placed in the log (the log had caught up)
  bool located = false;                 // profiled steps from the log's profile config
  int64_t first_step = 0;               // profiled steps; !located: the anchor step (the
  int64_t last_step = 0;                // log's last step when the window was bound)
  std::optional<int64_t> period_first;  // its period's steps: [first, end)
  std::optional<int64_t> period_end;
  uint64_t segment = 0;           // the log segment (restart count) they are in
  std::optional<double> seconds;  // median of the steady steps around them
  int64_t steps = 0;              // steady steps in the median
  bool settled = false;           // no later log line changes `seconds`
  bool operator==(const WindowLogSteps&) const = default;
};

// The empty window of a run with training-log data only: one shared instance.
std::shared_ptr<const aggregate::WindowStats> NoWindowStats();

// The latest complete window of one run plus everything derived for it.
struct RunState {
  RunKey key;
  std::string window_id;  // first <ts> dir name of the window (the `window` label)
  // When the window started: its first <ts> dir's time, seconds since the
  // epoch (UTC). Which of two windows is newer is decided on this value, never
  // on window_id.
  int64_t window_start = 0;
  // Never null. Immutable and shared: the daemon's working copy and every
  // published Snapshot point at the same stats, so publishing copies a
  // pointer per run instead of the window, however many runs there are. A
  // new window replaces the pointer.
  std::shared_ptr<const aggregate::WindowStats> stats = NoWindowStats();
  std::string format = "json";  // json | xplane | mixed
  int expected_gpus = 0;        // 0 = unknown
  bool incomplete = false;      // timed out short of expectation, or failed files
  double analyzed_unix = 0;     // when the window was analysed
  // Step time used for the gap; source is "log", "trace" or "config"
  // (figures::ChooseStepTime decides).
  std::optional<double> step_seconds;
  std::string step_source;
  // Every figure of the window for that step time (has_window only): set by
  // RefreshFigures, which the pipeline calls whenever `stats` or the step
  // time change; null until then. Shared and immutable like `stats`.
  std::shared_ptr<const figures::WindowFigures> figures;
  TrainingInfo training;
  WindowLogSteps window_log;  // the window's steps in the log (has_window only)
  // Unix time of the newest write to the run's data: its windows' trace
  // files (their mtime; the window's <ts> time when no mtime is known) and
  // its training log (the log's mtime when new lines were read). Never the
  // time profwatch read or analysed them. Drives retention and
  // profwatch_run_activity_timestamp_seconds.
  double last_activity_unix = 0;
  bool has_window = false;  // false: only training-log data so far
  // Why the run's latest window analysis failed for real (a file given up
  // after --max-retries, a corrupt or unreadable file, no usable kernel data
  // so the window was not exported): the failed file's ErrorCodeName (for a
  // given-up file, the error it was given up for), or "no_data" when no file
  // failed but the window has no kernel data; empty once a window of the run is analysed with every
  // file read cleanly. A file still being retried changes nothing here. Exported as
  // profwatch_window_failed{reason}.
  std::string window_failure;

  // A private copy of `stats` to edit (state loading, tests); the reference
  // is valid until `stats` is copied or replaced. The figures are stale
  // until RefreshFigures.
  aggregate::WindowStats& MutableStats();
  // The step time as figures/ takes it.
  figures::StepTime step() const { return {step_seconds, step_source}; }
  // profwatch_window_expected_gpus: the expectation, else (a run's first
  // window, nothing configured) the window's own GPUs, which the next window
  // is held to; so the series exists from the first window on.
  int ShownExpectedGpus() const { return expected_gpus > 0 ? expected_gpus : stats->gpus(); }
};

// Computes `rs.figures` anew when they are missing or were computed for
// other stats or another step time (a cheap check otherwise); drops them
// for a run without a window.
void RefreshFigures(RunState& rs);

struct Snapshot {
  std::map<RunKey, RunState> runs;
  double last_scan_unix = 0;
  int64_t pending_windows = 0;  // all runs together (the state file keeps it)
  // Pending windows per run (profwatch_pending_windows{training_job,run});
  // runs with none are left out (exported as 0 when in `runs`).
  std::map<RunKey, int64_t> pending_by_run;
  // Runs not analysed because they were quiet longer than --retention, with
  // their last activity (unix seconds): the landing page lists them (not
  // persisted).
  std::map<RunKey, double> retention_skipped;
  // Analysis workers on a window now, and those busy on one window longer
  // than the per-file time budget (pipeline::Daemon; not persisted).
  int64_t workers_busy = 0;
  int64_t workers_stuck = 0;
  int64_t workers = 0;  // configured (--workers); 0: not a daemon's snapshot
  // How long the longest-waiting ready window has waited for a worker (0
  // when none waits), by the daemon's clock at publish.
  double oldest_waiting_seconds = 0;
  // Per (owner label, reason): what a per-owner cap leaves out now
  // (profwatch_owner_capped); owners under every cap are absent.
  std::map<std::pair<std::string, std::string>, int64_t> owner_capped;
  // Each --watch root as of the last scan: true when it is a readable
  // directory (profwatch_watch_root_readable).
  std::map<std::string, bool> watch_roots;
  // serve --shard I/N (profwatch_shard_info): shard = I, shards = N; shards
  // 0 when the daemon is not sharded.
  uint64_t shard = 0;
  uint64_t shards = 0;
  // serve --metrics-detail: also export the detail metrics
  // (expose::kDetailMetrics) and the zero series of families that launched
  // no kernel and FLOP kinds with none counted.
  bool metrics_detail = false;
  // The last --state save's error; empty when it succeeded or none failed
  // yet (/-/ready names it, not persisted).
  std::string state_save_error;
};

class SnapshotStore {
 public:
  SnapshotStore() : current_(std::make_shared<const Snapshot>()) {}
  std::shared_ptr<const Snapshot> Current() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return current_;
  }
  // The mutex is held only for the pointer swap.
  void Publish(std::shared_ptr<const Snapshot> next) EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      current_ = std::move(next);
      published_ = true;
    }
    first_publish_.NotifyAll();
  }
  // False until the first Publish: until then the store holds an empty
  // placeholder, not the daemon's runs (its --state is still being
  // restored), which /metrics must not serve as if no run existed.
  bool Published() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return published_;
  }
  // Waits for the first Publish until `deadline`; returns Published().
  bool WaitPublished(std::chrono::steady_clock::time_point deadline) const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    while (!published_) {
      if (!first_publish_.WaitUntil(mu_, deadline)) break;  // timed out
    }
    return published_;
  }

 private:
  mutable Mutex mu_;
  mutable CondVar first_publish_;
  std::shared_ptr<const Snapshot> current_ GUARDED_BY(mu_);
  bool published_ GUARDED_BY(mu_) = false;
};

}  // namespace profwatch::snapshot
