// TrainingLogs: finds each watched run's training log and follows it for the
// serve daemon (issue 4). Per run: one steplog::LogTailer + one
// steplog::StepTimeSource; Poll() reads what was appended (bounded bytes per
// log per call) and reports the figures that changed, which the daemon copies
// into the run's snapshot::RunState.
//
// Discovery, per run, first match wins and sticks (a better candidate that
// appears later is not switched to; restart to re-resolve):
//   1. explicit --log bindings: `JOB/RUN=FILE` or `RUN=FILE` name the run; a
//      plain `FILE` applies while exactly one run is known (with several
//      runs it is ambiguous: warned once, not used); a `JOB/RUN=FILE` run
//      is known (and its log followed) before any of its traces exists,
//      unless another shard owns JOB (TrainingLogsOptions::shard);
//   2. the globs (--log-glob, repeatable; default kDefaultLogGlobs), tried in
//      order, with {jobs_root}, {job}, {run} replaced by the run's jobs
//      root, job directory name and run path (RunLocation; glob
//      metacharacters in them escaped); the lexically first match of the
//      first pattern that matches anything is used.
// A run whose log does not exist yet is retried on every Poll() (a log that
// appears late is picked up).
//
// Ownership (a log belongs to its run): a log found by the globs is used
// only when it is the run's (steplog::LogTrust): its real path lies in the
// run's or the job's real directory, or it is owned by the run directory's
// owner (who created the run: the owner the ledger charges), opened without
// following a last-component symlink. So a root-level pattern
// (`{jobs_root}/{job}.{run}.log`) still finds logs the run's owner wrote,
// while a file another user plants at that name in a shared (sticky) root
// is refused: the next match, or the next pattern, is tried. Each refused
// file is logged once per run with its reason and counted
// (profwatch_training_logs_refused_total{owner=<the run's>,
// reason=kLogNotTheRunsReason}); the check is repeated on every open of
// the followed file (a rotation to a planted file is refused too).
//
// Confinement (serve without --follow-symlinks): a log found by the globs
// is read only when the real path of the opened file lies under a watched
// root (TrainingLogsOptions::confine_to, the check traces get), so a link
// to a file elsewhere exports nothing of it. A --log binding is read where
// it lies: the operator named it.
// Budget: each log reads at most max_bytes_per_scan per scan_period
// (serve: --log-max-bytes-per-scan per --poll-interval), so a huge or
// sparse file costs a bounded read rate; a log still behind waits for the
// next period.
//
// Thread-safety: the daemon's scan thread owns it and calls everything but
// UpdateWindowSteps, which any thread may call (a worker placing the window
// it publishes); an internal mutex guards the followed logs for it.
// ChooseStepTime and the parsing helpers are pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/caps.h"
#include "core/clock.h"
#include "core/result.h"
#include "figures/step_basis.h"
#include "read/byte_source.h"
#include "snapshot/snapshot.h"
#include "steplog/log_tailer.h"
#include "steplog/step_time_source.h"
#include "watch/scanner.h"
#include "watch/shard.h"

