#include "window/assembler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

Assembler::Assembler(AssemblerOptions options) : options_(options) {
  if (options_.retry_policy == nullptr) {  // REQUIRES: a retry policy
    std::fputs("window::Assembler: AssemblerOptions::retry_policy is required\n", stderr);
    std::abort();
  }
}

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
  CapRunsPerOwner(by_run, notes);
  std::map<std::string, RunWindows> runs;
  for (const auto& [run_dir, obs] : by_run) {
    runs.emplace(run_dir, GroupRunDir(obs, static_cast<int64_t>(options_.skew.count())));
  }
  ApplyHorizons(runs, notes);
  CapWindowsPerOwner(runs, notes);
  std::set<std::string> capped_now;
  for (const auto& [run_dir, rw] : runs) {
    const std::vector<uint64_t> run_serials = ObserveRunDir(run_dir, rw, now, notes, capped_now);
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

Assembler::RunWindows Assembler::GroupRunDir(const std::vector<const watch::FileObservation*>& obs,
                                             int64_t skew_seconds) {
  RunWindows rw;
  rw.run = RunId{obs.front()->labels.training_job, obs.front()->labels.run};
  rw.owner = obs.front()->owner;
  std::map<std::string, TimestampDir> dirs;
  for (const watch::FileObservation* o : obs) {
    TimestampDir& d = dirs[o->group_dir];
    d.path = o->group_dir;
    d.time = o->group_time;
    d.files.push_back(o->name);
    rw.scan.by_group_path[(fs::path(o->group_dir) / o->name).string()] = o;
    rw.scan.real_dir_of[o->group_dir] = o->dir;
  }
  std::vector<TimestampDir> list;
  list.reserve(dirs.size());
  for (auto& [path, d] : dirs) list.push_back(std::move(d));
  rw.windows = GroupWindows(std::move(list), skew_seconds);
  return rw;
}

void Assembler::CapRunsPerOwner(RunObservations& by_run, ScanNotes& notes) {
  std::set<std::string> refused_now;
  if (options_.max_runs_per_owner > 0) {
    // Per owner: the run dirs tracked already first (a new run does not push
    // out a run being followed), then the most recently written.
    struct Candidate {
      bool known = false;
      int64_t newest_ns = 0;
      std::string run_dir;
    };
    std::map<watch::Owner, std::vector<Candidate>> by_owner;
    for (const auto& [run_dir, obs] : by_run) {
      Candidate c;
      c.known = horizons_.count(run_dir) != 0;
      c.run_dir = run_dir;
      for (const watch::FileObservation* o : obs) c.newest_ns = std::max(c.newest_ns, o->mtime_ns);
      by_owner[obs.front()->owner].push_back(std::move(c));
    }
    for (auto& [owner, cands] : by_owner) {
      if (static_cast<int64_t>(cands.size()) <= options_.max_runs_per_owner) continue;
      std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
        if (a.known != b.known) return a.known;
        if (a.newest_ns != b.newest_ns) return a.newest_ns > b.newest_ns;
        return a.run_dir < b.run_dir;
      });
      OwnerCap cap;
      cap.owner = owner;
      cap.reason = kOwnerRunCapReason;
      cap.cap = options_.max_runs_per_owner;
      for (size_t i = static_cast<size_t>(options_.max_runs_per_owner); i < cands.size(); ++i) {
        const std::string& run_dir = cands[i].run_dir;
        ++cap.over;
        if (refused_run_dirs_.count(run_dir) == 0) ++cap.newly;
        if (cap.example.empty()) {
          const watch::RunLabels& l = by_run.at(run_dir).front()->labels;
          cap.example = l.training_job + "/" + l.run;
        }
        refused_now.insert(run_dir);
        by_run.erase(run_dir);
      }
      notes.owner_caps.push_back(std::move(cap));
    }
  }
  refused_run_dirs_ = std::move(refused_now);
}

