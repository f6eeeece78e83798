#include "pipeline/daemon.h"

#include <fmt/format.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <iterator>
#include <set>
#include <system_error>

#include "core/log.h"
#include "expose/report.h"
#include "figures/step_basis.h"
#include "pipeline/limits.h"
#include "pipeline/scan_events.h"
#include "pipeline/state_restore.h"
#include "store/state_file.h"
#include "store/state_json.h"
#include "watch/layout.h"
#include "window/grouping.h"

namespace profwatch::pipeline {
namespace {

using std::chrono::milliseconds;

// Hint-triggered rescans are at most this frequent (a writer's burst of
// IN_MODIFY events must not turn into a scan loop).
constexpr milliseconds kMinHintScanGap{250};
// The state file is saved at most this often while results land, and
// after a save at most once per kPersistCostFactor times its duration
// (store::SaveThrottle).
constexpr milliseconds kPersistGap{1000};
constexpr int kPersistCostFactor = 10;
// A new snapshot is published at most this often while results land, and
// after a publish at most once per kPublishCostFactor times its duration:
// each publish copies every run, so publishing once per window result would
// cost runs x results when thousands of windows land together.
constexpr milliseconds kPublishGap{250};
constexpr int kPublishCostFactor = 10;

// A scan that finds this many fewer trace files than the one before, and a
// worker done with a window of this many files, hand the freed heap back to
// the kernel (malloc_trim): glibc returns only the top of a heap by itself,
// and the state of thousands of files lies scattered through the scan
// thread's and the workers' arenas until reused.
constexpr int64_t kTrimAfterDroppedFiles = 1024;

void Emit(const std::vector<LogEvent>& logs) {
  for (const LogEvent& e : logs) profwatch::Emit(e);
}

RefusalLimits RefusalLimitsOf(const DaemonOptions& o) {
  return {o.assembler.max_files_per_window, o.max_dirs_per_owner, o.max_watches_per_owner,
          o.host_filter};
}

// The assembler retries by the window policy (DecideRetry).
window::AssemblerOptions WithRetryPolicy(window::AssemblerOptions o) {
  o.retry_policy = &DecideRetry;
  return o;
}

}  // namespace

Daemon::Daemon(DaemonOptions options, std::shared_ptr<snapshot::SnapshotStore> store,
               std::shared_ptr<prometheus::Registry> registry, const Clock& clock)
    : clock_(clock),
      store_(std::move(store)),
      registry_(std::move(registry)),
      metrics_(*registry_),
      options_(std::move(options)),
      assembler_(WithRetryPolicy(options_.assembler)),
      journal_(options_.state_file.empty() ? "" : options_.state_file + ".inflight"),
      persist_throttle_(kPersistGap, kPersistCostFactor),
      publish_throttle_(kPublishGap, kPublishCostFactor) {
  if (options_.workers < 1) options_.workers = 1;
  TrainingLogsOptions log_options = options_.training_logs;
  log_options.shard = options_.shard;
  log_options.scan_period = options_.poll_interval;
  // Logs found under the roots are read only where traces would be: under
  // a root, unless --follow-symlinks (none until the first scan).
  if (!options_.follow_symlinks) log_options.confine_to = read::Confinement{};
  training_logs_ = std::make_unique<TrainingLogs>(std::move(log_options), clock_);
  if (!options_.history_file.empty()) {
    history_ = std::make_unique<store::OwnerHistory>(
        options_.history_file, options_.history_max_bytes, static_cast<watch::Owner>(geteuid()));
  }
}

Daemon::~Daemon() { Stop(); }

void Daemon::FlagFailureLocked(const window::WindowTask& task, std::string_view reason) {
  const snapshot::RunKey key{task.run.training_job, task.run.run};
  const auto it = runs_.find(key);
  snapshot::RunState flagged = FlaggedRun(task, it == runs_.end() ? nullptr : &it->second, reason);
  runs_[key] = std::move(flagged);
}

void Daemon::RestoreStateLocked(TimePoint now) {
  RestoredState state = LoadStateFile(options_.state_file, options_.shard, now);
  for (const std::string& reason : state.dropped_reasons) {
    metrics_.state_dropped_family->Add({{"reason", reason}}).Increment();
  }
  runs_ = std::move(state.runs);
  // Runs older than --retention are not exported with --state either:
  // from the first scrape on, the set is the one a start without the
  // file would find (and the file is saved without them).
  const size_t restored = runs_.size();
  RetentionSweepLocked(now);
  // Saved again without what was left out.
  if (!state.dropped_reasons.empty() || state.other_shard_runs > 0 || runs_.size() != restored) {
    persist_pending_ = true;
  }
  // The file keeps each window's aggregate and step time; its figures
  // are computed here, once.
  for (auto& [key, rs] : runs_) snapshot::RefreshFigures(rs);
  // What each restored run keeps, charged to its owner once a scan
  // sees the run (the file does not say whose it is).
  for (const auto& [key, rs] : runs_) {
    ledger_.KeepState(LedgerRunKey(key.training_job, key.run), watch::kNoOwner,
                      static_cast<int64_t>(store::SerializeRunState(rs).size()));
  }
  KeepWindowsOfRuns(state.windows, runs_);
  assembler_.Restore(state.windows);
  LogInfo("state loaded", {{"path", options_.state_file},
                           {"runs", runs_.size()},
                           {"windows", state.windows.size()},
                           {"other_shard_runs_dropped", state.other_shard_runs}});
  LoadInflightJournal(journal_);
}

Status Daemon::Start() {
  const TimePoint now = clock_.Now();
  MutexLock lock(mu_);
  if (!options_.state_file.empty()) RestoreStateLocked(now);
  PublishLocked(now);
  if (options_.use_inotify) {
    auto w = watch::MakeInotifyWatcher();
    if (w) {
      watcher_ = std::move(*w);
    } else {
      LogWarn("inotify unavailable, polling only", {{"reason", w.error().ToString()}});
    }
  }
  if (!watcher_) watcher_ = watch::MakePollWatcher();
  watcher_->SetOwnerBudget(options_.max_watches_per_owner);
  LogInfo("watching", {{"roots", JoinPaths(options_.roots)},
                       {"backend", watcher_->Name()},
                       {"poll_interval_s",
                        Rounded(std::chrono::duration<double>(options_.poll_interval).count(), 3)},
                       {"workers", options_.workers}});
  if (options_.shard.enabled()) {
    // It exports the jobs whose name hashes to `shard` under hashmod `shards`.
    LogInfo("shard", {{"shard", options_.shard.index}, {"shards", options_.shard.count}});
  }
  busy_.assign(static_cast<size_t>(options_.workers), WorkerSlot{});
  const int workers = options_.workers;
  lock.Unlock();
  scan_thread_ = std::thread([this] { ScanLoop(); });
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
  return {};
}

void Daemon::Stop() {
  if (!scan_thread_.joinable() && workers_.empty()) return;
  stop_ = true;
  if (watcher_) watcher_->Wake();
  if (scan_thread_.joinable()) scan_thread_.join();
  size_t abandoned = 0;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    abandoned = assembler_.Waiting();  // not yet started: analysed after the next start
  }
  queue_cv_.NotifyAll();
  alone_cv_.NotifyAll();
  for (std::thread& t : workers_) t.join();  // in-flight analyses finish
  workers_.clear();
  std::optional<StateSave> save;
  {
    MutexLock lock(mu_);
    if (publish_pending_) PublishLocked(clock_.Now());
    save = SerializeStateLocked(clock_.Now());
  }
  WriteState(std::move(save));
  LogInfo("stopped", {{"abandoned_windows", abandoned}});
}