namespace profwatch::pipeline {

// MaxText/Slurm layouts: `<jobs_root>/<job>.<run>.log` (one log per run),
// `<jobs_root>/<job>.log` (one per job), `<job>/artifact/log`,
// `<job>/<run>/log*`.
inline const std::vector<std::string> kDefaultLogGlobs = {
    "{jobs_root}/{job}.{run}.log",
    "{jobs_root}/{job}.log",
    "{jobs_root}/{job}/artifact/log",
    "{jobs_root}/{job}/{run}/log*",
};

// The `reason`s of profwatch_training_logs_refused_total: a run not
// followed because --max-followed-logs logs are; a file a pattern matched
// that is not the run's (see Ownership).
inline constexpr std::string_view kLogMaxFollowedReason = "max_followed_logs";
inline constexpr std::string_view kLogNotTheRunsReason = "not_the_runs";

// One --log value.
struct LogBinding {
  std::string training_job;  // empty: any job
  std::string run;           // empty (with empty job): a plain FILE
  std::string path;
  bool operator==(const LogBinding&) const = default;
};

// "FILE", "RUN=FILE" or "JOB/RUN=FILE" (RUN may contain '/': the first '/'
// ends JOB). Text before the first '=' is a binding only when it is non-empty
// and does not start with '/', '.' or '~' (so "/data/a=b.log" is a plain
// path). kConfig on an empty FILE.
Result<LogBinding> ParseLogBinding(std::string_view text);

// Replaces {jobs_root}, {job}, {run} in `pattern` (values glob-escaped).
std::string ExpandLogGlob(std::string_view pattern, const std::string& jobs_root,
                          const std::string& job, const std::string& run);

// A run as the scanner saw it, and the directory its job lives in.
struct RunLocation {
  snapshot::RunKey key;
  std::string jobs_root;  // parent of the job directory
  // What the globs' {job} and {run} stand for: the job directory's name and
  // the run directory's path below it ("" for traces in the job dir
  // itself). They equal the labels except where a root of one job is bound
  // to another name (--watch JOB=DIR) or the run is watch::kRunOfJobDir.
  std::string job_dir_name;
  std::string run_path;
  watch::Owner owner = watch::kNoOwner;  // the run's (watch/owner.h)
};
// From a scanned trace file: the run dir minus the run's path components is
// the job dir (the run dir itself for watch::kRunOfJobDir); its parent is
// the jobs root.
RunLocation LocateRun(const watch::FileObservation& file);
// A run directory met without a watch root (`analyze <run dir>`): the run is
// the directory, its job the parent, the jobs root the parent's parent (the
// MaxText `<jobs_root>/<job>/<run>` layout, as serve labels it under a root
// of jobs: `analyze` is given a run dir by hand and may look above it).
RunLocation LocateRunDir(const std::string& run_dir);

// Discovery step 2 for one run: the lexically first match of the first of
// `globs` that matches anything; "" when none does. serve and analyze both
// find a run's log with it. With `trust` (serve), a match that is not the
// run's or lies outside `confine_to` (steplog::OpenRunLog) is skipped, its
// path and error message appended to `refused` (when not null), and the
// next match or pattern tried.
std::string FindLogByGlobs(const RunLocation& loc, const std::vector<std::string>& globs,
                           const steplog::LogTrust* trust = nullptr,
                           const read::Confinement* confine_to = nullptr,
                           std::vector<std::pair<std::string, std::string>>* refused = nullptr);

// Whose the logs of `loc` may be (see Ownership): its run's and job's real
// directories, and its owner.
steplog::LogTrust TrustOf(const RunLocation& loc);

struct TrainingLogsOptions {
  std::vector<LogBinding> bindings;
  std::vector<std::string> globs = kDefaultLogGlobs;
  steplog::StepTimeOptions step_time;
  // Each log reads at most this much per Poll(); behind() says more is left.
  steplog::TailerOptions tailer = {.max_line_bytes = 64 * 1024,
                                   .chunk_bytes = 64 * 1024,
                                   .max_bytes_per_poll = 1 << 20,
                                   .fingerprint_bytes = 4096};
  // Bytes each log may read per scan_period, its Polls together (at least
  // tailer.max_bytes_per_poll).
  uint64_t max_bytes_per_scan = static_cast<uint64_t>(caps::kLogBytesPerScan.value);
  std::chrono::milliseconds scan_period{15'000};
  // Where logs found by the globs may lie (real paths of the watched
  // roots; SetConfinement updates it); nullopt: anywhere.
  std::optional<read::Confinement> confine_to;
  // serve --max-followed-logs: runs whose logs are followed at most (each
  // followed log keeps a file open); runs beyond it are not followed,
  // counted once each (ObserveRuns) and warned once.
  size_t max_runs = static_cast<size_t>(caps::kFollowedLogs.value);
  // serve --shard: a JOB/RUN=FILE binding of a job another shard owns is
  // dropped (logged), so no daemon follows or exports another shard's run.
  watch::Shard shard;
};

// What changed for one run in one Poll().
struct LogUpdate {
  snapshot::RunKey key;
  std::string path;
  snapshot::TrainingInfo training;
  std::optional<int64_t> profile_steps;  // effective profiler_steps (log or override)
  bool new_lines = false;                // lines were read
  bool changed = false;                  // training or profile_steps differ from the last report
  // With new_lines: when the newest of them was written at the latest (the
  // log's modification time, capped by now). Retention counts it.
  std::optional<double> written_unix;
  uint64_t new_parse_errors = 0;
  std::vector<std::string> new_warnings;
};

class TrainingLogs {
 public:
  // `clock` is borrowed and must outlive this object.
  TrainingLogs(TrainingLogsOptions options, const Clock& clock);
  ~TrainingLogs();
  TrainingLogs(const TrainingLogs&) = delete;
  TrainingLogs& operator=(const TrainingLogs&) = delete;