void Assembler::ApplyHorizons(std::map<std::string, RunWindows>& runs, ScanNotes& notes) {
  const size_t keep = static_cast<size_t>(std::max(1, options_.windows_at_first_sight));
  for (auto& [run_dir, rw] : runs) {
    std::vector<Window>& windows = rw.windows;
    auto [h, first_sight] = horizons_.try_emplace(run_dir);
    if (first_sight && windows.size() > keep) {
      h->second.backlog_time = windows[windows.size() - keep].first_time;
    }
    const int64_t backlog_time = h->second.backlog_time;
    const int64_t below = std::count_if(windows.begin(), windows.end(), [&](const Window& w) {
      return w.first_time < backlog_time;
    });
    if (below > h->second.backlog) {
      // Found at first sight, or dated before them and appearing later.
      const auto oldest_kept = std::find_if(windows.begin(), windows.end(), [&](const Window& w) {
        return w.first_time >= backlog_time;
      });
      notes.backlog.push_back({rw.run, below - h->second.backlog,
                               oldest_kept == windows.end() ? std::string() : oldest_kept->id});
    }
    h->second.backlog = below;
    const int64_t cap_time = h->second.cap_time;
    rw.capped_out = std::count_if(windows.begin(), windows.end(), [&](const Window& w) {
      return w.first_time >= backlog_time && w.first_time < cap_time;
    });
    const int64_t horizon = std::max(backlog_time, cap_time);
    std::erase_if(windows, [&](const Window& w) { return w.first_time < horizon; });
  }
  // A run dir gone from disk starts afresh if it comes back.
  std::erase_if(horizons_, [&](const auto& kv) {
    return runs.count(kv.first) == 0 && refused_run_dirs_.count(kv.first) == 0;
  });
}

void Assembler::CapWindowsPerOwner(std::map<std::string, RunWindows>& runs, ScanNotes& notes) {
  // Per owner: every window still considered, and those left out by the
  // cap earlier (still on disk, under a cap_time).
  struct Ref {
    int64_t first_time = 0;
    std::string run_dir;
    size_t index = 0;
  };
  std::map<watch::Owner, std::vector<Ref>> by_owner;
  for (const auto& [run_dir, rw] : runs) {
    for (size_t i = 0; i < rw.windows.size(); ++i) {
      by_owner[rw.owner].push_back({rw.windows[i].first_time, run_dir, i});
    }
  }
  std::map<watch::Owner, OwnerCap> caps;
  std::map<std::string, std::set<size_t>> drop;
  if (options_.max_windows_per_owner > 0) {
    const size_t cap = static_cast<size_t>(options_.max_windows_per_owner);
    for (auto& [owner, refs] : by_owner) {
      if (refs.size() <= cap) continue;
      std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) {
        if (a.first_time != b.first_time) return a.first_time > b.first_time;
        return a.run_dir < b.run_dir;
      });
      OwnerCap& c = caps[owner];
      for (size_t i = cap; i < refs.size(); ++i) {
        drop[refs[i].run_dir].insert(refs[i].index);
        ++c.newly;
        if (c.example.empty()) {
          const RunWindows& rw = runs.at(refs[i].run_dir);
          c.example = rw.run.training_job + "/" + rw.run.run + "@" + rw.windows[refs[i].index].id;
        }
      }
    }
  }
  for (auto& [run_dir, rw] : runs) {
    Horizon& h = horizons_[run_dir];
    auto d = drop.find(run_dir);
    if (d != drop.end()) {
      // The oldest windows go: the run keeps those from its oldest window
      // left in on, and windows before that stay out from now on.
      int64_t cap_time = INT64_MIN;
      for (size_t i = 0; i < rw.windows.size(); ++i) {
        if (d->second.count(i) == 0) {
          cap_time = rw.windows[i].first_time;
          break;
        }
      }
      if (cap_time == INT64_MIN) cap_time = rw.windows.back().first_time + 1;
      h.cap_time = std::max(h.cap_time, cap_time);
      std::vector<Window> kept;
      for (size_t i = 0; i < rw.windows.size(); ++i) {
        if (rw.windows[i].first_time >= h.cap_time) kept.push_back(std::move(rw.windows[i]));
      }
      rw.windows = std::move(kept);
    }
  }
  // An owner is over its cap while windows of theirs on disk lie under a
  // cap_time (left out now or at an earlier scan).
  for (const auto& [run_dir, rw] : runs) {
    if (rw.capped_out == 0) continue;
    OwnerCap& c = caps[rw.owner];
    c.over += rw.capped_out;
    if (c.example.empty()) c.example = rw.run.training_job + "/" + rw.run.run;
  }
  for (auto& [owner, c] : caps) {
    c.over += c.newly;
    c.owner = owner;
    c.reason = kOwnerWindowCapReason;
    c.cap = options_.max_windows_per_owner;
    notes.owner_caps.push_back(std::move(c));
  }
}