void Daemon::Reload(const DaemonOptions& next) {
  MutexLock lock(mu_);
  if (next.roots != options_.roots || next.root_jobs != options_.root_jobs ||
      next.workers != options_.workers || next.use_inotify != options_.use_inotify ||
      next.state_file != options_.state_file || next.shard != options_.shard) {
    LogWarn("reload: --watch, --workers, --no-inotify, --shard and --state need a restart; kept");
  }
  options_.poll_interval = next.poll_interval;
  options_.host_filter = next.host_filter;
  options_.max_files_per_dir = next.max_files_per_dir;
  options_.max_dirs_per_owner = next.max_dirs_per_owner;
  options_.max_watches_per_owner = next.max_watches_per_owner;
  if (watcher_) watcher_->SetOwnerBudget(next.max_watches_per_owner);
  options_.assembler = next.assembler;
  options_.analyze = next.analyze;
  options_.step_seconds = next.step_seconds;
  options_.metrics_detail = next.metrics_detail;
  if (next.history_file != options_.history_file ||
      next.training_logs.bindings != options_.training_logs.bindings ||
      next.training_logs.globs != options_.training_logs.globs) {
    LogWarn("reload: --log, --log-glob and --history need a restart; kept");
  }
  assembler_.SetOptions(WithRetryPolicy(next.assembler));
  rescan_requested_ = true;
  if (watcher_) watcher_->Wake();
  LogInfo("configuration reloaded");
}

