#include "pipeline/window_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "core/log.h"
#include "pipeline/training_logs.h"
#include "store/state_json.h"

namespace profwatch::pipeline {
namespace {

double SecondsOf(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

// Counts this attempt's failures and sets v.failure. A failure the
// assembler holds back for a retry is a file still being written: a retry,
// not an error (it becomes one only when given up). A given-up file is one
// error, reason give_up; the window's failure is then why it was given up
// (truncated, io, ...), not the give-up itself.
void CountFailures(const window::WindowTask& task, const FinishedWindow& w, WindowVerdict& v) {
  const window::AnalysisOutcome& outcome = w.outcome;
  const window::AnalysisDecision& decision = w.decision;
  const std::string& job = task.run.training_job;
  const std::string& run = task.run.run;
  std::set<std::string> retrying;
  for (const window::FileFailure& f : decision.retrying) retrying.insert(f.path);
  std::set<std::string> gave_up;
  for (const window::FileFailure& f : decision.gave_up) gave_up.insert(f.path);
  if (outcome.window_error) {
    const std::string reason(ErrorCodeName(outcome.window_error->code));
    if (!decision.retrying.empty()) {
      ++v.retries[reason];
      Log(v.logs, LogLevel::kDebug, "window not ready, will retry",
          {{"training_job", job}, {"run", run}, {"window", task.window_id}, {"reason", reason}});
    } else if (decision.gave_up.empty()) {
      ++v.errors[reason];
      v.failure = reason;
      Log(v.logs, LogLevel::kWarn, "window analysis failed",
          {{"training_job", job},
           {"run", run},
           {"window", task.window_id},
           {"reason", reason},
           {"error", outcome.window_error->ToString()}});
    }
  }
  for (const window::FileFailure& f : outcome.failed) {
    const std::string reason(ErrorCodeName(f.error.code));
    if (retrying.count(f.path) != 0) {
      ++v.retries[reason];
      Log(v.logs, LogLevel::kDebug, "file not ready, will retry",
          {{"path", f.path}, {"reason", reason}});
    } else if (gave_up.count(f.path) == 0) {
      ++v.errors[reason];
      if (v.failure.empty()) v.failure = reason;
      Log(v.logs, LogLevel::kWarn, "file failed",
          {{"path", f.path}, {"reason", reason}, {"error", f.error.ToString()}});
    }
  }
  for (const window::FileFailure& f : decision.gave_up) {
    ++v.errors[std::string(kGiveUpReason)];
    Log(v.logs, LogLevel::kWarn, "file given up",
        {{"path", f.path}, {"reason", ErrorCodeName(f.error.code)}, {"error", f.error.ToString()}});
  }
  // Files given up now or before are left out of the window: still a failure.
  if (!decision.gave_up.empty()) {
    v.failure = ErrorCodeName(decision.gave_up.front().error.code);
  } else if (!task.excluded.empty() && v.failure.empty()) {
    v.failure = task.excluded_error ? ErrorCodeName(*task.excluded_error) : kGiveUpReason;
  }
}

// A window left without usable kernel data by failed, given-up or missing
// files must not replace the run's window with zeros: the previous window
// and its figures stay, the run is flagged with the files' failure, or
// no_data when none failed (files or GPUs missing at the timeout). A window
// whose files all read cleanly is published as it is, kernels or not.
bool NoUsableData(const window::WindowTask& task, const FinishedWindow& w,
                  const snapshot::RunState* previous, WindowVerdict& v) {
  const aggregate::WindowStats* stats = w.stats.get();
  if (!w.decision.publish || stats == nullptr || !w.decision.incomplete ||
      (stats->gpus() != 0 && stats->total_kernel_ps != 0)) {
    return false;
  }
  if (v.failure.empty()) v.failure = kNoDataReason;
  ++v.errors[std::string(kNoDataReason)];
  const bool keeps = previous != nullptr && previous->has_window;
  Log(v.logs, LogLevel::kWarn, "window not exported: no usable kernel data",
      {{"training_job", task.run.training_job},
       {"run", task.run.run},
       {"window", task.window_id},
       {"reason", v.failure},
       {"gpus", stats->gpus()},
       {"files", stats->files.size()},
       {"files_present", task.total_files},
       {"failed", w.outcome.failed.size()},
       {"excluded", task.excluded.size()},
       {"short_of_expected", task.short_of_expected},
       {"kept_window", keeps ? previous->window_id : "none"}});
  return true;
}

// The run's state with this window in it (its stats, format, flags and
// analysis time), from `previous` so training-log figures stay.
snapshot::RunState WithWindow(const window::WindowTask& task, const FinishedWindow& w,
                              const snapshot::RunState* previous, const std::string& failure,
                              TimePoint now) {
  snapshot::RunState rs;
  if (previous != nullptr) rs = *previous;
  rs.key = {task.run.training_job, task.run.run};
  rs.window_id = task.window_id;
  rs.window_start = task.first_time;
  rs.stats = w.stats;
  rs.format = w.format.empty() ? "json" : w.format;
  rs.incomplete = w.decision.incomplete;
  // This attempt's failure, or none (a clean analysis clears it).
  rs.window_failure = failure;
  rs.analyzed_unix = ToUnixSeconds(now);
  return rs;
}

// The log lines of a window that is published as `rs`: what was analysed,
// and the warnings its figures carry (GPU count, truncated, incomplete).
void LogPublished(const window::WindowTask& task, const FinishedWindow& w,
                  const snapshot::RunState& rs, WindowVerdict& v) {
  const std::string& job = task.run.training_job;
  const std::string& run = task.run.run;
  const aggregate::WindowStats& stats = *rs.stats;
  const int gpus = stats.gpus();
  // files: the trace files analysed, one per process (a JSON + xplane pair
  // is read in one format), as profwatch_window_trace_files counts them;
  // files_present: the window's files on disk, pairs counted twice.
  Log(v.logs, LogLevel::kInfo, "window analysed",
      {{"training_job", job},
       {"run", run},
       {"window", task.window_id},
       {"gpus", gpus},
       {"expected_gpus", rs.expected_gpus},
       {"files", stats.files.size()},
       {"files_present", task.files.size()},
       {"launcher_mode", aggregate::LauncherModeName(stats.launcher_mode)},
       {"total_kernel_s_per_gpu_step", Rounded(stats.PerGpuStepSeconds(stats.total_kernel_ps), 6)},
       {"seconds", Rounded(w.seconds, 3)},
       {"reanalysis", task.reanalysis}});
  if (rs.expected_gpus > 0 && gpus != rs.expected_gpus) {
    Log(v.logs, LogLevel::kWarn, "gpu count differs from expected",
        {{"training_job", job},
         {"run", run},
         {"window", task.window_id},
         {"gpus", gpus},
         {"expected_gpus", rs.expected_gpus}});
  }
  if (stats.truncated) {
    Log(v.logs, LogLevel::kWarn, "window truncated",
        {{"training_job", job}, {"run", run}, {"window", task.window_id}});
  }
  if (rs.incomplete) {
    Log(v.logs, LogLevel::kWarn, "window incomplete",
        {{"training_job", job},
         {"run", run},
         {"window", task.window_id},
         {"files", stats.files.size()},
         {"files_present", task.total_files},
         {"expected_files", task.expected_files},
         {"excluded", task.excluded.size()},
         {"failed", w.outcome.failed.size()}});
  }
}

// The published state: the window replaces the run's, placed anew in the
// training log unless it is the same window analysed again (a late file
// joined: it keeps its place and step time).
// False (nothing published) when the run's state would be over
// options.max_run_state_bytes (too_large) or the room its owner's or all
// owners' cap leaves (owner_state_cap, state_cap): the run keeps its window
// and is flagged.
bool Publish(const window::WindowTask& task, const FinishedWindow& w,
             const snapshot::RunState* previous, TimePoint now, const WindowPolicyOptions& options,
             WindowVerdict& v) {
  snapshot::RunState rs = WithWindow(task, w, previous, v.failure, now);
  const size_t state_bytes = store::SerializeRunState(rs).size();
  // The caps on what the run keeps, the first one it is over refusing it.
  struct StateCap {
    std::string_view reason;
    std::optional<size_t> room;
    std::string_view message;
    std::string_view room_field;
  };
  const StateCap caps[] = {
      {ErrorCodeName(ErrorCode::kTooLarge), options.max_run_state_bytes,
       "window not exported: its run state is over the per-run cap", "max_state_bytes"},
      {kOwnerStateCapReason, options.owner_state_room,
       "window not exported: its owner's runs would keep more state than "
       "--max-state-bytes-per-owner",
       "owner_room_bytes"},
      {kStateCapReason, options.daemon_state_room,
       "window not exported: all owners' runs would keep more state than --max-state-bytes "
       "and its owner keeps an equal share of it",
       "room_bytes"}};
  for (const StateCap& cap : caps) {
    if (!cap.room || state_bytes <= *cap.room) continue;
    const std::string reason(cap.reason);
    ++v.errors[reason];
    v.failure = reason;
    Log(v.logs, LogLevel::kWarn, std::string(cap.message),
        {{"training_job", task.run.training_job},
         {"run", task.run.run},
         {"window", task.window_id},
         {"reason", reason},
         {"state_bytes", state_bytes},
         {cap.room_field, *cap.room},
         {"kept_window",
          previous != nullptr && previous->has_window ? previous->window_id : "none"}});
    v.next = FlaggedRun(task, previous, reason);
    return false;
  }
  v.state_bytes = state_bytes;
  const bool had_window = previous != nullptr && previous->has_window;
  const bool same_window = had_window && previous->window_id == task.window_id;
  if (!same_window) rs.window_log = {};
  if (had_window && !same_window) v.replaced_log = previous->window_log;
  rs.expected_gpus = w.decision.expected_gpus;
  // Activity is the data's own time: the window's newest file, not when it
  // was analysed (a restart must not revive an old run, nor make it look
  // live). Without file times, the window's <ts> time; the analysis time
  // only when neither is known.
  const double written = task.last_activity_unix > 0 ? task.last_activity_unix
                         : task.first_time > 0       ? static_cast<double>(task.first_time)
                                                     : rs.analyzed_unix;
  rs.last_activity_unix =
      std::max({rs.last_activity_unix, written, rs.training.last_step_unix.value_or(0.0)});
  rs.has_window = true;

  LogPublished(task, w, rs, v);
  v.next = std::move(rs);
  v.published = true;
  return true;
}

}  // namespace

window::AnalysisOutcome OutcomeOf(const Result<analysis::WindowAnalysis>& result) {
  window::AnalysisOutcome outcome;
  if (!result) {
    outcome.window_error = result.error();
    return outcome;
  }
  for (const analysis::FileError& e : result->errors) outcome.failed.push_back({e.path, e.error});
  outcome.gpus = result->stats.gpus();
  return outcome;
}

std::optional<window::ExportedWindow> ExportedOf(const snapshot::RunState* previous,
                                                 uint64_t serial) {
  if (previous == nullptr || !previous->has_window) return std::nullopt;
  return window::ExportedWindow{serial, previous->window_start, previous->stats->gpus(),
                                previous->expected_gpus, previous->incomplete};
}

snapshot::RunState FlaggedRun(const window::WindowTask& task, const snapshot::RunState* previous,
                              std::string_view reason) {
  snapshot::RunState rs;
  if (previous != nullptr) {
    rs = *previous;
  } else {
    rs.key = {task.run.training_job, task.run.run};
    rs.last_activity_unix = task.last_activity_unix;
  }
  rs.window_failure = std::string(reason);
  return rs;
}

std::chrono::milliseconds RetryBackoff(int tries, std::chrono::milliseconds settle,
                                       std::chrono::milliseconds max_backoff) {
  auto base = std::max<std::chrono::milliseconds>(settle, std::chrono::seconds(1));
  auto d = base * (int64_t{1} << std::clamp(tries - 1, 0, 20));
  return std::min(d, max_backoff);
}

window::RetryPlan DecideRetry(const window::RetryFacts& f) {
  using Next = window::RetryPlan::Next;
  window::RetryPlan plan;
  if (!f.tracked) {
    plan.publish = !f.window_error;
    plan.incomplete = f.incomplete_input;
    return plan;
  }
  int soon_tries = 0;        // the most tries of a file retried soon
  int unreadable_tries = 0;  // the most tries of a kPermission file still tried
  for (const window::FailedFileTry& t : f.failed) {
    const RetryClass rc = RetryClassOf(t.failure.error.code);
    if (rc == RetryClass::kNever) continue;
    if (t.tries >= f.max_retries) {
      plan.gave_up.push_back(t.failure);
      continue;
    }
    if (rc == RetryClass::kSoon) {
      plan.retrying.push_back(t.failure);
      soon_tries = std::max(soon_tries, t.tries);
    }
    if (t.failure.error.code == ErrorCode::kPermission)
      unreadable_tries = std::max(unreadable_tries, t.tries);
  }
  if (!plan.retrying.empty()) {
    plan.next = Next::kRetryAt;
    plan.retry_at = f.now + RetryBackoff(soon_tries, f.settle, f.max_backoff);
    return plan;
  }
  if (!plan.gave_up.empty() && f.active_files > static_cast<int>(plan.gave_up.size())) {
    plan.next = Next::kAnalyseNow;  // the rest without the given-up files
    return plan;
  }
  plan.next = Next::kDone;
  if (f.reanalysis_interval.count() > 0) {
    const auto took = std::max(TimePoint::duration::zero(), f.now - f.taken_at);
    plan.reanalyse_after =
        f.now + std::max<TimePoint::duration>(
                    std::chrono::duration_cast<TimePoint::duration>(f.reanalysis_interval), took);
  }
  if (!f.window_error) {
    plan.publish = true;
    plan.incomplete = f.incomplete_input || !plan.gave_up.empty();
  }
  if (unreadable_tries > 0)
    plan.recheck_at = f.now + RetryBackoff(unreadable_tries, f.settle, f.max_backoff);
  return plan;
}

WindowVerdict DecideWindow(const window::WindowTask& task, const FinishedWindow& w,
                           const snapshot::RunState* previous, TimePoint now,
                           const WindowPolicyOptions& options) {
  const window::AnalysisDecision& decision = w.decision;
  WindowVerdict v;
  CountFailures(task, w, v);
  const bool no_data = NoUsableData(task, w, previous, v);
  const bool publish = decision.publish && !no_data;
  if (!v.failure.empty() && !publish && !decision.superseded) {
    v.next = FlaggedRun(task, previous, v.failure);
  }
  const std::string& job = task.run.training_job;
  const std::string& run = task.run.run;
  if (decision.waiting_for_gpus) {
    Log(v.logs, LogLevel::kInfo,
        "window held: fewer gpus than --expected-gpus, waiting for the rest until the window "
        "timeout",
        {{"training_job", job},
         {"run", run},
         {"window", task.window_id},
         {"gpus", w.outcome.gpus},
         {"expected_gpus", decision.expected_gpus},
         {"until_unix",
          Rounded(decision.held_until ? ToUnixSeconds(*decision.held_until) : 0.0, 0)},
         {"window_timeout_s", Rounded(SecondsOf(options.window_timeout), 0)}});
  }
  if (decision.superseded) {
    Log(v.logs, LogLevel::kInfo, "older window analysed after a newer one, not exported",
        {{"training_job", job},
         {"run", run},
         {"window", task.window_id},
         {"exported", previous != nullptr ? previous->window_id : ""}});
    if (w.stats) {
      snapshot::RunState rs = WithWindow(task, w, previous, v.failure, now);
      rs.window_log = {};
      ChooseStepTime(rs, options.step_seconds);
      snapshot::RefreshFigures(rs);  // its history line renders them
      v.superseded_history = std::move(rs);
    }
  }
  const bool over_cap = publish && w.stats && !Publish(task, w, previous, now, options, v);
  const bool failed = w.outcome.window_error.has_value() ||
                      (decision.retry && !w.outcome.failed.empty()) || no_data || over_cap;
  if (failed) {
    v.result = WindowResult::kError;
  } else if (decision.waiting_for_gpus || (publish && decision.incomplete)) {
    v.result = WindowResult::kIncomplete;
  }
  return v;
}

WorkerCounts CountWorkers(std::vector<WorkerSlot>& slots, TimePoint now,
                          std::chrono::nanoseconds budget) {
  WorkerCounts counts;
  for (WorkerSlot& s : slots) {
    if (!s.since) continue;
    ++counts.busy;
    if (budget.count() <= 0 || now - *s.since <= budget) continue;
    ++counts.stuck;
    if (s.logged_stuck) continue;
    s.logged_stuck = true;
    Log(counts.logs, LogLevel::kWarn,
        "worker stuck: busy on one window longer than --file-max-seconds",
        {{"training_job", s.run.training_job},
         {"run", s.run.run},
         {"window", s.window},
         {"busy_seconds", Rounded(std::chrono::duration<double>(now - *s.since).count(), 0)}});
  }
  return counts;
}

InflightDecision DecideInflight(const window::WindowTask& task, uint64_t digest,
                                const InflightHistory* history) {
  InflightDecision d;
  if (history == nullptr || history->digest != digest || history->deaths <= 0) return d;
  d.deaths = history->deaths;
  if (history->deaths >= kMaxDeathsPerWindow) {
    d.analyse = false;
    return d;  // DecideWindow on CrashedError logs and counts it
  }
  d.alone = true;
  Log(d.logs, LogLevel::kWarn, "window in flight when the daemon died, analysed again alone",
      {{"training_job", task.run.training_job},
       {"run", task.run.run},
       {"window", task.window_id},
       {"deaths", history->deaths},
       {"max_deaths", kMaxDeathsPerWindow}});
  return d;
}

Error CrashedError(int deaths) {
  return Error{ErrorCode::kCrashed,
               fmt::format("the daemon died {} times while analysing this window (the last time "
                           "alone); not analysed again until its files change",
                           deaths)};
}

std::vector<LogEvent> SupersededEvents(const std::vector<window::Assembler::Superseded>& notes) {
  std::vector<LogEvent> logs;
  for (const window::Assembler::Superseded& w : notes) {
    Log(logs, LogLevel::kInfo,
        w.at_startup ? "older window found at startup not analysed"
                     : "window found at startup not analysed: a newer window of its run came "
                       "before its analysis",
        {{"training_job", w.run.training_job},
         {"run", w.run.run},
         {"window", w.window_id},
         {"files", w.files},
         {"newest", w.newest_id},
         {"stage", "window"}});
  }
  return logs;
}

std::vector<LogEvent> ReadyNoteEvents(const window::Assembler::ReadyNotes& notes, TimePoint now,
                                      std::chrono::milliseconds window_timeout,
                                      std::chrono::milliseconds retention) {
  std::vector<LogEvent> logs;
  for (const window::Assembler::Held& h : notes.held) {
    Log(logs, LogLevel::kInfo,
        "window held: fewer files than expected, waiting for the rest until the window timeout",
        {{"training_job", h.run.training_job},
         {"run", h.run.run},
         {"window", h.window_id},
         {"files", h.files},
         {"expected_files", h.expected_files},
         {"expected_from", h.expected_from},
         {"until_unix", Rounded(ToUnixSeconds(h.until), 0)},
         {"window_timeout_s", Rounded(SecondsOf(window_timeout), 0)}});
  }
  for (const window::Assembler::Paced& p : notes.paced) {
    Log(logs, LogLevel::kInfo,
        "window changed after its analysis, analysed again once --reanalysis-interval has passed",
        {{"training_job", p.run.training_job},
         {"run", p.run.run},
         {"window", p.window_id},
         {"until_unix", Rounded(ToUnixSeconds(p.until), 0)}});
  }
  for (const window::Assembler::Expired& e : notes.expired) {
    Log(logs, LogLevel::kInfo, "window not analysed: older than --retention",
        {{"training_job", e.run.training_job},
         {"run", e.run.run},
         {"window", e.window_id},
         {"last_activity_unix", Rounded(e.last_activity_unix, 0)},
         {"retention_s", Rounded(SecondsOf(retention), 0)},
         {"now_unix", Rounded(ToUnixSeconds(now), 0)}});
  }
  return logs;
}

}  // namespace profwatch::pipeline