std::vector<uint64_t> Assembler::ObserveRunDir(const std::string& run_dir, const RunWindows& rw,
                                               TimePoint now, ScanNotes& notes,
                                               std::set<std::string>& capped_now) {
  const std::vector<Window>& windows = rw.windows;
  const ScanFiles& scan = rw.scan;
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
                                static_cast<int64_t>(w.files.size()), o->owner});
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
  for (const std::string& d : w.timestamp_dirs) {
    auto it = serial_by_group_dir_.find(d);
    if (it == serial_by_group_dir_.end() || used.count(it->second) != 0) continue;
    Tracked& cand = tracked_.at(it->second);
    if (cand.run_dir == run_dir) return cand;
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
    t.taught = true;  // indexed by Place once its time is known
    // Decided by OnScanned once the tracks are filled in.
    t.state = State::kDone;
  }
  return t;
}

void Assembler::Place(Tracked& t, const Window& w, const ScanFiles& scan) {
  const watch::FileObservation* first_obs = scan.by_group_path.at(w.files.front());
  t.seen_in_last_scan = true;
  t.run = RunId{first_obs->labels.training_job, first_obs->labels.run};
  t.owner = first_obs->owner;
  t.id = fs::path(w.timestamp_dirs.front()).filename().string();
  if (t.taught) IndexTaught(t, false);
  t.first_time = w.first_time;
  if (t.group_dirs != w.timestamp_dirs) {
    for (const std::string& d : t.group_dirs) {
      auto it = serial_by_group_dir_.find(d);
      if (it != serial_by_group_dir_.end() && it->second == t.serial)
        serial_by_group_dir_.erase(it);
    }
    for (const std::string& d : w.timestamp_dirs) serial_by_group_dir_[d] = t.serial;
  }
  t.group_dirs = w.timestamp_dirs;
  t.real_dirs.clear();
  for (const std::string& gd : w.timestamp_dirs) {
    const std::string& real = scan.real_dir_of.at(gd);
    if (t.real_dirs.empty() || t.real_dirs.back() != real) t.real_dirs.push_back(real);
  }
}

bool Assembler::UpdateFiles(Tracked& t, const Window& w, const ScanFiles& scan, TimePoint now) {
  bool changed = false;
  // A window of the startup backlog seen for the first time whose every
  // file's mtime is older than `settle` by the clock: its files have been
  // quiet that long already (the mtime is the observation: a write moves
  // it), so its settle counts from its newest mtime, not from now. Only at
  // startup: a tree copied in later (cp -a sets each file's old mtime when
  // that file is done, while the next ones are still being written) waits
  // the full settle from first sight.
  const bool first_sight = t.backlog && t.tracks.empty();
  bool quiet_before = first_sight;
  TimePoint newest_mtime = TimePoint::min();
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
      const TimePoint mtime = TimePoint{} + std::chrono::duration_cast<TimePoint::duration>(
                                                std::chrono::nanoseconds(o->mtime_ns));
      quiet_before = quiet_before && mtime <= now - options_.settle;
      newest_mtime = std::max(newest_mtime, mtime);
      changed = true;
    }
    ft.fp = fp;
    tracks[o->path] = ft;
  }
  if (tracks.size() != t.tracks.size()) changed = true;  // a file went away
  t.tracks = std::move(tracks);
  std::set<std::pair<uint64_t, uint64_t>> inodes;
  for (const auto& [path, ft] : t.tracks) inodes.insert({ft.fp.dev, ft.fp.ino});
  t.distinct_files = static_cast<int>(inodes.size());
  // Indexed with its time and file count (Place took it out).
  if (t.taught) IndexTaught(t, true);
  if (quiet_before && !t.tracks.empty()) {
    for (auto& [path, ft] : t.tracks) ft.last_change = newest_mtime;
    t.last_change = newest_mtime;
  } else if (changed) {
    t.last_change = now;
  }
  return changed;
}