void Daemon::ScanLoop() {
  // Named so `top -H`, perf and bench/run.py tell the scan's CPU from the rest.
  pthread_setname_np(pthread_self(), kScanThreadName);
  ScanCadence cadence;
  while (!stop_) {
    TimePoint now = clock_.Now();
    watch::ScanOptions scan_options;
    milliseconds poll_interval;
    TimePoint deadline = TimePoint::max();
    {
      MutexLock lock(mu_);
      scan_options.roots = options_.roots;
      scan_options.root_jobs = options_.root_jobs;
      scan_options.host_filter = options_.host_filter;
      scan_options.follow_symlinks = options_.follow_symlinks;
      scan_options.max_files_per_dir = options_.max_files_per_dir;
      scan_options.max_files_per_window = options_.assembler.max_files_per_window;
      scan_options.max_dirs_per_owner = options_.max_dirs_per_owner;
      scan_options.shard = options_.shard;
      scan_options.stop = &stop_;
      poll_interval = options_.poll_interval;
      deadline = assembler_.NextDeadline().value_or(TimePoint::max());
    }
    // A deadline at or before the last scan is already served by it.
    if (deadline <= cadence.last_scan) deadline = TimePoint::max();
    if (rescan_requested_.exchange(false)) cadence.need_scan = true;
    const bool hint_due = cadence.hinted && now >= cadence.last_scan + kMinHintScanGap;
    const bool log_hint_due = cadence.log_hinted && now >= cadence.last_log_poll + kMinHintScanGap;
    const bool due = cadence.need_scan || hint_due || now >= cadence.last_scan + poll_interval ||
                     now >= deadline;
    bool changed = false;
    if (due) {
      cadence.need_scan = false;
      cadence.hinted = false;
      const std::optional<TimePoint> taken = ScanOnce(scan_options);
      if (!taken) break;  // stopping: the walk was cut short
      now = *taken;
      cadence.last_scan = now;
      changed = true;
    }
    // Logs follow the scan cadence and the hints of written files; a log left
    // behind its byte budget goes on next loop.
    if (due || log_hint_due || training_logs_->behind()) {
      cadence.log_hinted = false;
      cadence.last_log_poll = now;
      if (PollTrainingLogs(now, /*discover=*/due)) changed = true;
    }
    std::optional<StateSave> save;
    {
      MutexLock lock(mu_);
      save = DispatchLocked(now, due, changed);
    }
    WriteState(std::move(save));
    const milliseconds timeout = SleepTimeout(cadence, poll_interval, now);
    if (stop_) break;
    watch::WatchHints hints = watcher_->Wait(timeout);
    if (hints.overflow) cadence.need_scan = true;
    if (!hints.dirs.empty()) cadence.hinted = true;
    if (!hints.content_dirs.empty()) cadence.log_hinted = true;
  }
}

std::optional<TimePoint> Daemon::ScanOnce(const watch::ScanOptions& scan_options) {
  watch::ScanResult result = watch::Scan(scan_options);
  if (result.stopped) return std::nullopt;
  watcher_->AddDirectories(result.dirs, result.dir_owners);
  const TimePoint now = clock_.Now();
  std::set<std::string> run_dirs;
  {
    MutexLock lock(mu_);
    run_dirs = ObserveScanLocked(result, now);
    training_logs_->SetConfinement(confine_roots_);
  }
  ObserveLogRuns(result, run_dirs);
  return now;
}

std::set<std::string> Daemon::ObserveScanLocked(const watch::ScanResult& result, TimePoint now) {
  const window::Assembler::ScanNotes notes = assembler_.ObserveScan(result.files, now);
  metrics_.future_dirs_total->Increment(static_cast<double>(notes.future_dirs.size()));
  int64_t superseded = static_cast<int64_t>(notes.superseded.size());
  for (const window::Assembler::Backlog& b : notes.backlog) superseded += b.windows;
  metrics_.superseded_total->Increment(static_cast<double>(superseded));
  metrics_.run_clashes_total->Increment(static_cast<double>(notes.clashes.size()));
  Emit(ScanNoteEvents(notes, options_.assembler.windows_at_first_sight));
  Emit(RootEvents(result, root_conditions_, watch_roots_));
  ObserveScanRefusals(ledger_, result, notes, watcher_->UnwatchedByOwner(),
                      RefusalLimitsOf(options_));
  if (ledger_.HasRunsWithoutOwner()) {
    for (const watch::FileObservation& f : result.files) {
      ledger_.SetRunOwner(LedgerRunKey(f.labels.training_job, f.labels.run), f.owner);
    }
  }
  if (!ledger_.Refused(kRetentionReason).empty()) {
    // A skipped run whose files are gone is forgotten.
    std::set<std::string> on_disk;
    for (const watch::FileObservation& f : result.files) {
      on_disk.insert(LedgerRunKey(f.labels.training_job, f.labels.run));
    }
    ledger_.KeepRefusals(kRetentionReason,
                         [&](const ledger::Refusal& r) { return on_disk.count(r.key) != 0; });
  }
  ApplyLedgerLocked();
  confine_roots_.clear();
  for (const watch::RootStatus& root : result.roots) {
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(root.path, ec);
    if (!ec) confine_roots_.push_back(real.string());
  }
  last_scan_unix_ = ToUnixSeconds(now);
  const int64_t found = static_cast<int64_t>(result.files.size());
  if (found + kTrimAfterDroppedFiles <= tracked_files_) malloc_trim(0);
  tracked_files_ = found;
  Emit(SkippedEvents(result, last_permission_errors_, last_symlinks_skipped_));
  metrics_.job_clashes->Set(static_cast<double>(result.job_clashes.size()));
  Emit(JobClashEvents(clashing_jobs_, result.job_clashes));
  // The runs the assembler took: those its owner's run cap left out get no
  // training-log reader either.
  std::set<std::string> run_dirs;
  for (const watch::FileObservation& f : result.files) run_dirs.insert(f.run_dir);
  for (const std::string& d : assembler_.RefusedRunDirs()) run_dirs.erase(d);
  return run_dirs;
}

