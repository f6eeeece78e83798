#include "window/assembler.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "window/grouping.h"

namespace profwatch::window {
namespace {

namespace fs = std::filesystem;

FileFingerprint FingerprintOf(const watch::FileObservation& o) {
  return FileFingerprint{o.path, o.dev, o.ino, o.size, o.mtime_ns};
}

}  // namespace

Assembler::Assembler(AssemblerOptions options) : options_(options) {}

void Assembler::Restore(const std::vector<AnalysedWindow>& windows) {
  for (const AnalysedWindow& w : windows) restored_[{w.run_dir, w.first_dir}] = w;
}

std::vector<FileFingerprint> Assembler::Fingerprints(const Tracked& t) const {
  std::vector<FileFingerprint> out;
  for (const std::string& f : t.files) {
    auto it = t.tracks.find(f);
    if (it != t.tracks.end()) out.push_back(it->second.fp);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Assembler::ScanNotes Assembler::ObserveScan(const std::vector<watch::FileObservation>& files,
                                            TimePoint now) {
  ScanNotes notes;
  last_scan_ = now;
  for (auto& [serial, t] : tracked_) t.seen_in_last_scan = false;
  RunObservations by_run = ByRunDir(files, now, notes);
  DropClashes(by_run, notes);
  std::set<std::string> capped_now;
  for (const auto& [run_dir, obs] : by_run) {
    const std::vector<uint64_t> run_serials = ObserveRunDir(run_dir, obs, now, notes, capped_now);
    SupersedeBacklog(run_serials, notes);
  }
  // A window back under the cap (or gone) is reported again if it exceeds it.
  std::erase_if(capped_windows_, [&](const std::string& d) { return capped_now.count(d) == 0; });
  scanned_ = true;
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    if (!it->second.seen_in_last_scan && it->second.state != State::kQueued) {
      it = Untrack(it);
    } else {
      ++it;
    }
  }
  return notes;
}

Assembler::RunObservations Assembler::ByRunDir(const std::vector<watch::FileObservation>& files,
                                               TimePoint now, ScanNotes& notes) {
  const double latest_ok = ToUnixSeconds(now) + Seconds(options_.wall_clock_ahead).count() +
                           Seconds(options_.future_tolerance).count();
  std::set<std::string> future_now;
  RunObservations by_run;
  for (const watch::FileObservation& o : files) {
    if (static_cast<double>(o.group_time) > latest_ok) {
      future_now.insert(o.group_dir);
      if (future_dirs_.insert(o.group_dir).second) notes.future_dirs.push_back(o.group_dir);
      continue;
    }
    by_run[o.run_dir].push_back(&o);
  }
  // A dir that is no longer future (or gone) may be reported again later.
  std::erase_if(future_dirs_, [&](const std::string& d) { return future_now.count(d) == 0; });
  return by_run;
}

void Assembler::DropClashes(RunObservations& by_run, ScanNotes& notes) {
  std::map<RunId, std::string> owner;
  std::set<std::string> clashed_now;
  for (auto it = by_run.begin(); it != by_run.end();) {
    const watch::RunLabels& l = it->second.front()->labels;
    auto [own, fresh] = owner.emplace(RunId{l.training_job, l.run}, it->first);
    if (fresh) {
      ++it;
      continue;
    }
    clashed_now.insert(it->first);
    if (clashed_dirs_.insert(it->first).second) {
      notes.clashes.push_back({own->first, own->second, it->first});
    }
    it = by_run.erase(it);
  }
  std::erase_if(clashed_dirs_, [&](const std::string& d) { return clashed_now.count(d) == 0; });
}

std::vector<uint64_t> Assembler::ObserveRunDir(
    const std::string& run_dir, const std::vector<const watch::FileObservation*>& obs,
    TimePoint now, ScanNotes& notes, std::set<std::string>& capped_now) {
  std::map<std::string, TimestampDir> dirs;
  ScanFiles scan;
  for (const watch::FileObservation* o : obs) {
    TimestampDir& d = dirs[o->group_dir];
    d.path = o->group_dir;
    d.time = o->group_time;
    d.files.push_back(o->name);
    scan.by_group_path[(fs::path(o->group_dir) / o->name).string()] = o;
    scan.real_dir_of[o->group_dir] = o->dir;
  }
  std::vector<TimestampDir> list;
  for (auto& [path, d] : dirs) list.push_back(std::move(d));
  const std::vector<Window> windows =
      GroupWindows(std::move(list), static_cast<int64_t>(options_.skew.count()));

  std::set<uint64_t> used;
  std::vector<uint64_t> run_serials;
  for (const Window& w : windows) {
    // Over the cap: no state for its files; a tracked window that grew
    // past it is not seen in this scan and is forgotten by ObserveScan.
    if (static_cast<int64_t>(w.files.size()) > options_.max_files_per_window) {
      const std::string& first_dir = w.timestamp_dirs.front();
      capped_now.insert(first_dir);
      if (capped_windows_.insert(first_dir).second) {
        const watch::FileObservation* o = scan.by_group_path.at(w.files.front());
        notes.capped.push_back({RunId{o->labels.training_job, o->labels.run},
                                fs::path(first_dir).filename().string(), first_dir,
                                static_cast<int64_t>(w.files.size())});
      }
      continue;
    }
    Tracked& t = MatchOrTrack(run_dir, w, used, now);
    used.insert(t.serial);
    run_serials.push_back(t.serial);
    Place(t, w, scan);
    OnScanned(t, UpdateFiles(t, w, scan, now));
  }
  return run_serials;
}

Assembler::Tracked& Assembler::MatchOrTrack(const std::string& run_dir, const Window& w,
                                            const std::set<uint64_t>& used, TimePoint now) {
  // The tracked window sharing a <ts> dir with this one (its first dir may
  // have changed when a late host wrote an earlier dir).
  const std::set<std::string> wdirs(w.timestamp_dirs.begin(), w.timestamp_dirs.end());
  auto run_serials_it = serials_by_run_dir_.find(run_dir);
  const std::set<uint64_t> none;
  for (uint64_t serial :
       run_serials_it == serials_by_run_dir_.end() ? none : run_serials_it->second) {
    Tracked& cand = tracked_.at(serial);
    if (used.count(serial) != 0) continue;
    const bool overlap = std::any_of(cand.group_dirs.begin(), cand.group_dirs.end(),
                                     [&](const std::string& d) { return wdirs.count(d) != 0; });
    if (overlap) return cand;
  }
  Tracked& t = Track(next_serial_++, run_dir);
  t.first_seen = now;
  t.last_change = now;
  t.backlog = !scanned_;
  auto rit = restored_.find({run_dir, w.timestamp_dirs.front()});
  if (rit != restored_.end()) {
    t.analysed_before = true;
    t.analysed_fp = rit->second.files;
    t.analyzed_unix = rit->second.analyzed_unix;
    t.taught = true;
    // Decided by OnScanned once the tracks are filled in.
    t.state = State::kDone;
  }
  return t;
}

void Assembler::Place(Tracked& t, const Window& w, const ScanFiles& scan) {
  const watch::FileObservation* first_obs = scan.by_group_path.at(w.files.front());
  t.seen_in_last_scan = true;
  t.run = RunId{first_obs->labels.training_job, first_obs->labels.run};
  t.id = fs::path(w.timestamp_dirs.front()).filename().string();
  t.first_time = w.first_time;
  t.group_dirs = w.timestamp_dirs;
  t.real_dirs.clear();
  for (const std::string& gd : w.timestamp_dirs) {
    const std::string& real = scan.real_dir_of.at(gd);
    if (t.real_dirs.empty() || t.real_dirs.back() != real) t.real_dirs.push_back(real);
  }
}

bool Assembler::UpdateFiles(Tracked& t, const Window& w, const ScanFiles& scan, TimePoint now) {
  bool changed = false;
  std::map<std::string, FileTrack> tracks;
  t.files.clear();
  t.last_activity_unix = 0;
  for (const std::string& gp : w.files) {
    const watch::FileObservation* o = scan.by_group_path.at(gp);
    t.files.push_back(o->path);
    FileFingerprint fp = FingerprintOf(*o);
    t.last_activity_unix = std::max(t.last_activity_unix, o->mtime_ns / 1e9);
    auto old = t.tracks.find(o->path);
    FileTrack ft;
    if (old != t.tracks.end()) {
      ft = old->second;
      if (!(ft.fp == fp)) {
        ft.last_change = now;
        changed = true;
        // A given-up file is read again once it changes: the writer may
        // have finished it after all.
        if (ft.gave_up) {
          ft.gave_up = false;
          ft.tries = 0;
          ft.last_error.reset();
        }
      }
    } else {
      ft.first_seen = now;
      ft.last_change = now;
      changed = true;
    }
    ft.fp = fp;
    tracks[o->path] = ft;
  }
  if (tracks.size() != t.tracks.size()) changed = true;  // a file went away
  t.tracks = std::move(tracks);
  if (changed) t.last_change = now;
  return changed;
}

void Assembler::OnScanned(Tracked& t, bool changed) {
  const bool matches_analysed = t.analysed_before && Fingerprints(t) == t.analysed_fp;
  switch (t.state) {
    case State::kDone:
      if (!matches_analysed) {
        t.state = State::kAssembling;
        t.ready_since.reset();
      }
      break;
    case State::kQueued:
      if (changed) t.changed_in_flight = true;
      break;
    case State::kAssembling:
    case State::kRetryWait:
      if (changed) t.ready_since.reset();
      break;
    case State::kExpired:
      if (changed) t.state = State::kAssembling;
      break;
    case State::kSuperseded:
      break;
  }
}

void Assembler::SupersedeBacklog(const std::vector<uint64_t>& run_serials, ScanNotes& notes) {
  int64_t newest = INT64_MIN;
  const Tracked* newest_t = nullptr;
  for (uint64_t s : run_serials) {
    if (tracked_[s].first_time > newest) {
      newest = tracked_[s].first_time;
      newest_t = &tracked_[s];
    }
  }
  for (uint64_t s : run_serials) {
    Tracked& t = tracked_[s];
    const bool is_newest = t.first_time == newest;
    if (!is_newest && t.backlog &&
        (t.state == State::kAssembling || t.state == State::kRetryWait)) {
      t.state = State::kSuperseded;
      if (!t.superseded_reported) {
        t.superseded_reported = true;
        notes.superseded.push_back({t.run, t.id, newest_t->id, static_cast<int>(t.files.size())});
      }
    } else if (is_newest && t.state == State::kSuperseded) {
      t.state = State::kAssembling;
      t.ready_since.reset();
    }
  }
}

int Assembler::ExpectedFiles(const Tracked& t) const {
  if (options_.expected_files > 0) return options_.expected_files;
  if (options_.expected_gpus > 0) {
    auto it = gpus_per_file_.find(t.run);
    if (it != gpus_per_file_.end() && it->second > 0) {
      return static_cast<int>(std::ceil(options_.expected_gpus / it->second - 1e-9));
    }
    return 0;
  }
  // Learned: the previous complete window of the same run.
  const Tracked* prev = nullptr;
  auto run = serials_by_run_dir_.find(t.run_dir);
  if (run == serials_by_run_dir_.end()) return 0;
  for (uint64_t serial : run->second) {
    const Tracked& cand = tracked_.at(serial);
    if (cand.first_time >= t.first_time || !cand.taught) continue;
    if (prev == nullptr || cand.first_time > prev->first_time) prev = &cand;
  }
  return prev == nullptr ? 0 : static_cast<int>(prev->files.size());
}

std::chrono::milliseconds Assembler::Backoff(int tries) const {
  auto base = std::max<std::chrono::milliseconds>(options_.settle, std::chrono::seconds(1));
  auto d = base * (int64_t{1} << std::clamp(tries - 1, 0, 20));
  return std::min(d, options_.max_backoff);
}

bool Assembler::IsReady(Tracked& t, TimePoint now, int* gate, bool* short_of_expected) {
  *gate = 0;
  *short_of_expected = false;
  // A published window with an unreadable file, or short of the expected
  // GPUs, is tried again at its recheck time (permissions fixed later, the
  // missing hosts' files landed, or the window timeout reached).
  if (t.state == State::kDone && t.recheck_at && now >= *t.recheck_at) {
    t.recheck_at.reset();
    t.state = State::kAssembling;
    t.force_ready = true;
  }
  if (t.state == State::kAssembling || t.state == State::kRetryWait) {
    const double cutoff = ToUnixSeconds(now) - Seconds(options_.retention).count();
    auto log = run_activity_.find(t.run);
    const double activity =
        std::max(t.last_activity_unix, log == run_activity_.end() ? 0.0 : log->second);
    if (activity < cutoff) {
      t.state = State::kExpired;
      if (!t.expired_reported) {
        t.expired_reported = true;
        ready_notes_.expired.push_back({t.run, t.id, t.last_activity_unix});
      }
      return false;
    }
  }
  if (t.state != State::kAssembling && t.state != State::kRetryWait) return false;
  *gate = ExpectedFiles(t);
  const int count = static_cast<int>(t.files.size());
  const bool timed_out = now - t.first_seen >= options_.window_timeout;
  *short_of_expected = *gate > 0 && count < *gate;
  if (t.force_ready) return true;
  // Quiet as observed: the last scan saw nothing change for `settle`.
  if (last_scan_ - t.last_change < options_.settle) return false;
  if (t.state == State::kRetryWait) {
    bool failed_file_changed = false;
    for (const auto& [path, ft] : t.tracks) {
      if (!ft.gave_up && ft.last_error && !(ft.fp == ft.failed_fp)) failed_file_changed = true;
    }
    if (!failed_file_changed && (!t.next_retry || now < *t.next_retry)) return false;
  }
  if (*short_of_expected && !timed_out) {
    // Quiet and short of files: it waits for them until the timeout.
    if (t.state == State::kAssembling && !t.held_reported) {
      t.held_reported = true;
      const std::string from = options_.expected_files > 0  ? "--expected-files"
                               : options_.expected_gpus > 0 ? "--expected-gpus"
                                                            : "previous window";
      ready_notes_.held.push_back(
          {t.run, t.id, count, *gate, from, t.first_seen + options_.window_timeout});
    }
    return false;
  }
  return true;
}

Assembler::ReadyNotes Assembler::TakeReadyNotes() { return std::exchange(ready_notes_, {}); }

std::vector<WindowTask> Assembler::TakeReady(TimePoint now, size_t max) {
  std::vector<std::pair<Tracked*, std::pair<int, bool>>> ready;
  for (auto& [serial, t] : tracked_) {
    int gate = 0;
    bool short_of = false;
    if (!IsReady(t, now, &gate, &short_of)) continue;
    if (!t.ready_since) t.ready_since = now;
    ready.push_back({&t, {gate, short_of}});
  }
  // Fair order: the window that has been ready longest goes first.
  std::sort(ready.begin(), ready.end(), [](const auto& a, const auto& b) {
    if (*a.first->ready_since != *b.first->ready_since) {
      return *a.first->ready_since < *b.first->ready_since;
    }
    return a.first->first_time < b.first->first_time;
  });
  std::vector<WindowTask> out;
  for (auto& [tp, gate_short] : ready) {
    if (out.size() >= max) break;
    Tracked& t = *tp;
    WindowTask task;
    task.serial = t.serial;
    task.run = t.run;
    task.run_dir = t.run_dir;
    task.window_id = t.id;
    task.first_time = t.first_time;
    task.timestamp_dirs = t.real_dirs;
    for (const std::string& f : t.files) {
      if (t.tracks.at(f).gave_up) {
        task.excluded.push_back(f);
      } else {
        task.files.push_back(f);
      }
    }
    task.total_files = static_cast<int>(t.files.size());
    for (const std::string& f : task.excluded) {
      if (const FileTrack& ft = t.tracks.at(f); ft.last_error) {
        task.excluded_error = ft.last_error;
        break;
      }
    }
    task.expected_files = gate_short.first;
    task.short_of_expected = gate_short.second;
    task.reanalysis = t.analysed_before;
    task.last_activity_unix = t.last_activity_unix;
    t.state = State::kQueued;
    t.force_ready = false;
    t.changed_in_flight = false;
    t.ready_since.reset();
    out.push_back(std::move(task));
  }
  return out;
}

AnalysisDecision Assembler::OnAnalyzed(const WindowTask& task, const AnalysisOutcome& outcome,
                                       TimePoint now,
                                       const std::optional<ExportedWindow>& exported) {
  AnalysisDecision d = RetryDecision(task, outcome, now);
  if (!d.publish) return d;
  // Only the newest window of a run is exported: an older one that finished
  // late (a slow worker, a re-analysis) does not replace it.
  if (exported && exported->serial != task.serial && exported->first_time > task.first_time) {
    d.publish = false;
    d.superseded = true;
    return d;
  }
  int learned = 0;
  if (exported) learned = exported->incomplete ? exported->expected_gpus : exported->gpus;
  d.expected_gpus = options_.expected_gpus > 0 ? options_.expected_gpus : learned;
  auto it = tracked_.find(task.serial);
  // GPUs per file is a property of the files, learned from any result.
  if (outcome.gpus > 0 && !task.files.empty()) {
    gpus_per_file_[task.run] =
        static_cast<double>(outcome.gpus) / static_cast<double>(task.files.size());
  }
  if (d.expected_gpus > 0 && outcome.gpus < d.expected_gpus) {
    // Configured: wait for the missing hosts until the window timeout.
    if (options_.expected_gpus > 0 && it != tracked_.end() &&
        now - it->second.first_seen < options_.window_timeout) {
      d.publish = false;
      d.waiting_for_gpus = true;
      it->second.recheck_at = it->second.first_seen + options_.window_timeout;
      d.held_until = it->second.recheck_at;
      return d;
    }
    d.incomplete = true;
  }
  if (it != tracked_.end()) it->second.taught = !d.incomplete;
  return d;
}

AnalysisDecision Assembler::RetryDecision(const WindowTask& task, const AnalysisOutcome& outcome,
                                          TimePoint now) {
  AnalysisDecision d;
  auto it = tracked_.find(task.serial);
  if (it == tracked_.end()) {
    // The window vanished while in flight; its result is still the best we have.
    d.publish = !outcome.window_error.has_value();
    d.incomplete = task.short_of_expected || !task.excluded.empty() || !outcome.failed.empty();
    return d;
  }
  Tracked& t = it->second;
  bool retry_soon = false;
  int soon_tries = 0;
  int unreadable_tries = 0;  // kPermission files still tried: recheck later
  auto handle = [&](const std::string& path, const Error& error) {
    auto ft_it = t.tracks.find(path);
    if (ft_it == t.tracks.end() || ft_it->second.gave_up) return;
    FileTrack& ft = ft_it->second;
    ++ft.tries;
    ft.last_error = error.code;
    ft.failed_fp = ft.fp;
    const RetryClass rc = RetryClassOf(error.code);
    if (rc == RetryClass::kNever) return;
    if (ft.tries >= options_.max_retries) {
      ft.gave_up = true;
      d.gave_up.push_back({path, error});
      return;
    }
    if (rc == RetryClass::kSoon) {
      d.retrying.push_back({path, error});
      retry_soon = true;
      soon_tries = std::max(soon_tries, ft.tries);
    }
    if (error.code == ErrorCode::kPermission)
      unreadable_tries = std::max(unreadable_tries, ft.tries);
  };
  if (outcome.window_error) {
    for (const std::string& f : task.files) handle(f, *outcome.window_error);
  } else {
    for (const FileFailure& f : outcome.failed) handle(f.path, f.error);
    // Files that analysed cleanly start their retry count afresh.
    std::set<std::string> failed;
    for (const FileFailure& f : outcome.failed) failed.insert(f.path);
    for (const std::string& f : task.files) {
      auto ft = t.tracks.find(f);
      if (ft != t.tracks.end() && failed.count(f) == 0 && !ft->second.gave_up) {
        ft->second.tries = 0;
        ft->second.last_error.reset();
      }
    }
  }
  const bool any_active = std::any_of(t.tracks.begin(), t.tracks.end(),
                                      [](const auto& kv) { return !kv.second.gave_up; });
  if (retry_soon) {
    t.state = State::kRetryWait;
    t.next_retry = now + Backoff(soon_tries);
    d.retry = true;
  } else if (!d.gave_up.empty() && any_active) {
    // Analyse the rest without the given-up files, at once.
    t.state = State::kAssembling;
    t.force_ready = true;
    d.retry = true;
  } else {
    t.state = State::kDone;
    t.analysed_fp = Fingerprints(t);
    t.analysed_before = true;
    t.analyzed_unix = ToUnixSeconds(now);
    if (!outcome.window_error) {
      d.publish = true;
      d.incomplete = task.short_of_expected || !task.excluded.empty() || !outcome.failed.empty() ||
                     !d.gave_up.empty();
    }
    t.recheck_at.reset();
    if (unreadable_tries > 0) t.recheck_at = now + Backoff(unreadable_tries);
  }
  if (t.changed_in_flight && t.state == State::kDone) t.state = State::kAssembling;
  t.changed_in_flight = false;
  t.ready_since.reset();
  if (!t.seen_in_last_scan && t.state != State::kQueued) Untrack(it);
  return d;
}

Assembler::Tracked& Assembler::Track(uint64_t serial, const std::string& run_dir) {
  Tracked& t = tracked_[serial];
  t.serial = serial;
  t.run_dir = run_dir;
  serials_by_run_dir_[run_dir].insert(serial);
  return t;
}

std::map<uint64_t, Assembler::Tracked>::iterator Assembler::Untrack(
    std::map<uint64_t, Tracked>::iterator it) {
  auto run = serials_by_run_dir_.find(it->second.run_dir);
  if (run != serials_by_run_dir_.end()) {
    run->second.erase(it->first);
    if (run->second.empty()) serials_by_run_dir_.erase(run);
  }
  return tracked_.erase(it);
}

void Assembler::NoteRunActivity(const RunId& run, double unix_seconds) {
  double& at = run_activity_[run];
  at = std::max(at, unix_seconds);
}

bool Assembler::RunExpired(double last_activity_unix, TimePoint now) const {
  return last_activity_unix <
         ToUnixSeconds(now) - std::chrono::duration<double>(options_.retention).count();
}

std::optional<TimePoint> Assembler::NextDeadline() const {
  std::optional<TimePoint> best;
  auto consider = [&](TimePoint tp) {
    if (!best || tp < *best) best = tp;
  };
  for (const auto& [serial, t] : tracked_) {
    if (t.state == State::kDone && t.recheck_at) consider(*t.recheck_at);
    if (t.state != State::kAssembling && t.state != State::kRetryWait) continue;
    if (t.force_ready) {
      consider(last_scan_);
      continue;
    }
    const TimePoint quiet_at = t.last_change + options_.settle;
    if (last_scan_ < quiet_at) {
      consider(quiet_at);
      continue;
    }
    if (t.state == State::kRetryWait && t.next_retry) consider(*t.next_retry);
    if (options_.expected_files > 0 || options_.expected_gpus > 0 ||
        ExpectedFiles(t) > static_cast<int>(t.files.size())) {
      consider(t.first_seen + options_.window_timeout);
    }
  }
  return best;
}

int64_t Assembler::PendingCount() const {
  int64_t n = 0;
  for (const auto& [serial, t] : tracked_) {
    if (t.state == State::kAssembling || t.state == State::kRetryWait ||
        t.state == State::kQueued) {
      ++n;
    }
  }
  return n;
}

int64_t Assembler::TrackedFiles() const {
  int64_t n = 0;
  for (const auto& [serial, t] : tracked_) n += static_cast<int64_t>(t.tracks.size());
  return n;
}

std::map<RunId, int64_t> Assembler::PendingByRun() const {
  std::map<RunId, int64_t> out;
  for (const auto& [serial, t] : tracked_) {
    if (t.state == State::kAssembling || t.state == State::kRetryWait ||
        t.state == State::kQueued) {
      ++out[t.run];
    }
  }
  return out;
}

std::vector<AnalysedWindow> Assembler::Analysed() const {
  std::map<std::pair<std::string, std::string>, AnalysedWindow> all = restored_;
  for (const auto& [serial, t] : tracked_) {
    if (!t.analysed_before || t.group_dirs.empty()) continue;
    AnalysedWindow w;
    w.run = t.run;
    w.run_dir = t.run_dir;
    w.first_dir = t.group_dirs.front();
    w.files = t.analysed_fp;
    w.analyzed_unix = t.analyzed_unix;
    all[{w.run_dir, w.first_dir}] = std::move(w);
  }
  std::vector<AnalysedWindow> out;
  for (auto& [key, w] : all) out.push_back(std::move(w));
  return out;
}

}  // namespace profwatch::window