void Assembler::IndexTaught(const Tracked& t, bool add) {
  auto& run = taught_by_run_dir_[t.run_dir];
  if (add) {
    run[{t.first_time, t.serial}] = t.distinct_files;
  } else {
    run.erase({t.first_time, t.serial});
  }
  if (run.empty()) taught_by_run_dir_.erase(t.run_dir);
}

void Assembler::SetTaught(Tracked& t, bool taught) {
  if (t.taught) IndexTaught(t, false);
  t.taught = taught;
  if (t.taught) IndexTaught(t, true);
}

void Assembler::StopWaiting(Tracked& t) {
  if (t.state != State::kWaiting) return;
  waiting_.Remove(t.serial);
  t.state = t.before_waiting;
  t.ready_since.reset();
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
    case State::kWaiting:
      // Not started yet: it waits again once it is quiet.
      if (changed) StopWaiting(t);
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
        (t.state == State::kAssembling || t.state == State::kRetryWait ||
         t.state == State::kWaiting)) {
      StopWaiting(t);
      t.state = State::kSuperseded;
      if (!t.superseded_reported) {
        t.superseded_reported = true;
        notes.superseded.push_back(
            {t.run, t.id, newest_t->id, static_cast<int>(t.files.size()), !scanned_});
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
  auto run = taught_by_run_dir_.find(t.run_dir);
  if (run == taught_by_run_dir_.end()) return 0;
  auto it = run->second.lower_bound({t.first_time, 0});
  if (it == run->second.begin()) return 0;
  return std::prev(it)->second;
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
        ready_notes_.expired.push_back({t.run, t.id, t.last_activity_unix, t.owner});
      }
      return false;
    }
  }
  if (t.state != State::kAssembling && t.state != State::kRetryWait) return false;
  *gate = ExpectedFiles(t);
  const int count = t.distinct_files;
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
  if (t.state == State::kAssembling && t.reanalyse_after && now < *t.reanalyse_after) {
    if (!t.paced_reported) {
      t.paced_reported = true;
      ready_notes_.paced.push_back({t.run, t.id, *t.reanalyse_after});
    }
    return false;
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

size_t Assembler::Schedule(TimePoint now) {
  size_t queued = 0;
  for (auto& [serial, t] : tracked_) {
    int gate = 0;
    bool short_of = false;
    if (!IsReady(t, now, &gate, &short_of)) continue;
    if (!t.ready_since) t.ready_since = now;
    t.before_waiting = t.state;
    t.state = State::kWaiting;
    t.waiting_gate = gate;
    t.waiting_short = short_of;
    waiting_.Push(ShareKey{t.owner, t.run.training_job, t.run.run}, t.serial, *t.ready_since,
                  t.first_time);
    ++queued;
  }
  return queued;
}

std::optional<WindowTask> Assembler::TakeNext(TimePoint now) {
  (void)now;
  std::map<watch::Owner, int64_t> busy;  // windows in analysis per owner
  for (const auto& [serial, t] : tracked_) {
    if (t.state == State::kQueued) ++busy[t.owner];
  }
  const std::optional<uint64_t> serial = waiting_.Pop(busy);
  if (!serial) return std::nullopt;
  Tracked& t = tracked_.at(*serial);
  WindowTask task;
  task.serial = t.serial;
  task.run = t.run;
  task.owner = t.owner;
  task.run_dir = t.run_dir;
  task.window_id = t.id;
  task.first_time = t.first_time;
  task.timestamp_dirs = t.real_dirs;
  // Read once: a path naming a file already in the window is left out.
  std::set<std::pair<uint64_t, uint64_t>> inodes;
  for (const std::string& f : t.files) {
    const FileTrack& ft = t.tracks.at(f);
    if (!inodes.insert({ft.fp.dev, ft.fp.ino}).second) {
      ++task.duplicates;
      continue;
    }
    if (ft.gave_up) {
      task.excluded.push_back(f);
    } else {
      task.files.push_back(f);
    }
  }
  task.total_files = t.distinct_files;
  for (const std::string& f : task.excluded) {
    if (const FileTrack& ft = t.tracks.at(f); ft.last_error) {
      task.excluded_error = ft.last_error;
      break;
    }
  }
  task.expected_files = t.waiting_gate;
  task.short_of_expected = t.waiting_short;
  task.reanalysis = t.analysed_before;
  task.last_activity_unix = t.last_activity_unix;
  task.ready_since = t.ready_since.value_or(now);
  t.state = State::kQueued;
  t.force_ready = false;
  t.changed_in_flight = false;
  t.ready_since.reset();
  t.taken_at = now;
  return task;
}

std::vector<WindowTask> Assembler::TakeReady(TimePoint now, size_t max) {
  Schedule(now);
  std::vector<WindowTask> out;
  while (out.size() < max) {
    std::optional<WindowTask> task = TakeNext(now);
    if (!task) break;
    out.push_back(std::move(*task));
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
      it->second.held_for_gpus = true;
      d.held_until = it->second.recheck_at;
      return d;
    }
    d.incomplete = true;
  }
  if (it != tracked_.end()) SetTaught(it->second, !d.incomplete);
  return d;
}