void Daemon::ApplyLedgerLocked() {
  const ledger::Changes changes = ledger_.TakeChanges();
  if (changes.empty()) return;
  for (const auto& [key, n] : changes.refused) {
    metrics_.refused_family->Add({{"reason", key.first}, {"owner", watch::OwnerLabel(key.second)}})
        .Increment(static_cast<double>(n));
  }
  for (const auto& [owner, c] : changes.costs) {
    const prometheus::Labels labels = {{"owner", watch::OwnerLabel(owner)}};
    metrics_.owner_worker_seconds_family->Add(labels).Increment(c.worker_seconds);
    metrics_.owner_analyses_family->Add(labels).Increment(static_cast<double>(c.analyses));
  }
  Emit(RefusalEvents(changes, RefusalLimitsOf(options_)));
}

std::optional<Daemon::StateSave> Daemon::DispatchLocked(TimePoint now, bool scanned, bool changed) {
  const size_t queued = assembler_.Schedule(now);
  const window::Assembler::ReadyNotes ready_notes = assembler_.TakeReadyNotes();
  for (const window::Assembler::Expired& e : ready_notes.expired) {
    ObserveExpired(ledger_, e, runs_.count({e.run.training_job, e.run.run}) != 0);
  }
  ApplyLedgerLocked();
  metrics_.reanalyses_deferred->Increment(static_cast<double>(ready_notes.paced.size()));
  Emit(ReadyNoteEvents(ready_notes, now, options_.assembler.window_timeout,
                       options_.assembler.retention));
  if (queued > 0) {
    queue_cv_.NotifyAll();
    changed = true;
  }
  // The oldest waiting window's age grows while any waits.
  if (assembler_.Waiting() > 0) changed = true;
  if (UpdateWorkersLocked(now)) changed = true;
  const size_t before = runs_.size();
  RetentionSweepLocked(now);
  if (runs_.size() != before) changed = true;
  // A scan publishes at once and is counted only then: a scrape collects
  // the live counters before it takes the snapshot (expose::Exposition), so
  // one that sees profwatch_scans_total = N finds scan N's snapshot.
  // Anything else waits for the throttle.
  if (scanned) {
    PublishLocked(now);
    metrics_.scans_total->Increment();
  } else if (changed || publish_pending_) {
    PublishSoonLocked(now);
  }
  if (persist_pending_ && persist_throttle_.Due(now)) return SerializeStateLocked(now);
  return std::nullopt;
}

milliseconds Daemon::SleepTimeout(const ScanCadence& cadence, milliseconds poll_interval,
                                  TimePoint now) {
  TimePoint wake = std::min(cadence.last_scan + poll_interval, now + kMaxScanIdle);
  {
    MutexLock lock(mu_);
    const TimePoint deadline = assembler_.NextDeadline().value_or(TimePoint::max());
    if (deadline > cadence.last_scan) wake = std::min(wake, deadline);
    if (publish_pending_) wake = std::min(wake, publish_throttle_.next());
  }
  if (cadence.hinted) wake = std::min(wake, cadence.last_scan + kMinHintScanGap);
  if (cadence.log_hinted) wake = std::min(wake, cadence.last_log_poll + kMinHintScanGap);
  auto timeout = std::chrono::duration_cast<milliseconds>(wake - clock_.Now());
  timeout = std::clamp(timeout, milliseconds(5), kMaxScanIdle);
  // A log left behind its byte budget (a restart, or a log bound late) goes
  // on at once, so catch-up is not paced to one read budget per wake-up;
  // the hints are still collected, without waiting.
  if (training_logs_->behind()) timeout = milliseconds(0);
  return timeout;
}