  // Registers runs seen by a scan (idempotent). Returns, per owner, how
  // many runs were refused for the first time because max_runs are followed
  // already (a refused run is counted once, however often scans see it).
  std::map<watch::Owner, size_t> ObserveRuns(const std::vector<RunLocation>& runs);
  // Stops following a run (retention dropped it).
  void Forget(const snapshot::RunKey& key);
  // The watched roots' real paths after a scan: the directories logs found
  // by the globs may lie under. Ignored unless options.confine_to was set
  // (a daemon without --follow-symlinks).
  void SetConfinement(read::Confinement roots);
  // Resolves logs for runs without one (unless `discover` is false), polls
  // every followed log once and returns one entry per run that read lines or
  // changed. Without discovery it only reads logs already followed: the
  // answer to a write hint, which cannot make a new log appear (creating one
  // is a directory change, answered by a scan), and it spares a glob per
  // pattern for every run without a log.
  std::vector<LogUpdate> Poll(bool discover = true);

  // Places the run's window in its log (once: when `w` is not bound yet and
  // the log has caught up, at the latest profiled steps the log reached) and
  // updates its step time until it is settled. `previous`: the run's window
  // before this one (a located range it had is not this window's). False
  // when nothing changed (no log, still catching up, or already settled).
  bool UpdateWindowSteps(const snapshot::RunKey& key, snapshot::WindowLogSteps& w,
                         const snapshot::WindowLogSteps* previous = nullptr) const;

  // True when a log stopped at its per-poll byte budget in the last Poll()
  // with some of its scan budget left (polling again reads more).
  bool behind() const { return behind_; }
  // Directories holding followed logs (for watch hints).
  std::vector<std::string> LogDirectories() const;
  // Per run owner, the files refused since the last call because they are
  // not their run's (each file counted once per run).
  std::map<watch::Owner, size_t> TakeRefusedLogs();
  // The followed log of a run, "" when none is found yet.
  std::string LogPathOf(const snapshot::RunKey& key) const;
  size_t runs() const { return locations_.size(); }

 private:
  struct Followed;
  // Finds a log for `loc` (bindings, then globs); "" when none exists yet.
  // `bound`: set when an explicit --log binding named it.
  std::string Resolve(const RunLocation& loc, bool& bound);
  // Counts and logs (once per run and file) a file refused as not the run's.
  void RefuseLog(const RunLocation& loc, const std::string& path, const std::string& why);

  TrainingLogsOptions options_;
  const Clock& clock_;
  // Guards followed_ (the map and each log's tailer and source) against
  // UpdateWindowSteps from other threads. Taken after the daemon's mutex,
  // never before it.
  mutable std::mutex mu_;
  std::map<snapshot::RunKey, RunLocation> locations_;
  std::map<snapshot::RunKey, std::unique_ptr<Followed>> followed_;
  bool behind_ = false;
  bool warned_ambiguous_ = false;
  bool warned_max_runs_ = false;
  std::set<snapshot::RunKey> refused_;  // runs not followed for max_runs
  // Files refused as not their run's, and the counts not taken yet.
  std::set<std::pair<snapshot::RunKey, std::string>> refused_logs_;
  std::map<watch::Owner, size_t> refused_logs_new_;
};

// Sets the run's step time: what the run knows (the steady steps around
// the window's profiled steps once the window is placed in its log, the
// log's recent steady steps, the window's step markers, `config`) handed
// to figures::ChooseStepTime, which decides; none leaves step_seconds unset
// and step_source empty. Returns true when it changed.
bool ChooseStepTime(snapshot::RunState& rs, std::optional<double> config_step_seconds);

}  // namespace profwatch::pipeline