AnalysisDecision Assembler::RetryDecision(const WindowTask& task, const AnalysisOutcome& outcome,
                                          TimePoint now) {
  RetryFacts facts;
  facts.window_error = outcome.window_error.has_value();
  facts.incomplete_input =
      task.short_of_expected || !task.excluded.empty() || !outcome.failed.empty();
  facts.now = now;
  facts.max_retries = options_.max_retries;
  facts.settle = options_.settle;
  facts.max_backoff = options_.max_backoff;
  facts.reanalysis_interval = options_.reanalysis_interval;
  AnalysisDecision d;
  auto it = tracked_.find(task.serial);
  if (it == tracked_.end()) {
    // The window vanished while in flight; its result is still the best we have.
    facts.tracked = false;
    const RetryPlan plan = options_.retry_policy(facts);
    d.publish = plan.publish;
    d.incomplete = plan.incomplete;
    return d;
  }
  Tracked& t = it->second;
  t.held_for_gpus = false;  // OnAnalyzed holds it again if still short
  facts.taken_at = t.taken_at;
  facts.active_files = static_cast<int>(std::count_if(
      t.tracks.begin(), t.tracks.end(), [](const auto& kv) { return !kv.second.gave_up; }));
  facts.failed = CountTries(t, task, outcome);
  ApplyRetryPlan(t, options_.retry_policy(facts), now, d);
  if (t.changed_in_flight && t.state == State::kDone) t.state = State::kAssembling;
  t.changed_in_flight = false;
  t.ready_since.reset();
  if (!t.seen_in_last_scan && t.state != State::kQueued) Untrack(it);
  return d;
}