void Daemon::WorkerLoop(int index) {
  pthread_setname_np(pthread_self(), kWorkerThreadName);
  // Analysis is background work: let training and the scrape path go first.
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  int worker_nice = 0;
  {
    MutexLock lock(mu_);
    worker_nice = options_.worker_nice;
  }
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), current + worker_nice) != 0) {
    LogDebug("setpriority failed", {{"worker", index}});
  }
  for (;;) {
    window::WindowTask task;
    DaemonOptions options;
    {
      MutexLock lock(mu_);
      std::optional<window::WindowTask> next;
      while (!stopping_ && !(next = assembler_.TakeNext(clock_.Now()))) queue_cv_.Wait(mu_);
      if (stopping_) return;
      task = std::move(*next);
      options = options_;
      if (!options.follow_symlinks) options.analyze.confine_to = confine_roots_;
      ApplyRunProfileStepsLocked(task, options);
    }
    bool alone = false;
    if (!BeginAnalysis(task, options, &alone)) continue;
    {
      MutexLock lock(mu_);
      busy_[index] = WorkerSlot{clock_.Now(), task.run, task.window_id, false};
      UpdateWorkersLocked(clock_.Now());
      const bool was_pending = publish_pending_;
      if (!PublishSoonLocked(clock_.Now()) && !was_pending && watcher_) watcher_->Wake();
    }
    // Stop() sets stop_: every file's budget check then ends its read.
    options.analyze.limits.stop = &stop_;
    try {
      RunTask(task, options);
    } catch (const std::exception& e) {
      metrics_.CountError("internal");
      LogError("worker failed",
               {{"reason", "internal"}, {"window", task.window_id}, {"error", e.what()}});
      MutexLock lock(mu_);
      FlagFailureLocked(task, "internal");
    } catch (...) {
      metrics_.CountError("internal");
      LogError("worker failed", {{"reason", "internal"}, {"window", task.window_id}});
      MutexLock lock(mu_);
      FlagFailureLocked(task, "internal");
    }
    // Shutting down mid-way is no result: the record stays (not in flight).
    EndAnalysis(task, alone, !stop_);
    // A window of many files left per-file state in this thread's arena;
    // by now it is released (and an abandoned window forgotten).
    if (task.total_files >= kTrimAfterDroppedFiles) malloc_trim(0);
    {
      MutexLock lock(mu_);
      busy_[index] = WorkerSlot{};
      if (UpdateWorkersLocked(clock_.Now())) PublishSoonLocked(clock_.Now());
    }
  }
}

bool Daemon::BeginAnalysis(const window::WindowTask& task, const DaemonOptions& options,
                           bool* alone) {
  const std::string key = store::InflightKey(task.run_dir, task.window_id);
  const uint64_t digest = journal_.path().empty() ? 0 : store::FilesDigest(task.files);
  std::optional<store::InflightRecord> record = journal_.Find(key);
  std::optional<InflightHistory> history;
  if (record) history = InflightHistory{record->digest, record->deaths};
  InflightDecision d = DecideInflight(task, digest, history ? &*history : nullptr);
  Emit(d.logs);
  if (!d.analyse) {
    // Failed without a worker: the verdict of a window whose analysis
    // failed as a whole (counted, logged, the run flagged), the window done
    // until its files change. The record stays for the next daemon.
    FinishedWindow crashed;
    crashed.outcome.window_error = CrashedError(d.deaths);
    std::optional<StateSave> save;
    {
      MutexLock lock(mu_);
      save = RecordResultLocked(task, std::move(crashed), options, clock_.Now());
    }
    WriteState(std::move(save));
    return false;
  }
  {
    MutexLock lock(mu_);
    while (!stopping_ && (alone_ || (d.alone && analysing_ != 0))) alone_cv_.Wait(mu_);
    ++analysing_;
    if (d.alone) alone_ = true;
  }
  *alone = d.alone;
  store::InflightRecord r;
  r.key = key;
  r.training_job = task.run.training_job;
  r.run = task.run.run;
  r.window = task.window_id;
  r.digest = digest;
  r.deaths = d.deaths;
  if (Status s = journal_.Begin(std::move(r)); !s) {
    LogWarn("in-flight journal not written",
            {{"path", journal_.path()}, {"error", s.error().ToString()}});
  }
  return true;
}

void Daemon::EndAnalysis(const window::WindowTask& task, bool alone, bool finished) {
  if (Status s = journal_.End(store::InflightKey(task.run_dir, task.window_id), finished); !s) {
    LogWarn("in-flight journal not written",
            {{"path", journal_.path()}, {"error", s.error().ToString()}});
  }
  {
    MutexLock lock(mu_);
    --analysing_;
    if (alone) alone_ = false;
  }
  alone_cv_.NotifyAll();
}

void Daemon::RunTask(const window::WindowTask& task, const DaemonOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Result<analysis::WindowAnalysis> result =
      task.files.empty() ? Result<analysis::WindowAnalysis>(
                               MakeError(ErrorCode::kNotFound, "no readable files left"))
                         : analysis::AnalyzeFiles(task.files, options.analyze);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Shutting down: the analysis was cut short, so its result is not the
  // window's. Nothing is recorded; the window is analysed after a restart.
  if (stop_) {
    LogInfo("window analysis abandoned at shutdown", {{"training_job", task.run.training_job},
                                                      {"run", task.run.run},
                                                      {"window", task.window_id}});
    return;
  }
  // Counted before the window is published, so a scrape that shows the
  // window shows what reading it cost.
  if (result) {
    metrics_.bytes_total->Increment(static_cast<double>(result->bytes_read));
    metrics_.spill_bytes_total->Increment(static_cast<double>(result->spilled_bytes));
    for (const auto& e : result->spill_errors) {
      // The figures are unchanged, but the file's intervals stayed in memory:
      // a large window can then outgrow the daemon's memory limit.
      metrics_.spill_errors_total->Increment();
      LogWarn("spill failed, intervals kept in memory", {{"training_job", task.run.training_job},
                                                         {"run", task.run.run},
                                                         {"window", task.window_id},
                                                         {"path", e.path},
                                                         {"error", e.error.context}});
    }
  }
  FinishedWindow finished;
  finished.outcome = OutcomeOf(result);
  finished.seconds = seconds;
  if (result) {
    finished.stats = std::make_shared<const aggregate::WindowStats>(std::move(result->stats));
    finished.format = std::move(result->format);
  }
  const TimePoint now = clock_.Now();
  std::optional<StateSave> save;
  {
    MutexLock lock(mu_);
    save = RecordResultLocked(task, std::move(finished), options, now);
  }
  WriteState(std::move(save));
  metrics_.duration->Observe(seconds);
}