std::vector<FailedFileTry> Assembler::CountTries(Tracked& t, const WindowTask& task,
                                                 const AnalysisOutcome& outcome) {
  std::vector<FailedFileTry> failed;
  auto count = [&](const std::string& path, const Error& error) {
    auto ft_it = t.tracks.find(path);
    if (ft_it == t.tracks.end() || ft_it->second.gave_up) return;
    FileTrack& ft = ft_it->second;
    ++ft.tries;
    ft.last_error = error.code;
    ft.failed_fp = ft.fp;
    failed.push_back({{path, error}, ft.tries});
  };
  if (outcome.window_error) {
    for (const std::string& f : task.files) count(f, *outcome.window_error);
    return failed;
  }
  for (const FileFailure& f : outcome.failed) count(f.path, f.error);
  // Files that analysed cleanly start their retry count afresh.
  std::set<std::string> failed_paths;
  for (const FileFailure& f : outcome.failed) failed_paths.insert(f.path);
  for (const std::string& f : task.files) {
    auto ft = t.tracks.find(f);
    if (ft != t.tracks.end() && failed_paths.count(f) == 0 && !ft->second.gave_up) {
      ft->second.tries = 0;
      ft->second.last_error.reset();
    }
  }
  return failed;
}

void Assembler::ApplyRetryPlan(Tracked& t, const RetryPlan& plan, TimePoint now,
                               AnalysisDecision& d) {
  for (const FileFailure& f : plan.gave_up) {
    if (auto ft = t.tracks.find(f.path); ft != t.tracks.end()) ft->second.gave_up = true;
  }
  d.gave_up = plan.gave_up;
  d.retrying = plan.retrying;
  switch (plan.next) {
    case RetryPlan::Next::kRetryAt:
      t.state = State::kRetryWait;
      t.next_retry = plan.retry_at;
      d.retry = true;
      return;
    case RetryPlan::Next::kAnalyseNow:
      t.state = State::kAssembling;
      t.force_ready = true;
      d.retry = true;
      return;
    case RetryPlan::Next::kDone:
      break;
  }
  t.state = State::kDone;
  t.analysed_fp = Fingerprints(t);
  t.analysed_before = true;
  t.analyzed_unix = ToUnixSeconds(now);
  if (plan.reanalyse_after) t.reanalyse_after = *plan.reanalyse_after;
  t.paced_reported = false;
  d.publish = plan.publish;
  d.incomplete = plan.incomplete;
  t.recheck_at = plan.recheck_at;
}

Assembler::Tracked& Assembler::Track(uint64_t serial, const std::string& run_dir) {
  Tracked& t = tracked_[serial];
  t.serial = serial;
  t.run_dir = run_dir;
  return t;
}

std::map<uint64_t, Assembler::Tracked>::iterator Assembler::Untrack(
    std::map<uint64_t, Tracked>::iterator it) {
  Tracked& t = it->second;
  StopWaiting(t);
  if (t.taught) IndexTaught(t, false);
  for (const std::string& d : t.group_dirs) {
    auto g = serial_by_group_dir_.find(d);
    if (g != serial_by_group_dir_.end() && g->second == t.serial) serial_by_group_dir_.erase(g);
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
    if (t.state == State::kAssembling && t.reanalyse_after && last_scan_ < *t.reanalyse_after) {
      consider(*t.reanalyse_after);
      continue;
    }
    if (t.state == State::kRetryWait && t.next_retry) consider(*t.next_retry);
    if (options_.expected_files > 0 || options_.expected_gpus > 0 ||
        ExpectedFiles(t) > t.distinct_files) {
      consider(t.first_seen + options_.window_timeout);
    }
  }
  return best;
}

bool Assembler::IsPending(const Tracked& t) {
  return t.state == State::kAssembling || t.state == State::kRetryWait ||
         t.state == State::kWaiting || t.state == State::kQueued ||
         (t.state == State::kDone && t.held_for_gpus);
}

int64_t Assembler::PendingCount() const {
  int64_t n = 0;
  for (const auto& [serial, t] : tracked_) {
    if (IsPending(t)) ++n;
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
    if (IsPending(t)) ++out[t.run];
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