std::optional<Daemon::StateSave> Daemon::RecordResultLocked(const window::WindowTask& task,
                                                            FinishedWindow w,
                                                            const DaemonOptions& options,
                                                            TimePoint now) {
  const snapshot::RunKey key{task.run.training_job, task.run.run};
  const auto prev = runs_.find(key);
  const snapshot::RunState* previous = prev == runs_.end() ? nullptr : &prev->second;
  const auto serial = exported_serial_.find(key);
  w.decision = assembler_.OnAnalyzed(
      task, w.outcome, now,
      ExportedOf(previous, serial == exported_serial_.end() ? 0 : serial->second));
  ++windows_analyzed_;
  ledger_.AddAnalysis(task.owner, w.seconds, task.reanalysis);
  ApplyLedgerLocked();
  WindowPolicyOptions policy{options.step_seconds, options.assembler.window_timeout};
  const std::string kept_key = LedgerRunKey(task.run.training_job, task.run.run);
  ledger_.SetRunOwner(kept_key, task.owner);
  const ledger::Ledger::StateRoom room = ledger_.RoomFor(
      kept_key, task.owner, options.max_state_bytes_per_owner, options.max_state_bytes);
  if (room.owner) policy.owner_state_room = static_cast<size_t>(*room.owner);
  if (room.daemon) policy.daemon_state_room = static_cast<size_t>(*room.daemon);
  WindowVerdict v = DecideWindow(task, w, previous, now, policy);
  if (v.published) ledger_.KeepState(kept_key, task.owner, static_cast<int64_t>(v.state_bytes));
  for (const auto& [reason, n] : v.retries) metrics_.CountRetry(reason, static_cast<double>(n));
  for (const auto& [reason, n] : v.errors) metrics_.CountError(reason, static_cast<double>(n));
  Emit(v.logs);
  if (v.superseded_history) AppendHistoryLocked(*v.superseded_history, task.owner, now);
  if (v.published) {
    snapshot::RunState& rs = *v.next;
    training_logs_->UpdateWindowSteps(key, rs.window_log,
                                      v.replaced_log ? &*v.replaced_log : nullptr);
    ChooseStepLocked(rs, options);
    if (task.reanalysis) metrics_.reanalyzed_total->Increment();
    AppendHistoryLocked(rs, task.owner, now);
    exported_serial_[key] = task.serial;
  }
  if (v.next) runs_[key] = std::move(*v.next);
  // Counted when the snapshot with this result is published (PublishLocked):
  // scrapes read counters without mu_, so a client that sees the count go up
  // must also find the window's snapshot and history line.
  switch (v.result) {
    case WindowResult::kOk:
      ++unpublished_.ok;
      break;
    case WindowResult::kIncomplete:
      ++unpublished_.incomplete;
      break;
    case WindowResult::kError:
      ++unpublished_.error;
      break;
  }
  // When the publish is deferred, the scan loop publishes it: woken once.
  const bool was_pending = publish_pending_;
  if (!PublishSoonLocked(clock_.Now()) && !was_pending && watcher_) watcher_->Wake();
  return PersistSoonLocked(now);
}

void Daemon::AppendHistoryLocked(const snapshot::RunState& rs, watch::Owner owner, TimePoint now) {
  if (!history_) return;
  bool cut = false;
  const std::string line = store::HistoryLine(rs, ToUnixSeconds(now), expose::RunReportToJson(rs),
                                              store::kMaxHistoryLineBytes, &cut);
  if (cut) {
    metrics_.history_lines_cut->Increment();
    LogWarn("history line over its cap, written without state and report",
            {{"training_job", rs.key.training_job},
             {"run", rs.key.run},
             {"window", rs.window_id},
             {"max_line_bytes", store::kMaxHistoryLineBytes}});
  }
  bool rotated = false;
  if (Status s = history_->Append(owner, line, &rotated); !s) {
    LogWarn("history not written",
            {{"path", history_->PathOf(owner)}, {"error", s.error().ToString()}});
  }
  if (rotated) {
    LogInfo("history of an owner rotated, its older lines dropped",
            {watch::OwnerField(owner),
             {"path", history_->PathOf(owner)},
             {"max_bytes", options_.history_max_bytes},
             {"hint", "raise --history-max-bytes (per owner) to keep more"}});
    metrics_.history_rotations_family->Add({{"owner", watch::OwnerLabel(owner)}}).Increment();
  }
}

bool Daemon::UpdateWorkersLocked(TimePoint now) {
  const FileLimits& limits = options_.analyze.limits;
  WorkerCounts counts = CountWorkers(
      busy_, now, limits.window_max_time.count() > 0 ? limits.window_max_time : limits.max_time);
  Emit(counts.logs);
  const bool changed = counts.busy != workers_busy_ || counts.stuck != workers_stuck_;
  workers_busy_ = counts.busy;
  workers_stuck_ = counts.stuck;
  return changed;
}

void Daemon::RetentionSweepLocked(TimePoint now) {
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (assembler_.RunExpired(it->second.last_activity_unix, now)) {
      LogInfo("run expired", {{"training_job", it->first.training_job},
                              {"run", it->first.run},
                              {"last_activity_unix", Rounded(it->second.last_activity_unix, 0)}});
      exported_serial_.erase(it->first);
      step_missing_logged_.erase(it->first);
      ledger_.KeepState(LedgerRunKey(it->first.training_job, it->first.run), watch::kNoOwner, 0);
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Daemon::PublishSoonLocked(TimePoint now) {
  if (publish_throttle_.Due(now)) {
    PublishLocked(now);
    return true;
  }
  publish_pending_ = true;
  return false;
}

void Daemon::PublishLocked(TimePoint now) {
  (void)now;
  const TimePoint started = clock_.Now();
  // Every published run carries its window's current figures (a pointer
  // check per run; they are computed when a window or step time changes).
  for (auto& [key, rs] : runs_) snapshot::RefreshFigures(rs);
  auto next = std::make_shared<snapshot::Snapshot>();
  next->runs = runs_;
  next->last_scan_unix = last_scan_unix_;
  next->pending_windows = assembler_.PendingCount();
  for (const auto& [run, n] : assembler_.PendingByRun()) {
    next->pending_by_run[snapshot::RunKey{run.training_job, run.run}] = n;
  }
  next->workers_busy = workers_busy_;
  next->workers_stuck = workers_stuck_;
  next->workers = options_.workers;
  if (const std::optional<TimePoint> since = assembler_.OldestWaitingSince()) {
    next->oldest_waiting_seconds =
        std::max(0.0, std::chrono::duration<double>(clock_.Now() - *since).count());
  }
  for (const auto& [key, n] : ledger_.CappedNow()) {
    next->owner_capped[{watch::OwnerLabel(key.first), key.second}] = n;
  }
  // A run exported now is no longer skipped (a later expiry counts again).
  ledger_.KeepRefusals(kRetentionReason, [&](const ledger::Refusal& r) {
    mu_.AssertHeld();  // called back here, synchronously
    return runs_.count({r.run.training_job, r.run.run}) == 0;
  });
  for (const auto& [key, r] : ledger_.Refused(kRetentionReason)) {
    next->retention_skipped[{r.run.training_job, r.run.run}] = r.last_activity_unix;
  }
  next->watch_roots = watch_roots_;
  if (options_.shard.enabled()) {
    next->shard = options_.shard.index;
    next->shards = options_.shard.count;
  }
  next->metrics_detail = options_.metrics_detail;
  next->state_save_error = state_save_error_;
  store_->Publish(std::move(next));
  metrics_.analyzed_ok->Increment(static_cast<double>(unpublished_.ok));
  metrics_.analyzed_incomplete->Increment(static_cast<double>(unpublished_.incomplete));
  metrics_.analyzed_error->Increment(static_cast<double>(unpublished_.error));
  unpublished_ = {};
  publish_pending_ = false;
  publish_throttle_.Saved(started, clock_.Now());
}

void Daemon::ObserveLogRuns(const watch::ScanResult& result,
                            const std::set<std::string>& run_dirs) {
  std::vector<RunLocation> runs;
  std::set<snapshot::RunKey> seen;
  for (const watch::FileObservation& f : result.files) {
    if (run_dirs.count(f.run_dir) == 0) continue;
    RunLocation loc = LocateRun(f);
    if (seen.insert(loc.key).second) runs.push_back(std::move(loc));
  }
  for (const auto& [owner, n] : training_logs_->ObserveRuns(runs)) {
    metrics_.logs_refused_family
        ->Add({{"owner", watch::OwnerLabel(owner)}, {"reason", std::string(kLogMaxFollowedReason)}})
        .Increment(static_cast<double>(n));
  }
}

bool Daemon::PollTrainingLogs(TimePoint now, bool discover) {
  std::vector<LogUpdate> updates = training_logs_->Poll(discover);
  watcher_->AddDirectories(training_logs_->LogDirectories());
  for (const auto& [owner, n] : training_logs_->TakeRefusedLogs()) {
    metrics_.logs_refused_family
        ->Add({{"owner", watch::OwnerLabel(owner)}, {"reason", std::string(kLogNotTheRunsReason)}})
        .Increment(static_cast<double>(n));
  }
  if (updates.empty()) return false;
  bool changed = false;
  MutexLock lock(mu_);
  for (LogUpdate& u : updates) {
    if (u.new_parse_errors > 0) {
      metrics_.log_parse_errors->Increment(static_cast<double>(u.new_parse_errors));
    }
    for (const std::string& w : u.new_warnings) {
      LogWarn("training log", {{"training_job", u.key.training_job},
                               {"run", u.key.run},
                               {"path", u.path},
                               {"warning", w}});
    }
    if (u.profile_steps && *u.profile_steps > 0) {
      log_profile_steps_[u.key] = *u.profile_steps;
    } else {
      log_profile_steps_.erase(u.key);
    }
    if (!u.changed && !u.new_lines) continue;
    // A log's activity is when its lines were written, not when they were
    // read: after a restart every log is read again from its start, and an
    // old run must not come back (nor stay) for another --retention.
    const double written = u.new_lines ? u.written_unix.value_or(ToUnixSeconds(now)) : 0.0;
    // A run whose log is alive has its windows analysed however old their
    // files are: the same with or without --state.
    if (u.new_lines) assembler_.NoteRunActivity({u.key.training_job, u.key.run}, written);
    auto it = runs_.find(u.key);
    if (it == runs_.end()) {
      if (!u.changed) continue;  // an expired run comes back only with news
      if (u.new_lines && assembler_.RunExpired(written, now)) continue;  // and only recent news
      snapshot::RunState fresh;
      fresh.key = u.key;
      it = runs_.emplace(u.key, std::move(fresh)).first;
    }
    snapshot::RunState& rs = it->second;
    rs.training = u.training;
    // Retention: a run whose log still grows is alive.
    if (u.new_lines) rs.last_activity_unix = std::max(rs.last_activity_unix, written);
    if (rs.has_window) {
      training_logs_->UpdateWindowSteps(u.key, rs.window_log);
      ChooseStepLocked(rs, options_);
    }
    changed = true;
  }
  return changed;
}

void Daemon::ApplyRunProfileStepsLocked(const window::WindowTask& task,
                                        DaemonOptions& options) const {
  // The log's profiler_steps is one input of the choice; --profile-steps
  // (options.analyze.aggregate.profile_steps_flag) and the window's own step
  // marks are the others (aggregate/profile_steps.h).
  auto it = log_profile_steps_.find({task.run.training_job, task.run.run});
  options.analyze.aggregate.profile_steps_log =
      it == log_profile_steps_.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

void Daemon::ChooseStepLocked(snapshot::RunState& rs, const DaemonOptions& options) {
  ChooseStepTime(rs, options.step_seconds);
  snapshot::RefreshFigures(rs);
  if (rs.step_seconds) {
    step_missing_logged_.erase(rs.key);
  } else if (step_missing_logged_.insert(rs.key).second) {
    LogInfo("no step-time source",
            {{"training_job", rs.key.training_job},
             {"run", rs.key.run},
             {"hint",
              "no training log steady state, no in-trace step markers, no --step-time: step - "
              "kernel not exported"}});
  }
}

std::optional<Daemon::StateSave> Daemon::PersistSoonLocked(TimePoint now) {
  if (persist_throttle_.Due(now)) return SerializeStateLocked(now);
  persist_pending_ = true;
  return std::nullopt;
}

std::optional<Daemon::StateSave> Daemon::SerializeStateLocked(TimePoint now) {
  persist_pending_ = false;
  if (options_.state_file.empty()) {
    persist_throttle_.Saved(now, now);
    return std::nullopt;
  }
  StateSave save;
  save.started = clock_.Now();
  save.seq = ++save_seq_;
  save.path = options_.state_file;
  store::DaemonState state;
  state.snapshot.runs = runs_;
  state.snapshot.last_scan_unix = last_scan_unix_;
  state.windows = assembler_.Analysed();
  save.data = store::SerializeDaemonState(state, ToUnixSeconds(now));
  // The throttle counts the save from here; WriteState adds the write.
  persist_throttle_.Saved(save.started, clock_.Now());
  return save;
}

void Daemon::WriteState(std::optional<StateSave> save) {
  if (!save) return;
  std::string error;
  {
    MutexLock lock(persist_mu_);
    if (save->seq <= written_seq_) return;  // a newer save is on disk already
    written_seq_ = save->seq;
    Status s = store::WriteFileAtomic(save->path, save->data);
    if (!s) {
      error = s.error().ToString();
      LogWarn("state not saved", {{"path", save->path}, {"error", error}});
    }
  }
  const bool failed = !error.empty();
  // `started` may predate the wait for mu_; the save's own cost is measured.
  MutexLock lock(mu_);
  persist_throttle_.Saved(save->started, clock_.Now());
  // /-/ready says whether the last save failed as soon as that changes.
  if (error != state_save_error_) {
    state_save_error_ = std::move(error);
    PublishLocked(clock_.Now());
  }
  // Counted once published, the gauge before the counter: a scrape collects
  // counters, then gauges, then the snapshot, so one that sees the count
  // sees the gauge and /-/ready's reason too.
  metrics_.state_last_save_ok->Set(failed ? 0 : 1);
  if (failed) metrics_.state_save_errors->Increment();
}

}  // namespace profwatch::pipeline
