#include "pipeline/training_logs.h"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/log.h"

namespace profwatch::pipeline {
namespace {

namespace fs = std::filesystem;

std::string GlobEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void ReplaceAll(std::string& s, std::string_view from, const std::string& to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// Regular files matching `pattern`, sorted (glob(3) sorts).
std::vector<std::string> GlobFiles(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), GLOB_NOSORT | GLOB_ERR, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::error_code ec;
      if (fs::is_regular_file(g.gl_pathv[i], ec)) out.emplace_back(g.gl_pathv[i]);
    }
  }
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

snapshot::TrainingInfo InfoOf(const steplog::StepTimeSource& s) {
  snapshot::TrainingInfo t;
  t.last_step = s.last_step();
  t.last_step_seconds = s.last_step_seconds();
  t.steady_step_seconds = s.steady_step_seconds();
  t.tokens_per_second_per_device = s.tokens_per_second_per_device();
  t.tflops_per_device = s.tflops_per_device();
  t.mfu_ratio = s.mfu_ratio();
  t.loss = s.loss();
  if (auto when = s.last_step_time()) t.last_step_unix = ToUnixSeconds(*when);
  return t;
}

// NaN-tolerant equality (a diverged loss is NaN and must not read as a
// change on every poll).
bool SameValue(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return *a == *b || (std::isnan(*a) && std::isnan(*b));
}

bool SameInfo(const snapshot::TrainingInfo& a, const snapshot::TrainingInfo& b) {
  return a.last_step == b.last_step && SameValue(a.last_step_seconds, b.last_step_seconds) &&
         SameValue(a.steady_step_seconds, b.steady_step_seconds) &&
         SameValue(a.tokens_per_second_per_device, b.tokens_per_second_per_device) &&
         SameValue(a.tflops_per_device, b.tflops_per_device) &&
         SameValue(a.mfu_ratio, b.mfu_ratio) && SameValue(a.loss, b.loss) &&
         SameValue(a.last_step_unix, b.last_step_unix);
}

}  // namespace

struct TrainingLogs::Followed {
  Followed(std::string path, bool bound, const TrainingLogsOptions& o, const Clock& clock)
      : tailer(std::move(path), o.tailer), source(clock, o.step_time), bound(bound) {}
  steplog::LogTailer tailer;
  steplog::StepTimeSource source;
  bool bound;  // named by --log: read where it lies
  // What it may still read before budget_until (TrainingLogsOptions::
  // max_bytes_per_scan per scan_period).
  uint64_t budget_left = 0;
  TimePoint budget_until{};
  snapshot::TrainingInfo reported;
  std::optional<int64_t> reported_profile_steps;
  uint64_t reported_parse_errors = 0;
  size_t reported_warnings = 0;
  std::string last_error;  // logged once per distinct error
};

Result<LogBinding> ParseLogBinding(std::string_view text) {
  LogBinding b;
  const auto [name, path] = watch::SplitBinding(text);
  b.path = std::string(path);
  if (!name.empty()) {
    const size_t slash = name.find('/');
    if (slash == std::string_view::npos) {
      b.run = std::string(name);
    } else {
      b.training_job = std::string(name.substr(0, slash));
      b.run = std::string(name.substr(slash + 1));
      if (b.training_job.empty() || b.run.empty()) {
        return MakeError(ErrorCode::kConfig,
                         "--log '" + std::string(text) + "': expected JOB/RUN=FILE");
      }
    }
  }
  if (b.path.empty()) {
    return MakeError(ErrorCode::kConfig, "--log '" + std::string(text) + "': empty file name");
  }
  return b;
}

std::string ExpandLogGlob(std::string_view pattern, const std::string& jobs_root,
                          const std::string& job, const std::string& run) {
  std::string out(pattern);
  ReplaceAll(out, "{jobs_root}", GlobEscape(jobs_root));
  ReplaceAll(out, "{job}", GlobEscape(job));
  ReplaceAll(out, "{run}", GlobEscape(run));
  return out;
}

namespace {

RunLocation LocationOf(const watch::RunLabels& labels, const std::string& run_dir) {
  RunLocation loc;
  loc.key = {labels.training_job, labels.run};
  fs::path job_dir = fs::path(run_dir);
  if (labels.run != watch::kRunOfJobDir) {
    loc.run_path = labels.run;
    const auto parts = std::count(labels.run.begin(), labels.run.end(), '/') + 1;
    for (long i = 0; i < parts && job_dir.has_parent_path(); ++i) job_dir = job_dir.parent_path();
  }
  loc.job_dir_name = job_dir.filename().string();
  loc.jobs_root = job_dir.parent_path().string();
  return loc;
}

}  // namespace

RunLocation LocateRun(const watch::FileObservation& file) {
  RunLocation loc = LocationOf(file.labels, file.run_dir);
  loc.owner = file.owner;
  return loc;
}

RunLocation LocateRunDir(const std::string& run_dir) {
  std::string dir = fs::absolute(run_dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const fs::path path(dir);
  watch::RunLabels labels{path.parent_path().filename().string(), path.filename().string()};
  if (labels.run.empty()) labels.run = watch::kRunOfJobDir;
  return LocationOf(labels, dir);
}

std::string FindLogByGlobs(const RunLocation& loc, const std::vector<std::string>& globs,
                           const steplog::LogTrust* trust, const read::Confinement* confine_to,
                           std::vector<std::pair<std::string, std::string>>* refused) {
  for (const std::string& pattern : globs) {
    std::vector<std::string> hits =
        GlobFiles(ExpandLogGlob(pattern, loc.jobs_root, loc.job_dir_name, loc.run_path));
    for (const std::string& hit : hits) {
      // An empty {run} (traces in the job dir itself) leaves "//" in a match.
      std::string path = fs::path(hit).lexically_normal().string();
      if (trust == nullptr) return path;
      bool untrusted = false;
      Result<int> fd = steplog::OpenRunLog(path, confine_to, trust, &untrusted);
      if (fd) {
        ::close(*fd);
        return path;
      }
      // Refused (not the run's, or out of the roots): the next candidate.
      // One that cannot be opened otherwise (unreadable) is used as before:
      // following it says why it cannot be read.
      if (!untrusted) return path;
      if (refused != nullptr) refused->emplace_back(path, fd.error().context);
    }
  }
  return "";
}

steplog::LogTrust TrustOf(const RunLocation& loc) {
  steplog::LogTrust trust;
  trust.owner = loc.owner;  // watch::kNoOwner is UINT32_MAX: no owner trusted
  if (loc.jobs_root.empty()) return trust;
  const fs::path job_dir = fs::path(loc.jobs_root) / loc.job_dir_name;
  for (const fs::path& dir : {job_dir, loc.run_path.empty() ? job_dir : job_dir / loc.run_path}) {
    std::error_code ec;
    std::string real = fs::canonical(dir, ec).string();
    if (!ec && std::find(trust.inside.begin(), trust.inside.end(), real) == trust.inside.end()) {
      trust.inside.push_back(std::move(real));
    }
  }
  return trust;
}

TrainingLogs::TrainingLogs(TrainingLogsOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock) {
  if (options_.globs.empty()) options_.globs = kDefaultLogGlobs;
  options_.max_bytes_per_scan =
      std::max<uint64_t>(options_.max_bytes_per_scan, options_.tailer.max_bytes_per_poll);
  std::erase_if(options_.bindings, [this](const LogBinding& b) {
    if (b.training_job.empty() || options_.shard.Owns(b.training_job)) return false;
    LogInfo("--log not followed: another shard owns the job", {{"training_job", b.training_job},
                                                               {"run", b.run},
                                                               {"path", b.path},
                                                               {"shard", options_.shard.index},
                                                               {"shards", options_.shard.count}});
    return true;
  });
  // A fully named binding makes its run known before any trace exists, so
  // its training figures are exported from the first log line.
  for (const LogBinding& b : options_.bindings) {
    if (!b.training_job.empty()) {
      locations_.emplace(snapshot::RunKey{b.training_job, b.run},
                         RunLocation{{b.training_job, b.run}, "", "", ""});
    }
  }
}

TrainingLogs::~TrainingLogs() = default;

std::map<watch::Owner, size_t> TrainingLogs::ObserveRuns(const std::vector<RunLocation>& runs) {
  std::map<watch::Owner, size_t> refused;
  for (const RunLocation& r : runs) {
    if (locations_.count(r.key)) continue;
    if (locations_.size() >= options_.max_runs) {
      if (!refused_.insert(r.key).second) continue;
      ++refused[r.owner];
      if (!warned_max_runs_) {
        LogWarn("training logs: --max-followed-logs reached, not following more runs' logs",
                {{"max_followed_logs", options_.max_runs},
                 {"training_job", r.key.training_job},
                 {"run", r.key.run}});
        warned_max_runs_ = true;
      }
      continue;
    }
    refused_.erase(r.key);
    locations_.emplace(r.key, r);
  }
  return refused;
}

void TrainingLogs::SetConfinement(read::Confinement roots) {
  if (options_.confine_to) options_.confine_to = std::move(roots);
}

void TrainingLogs::Forget(const snapshot::RunKey& key) {
  locations_.erase(key);
  std::erase_if(refused_logs_, [&](const auto& r) { return r.first == key; });
  std::lock_guard<std::mutex> lock(mu_);
  followed_.erase(key);
}

namespace {

steplog::WindowSteps StepsOf(const snapshot::WindowLogSteps& w) {
  steplog::WindowSteps s;
  s.segment = w.segment;
  s.profiled = {w.first_step, w.last_step};
  s.located = w.located;
  s.period_first = w.period_first;
  s.period_end = w.period_end;
  return s;
}

}  // namespace

bool TrainingLogs::UpdateWindowSteps(const snapshot::RunKey& key, snapshot::WindowLogSteps& w,
                                     const snapshot::WindowLogSteps* previous) const {
  if (w.settled) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = followed_.find(key);
  if (it == followed_.end()) return false;
  const Followed& f = *it->second;
  const snapshot::WindowLogSteps before = w;
  if (!w.bound) {
    // A log still catching up (a restart reads it from its start) has not
    // reached the window's steps yet.
    if (!f.tailer.at_eof()) return false;
    std::optional<steplog::WindowSteps> prev;
    if (previous && previous->bound) prev = StepsOf(*previous);
    std::optional<steplog::WindowSteps> at = f.source.LatestWindow(prev ? &*prev : nullptr);
    if (!at) return false;
    w.bound = true;
    w.located = at->located;
    w.first_step = at->profiled.first;
    w.last_step = at->profiled.last;
    w.period_first = at->period_first;
    w.period_end = at->period_end;
    w.segment = at->segment;
  }
  steplog::WindowStepTime t = f.source.WindowSteadySeconds(StepsOf(w));
  if (t.seconds) {  // a restarted log keeps the value the window had
    w.seconds = t.seconds;
    w.steps = static_cast<int64_t>(t.steps);
  }
  w.settled = t.settled;
  return !(w == before);
}

std::string TrainingLogs::Resolve(const RunLocation& loc, bool& bound) {
  bound = true;
  const LogBinding* plain = nullptr;
  for (const LogBinding& b : options_.bindings) {
    if (b.run.empty()) {
      if (!plain) plain = &b;
      continue;
    }
    if (b.run == loc.key.run &&
        (b.training_job.empty() || b.training_job == loc.key.training_job)) {
      return b.path;  // followed even before it exists (a log that appears late)
    }
  }
  if (plain) {
    if (locations_.size() == 1) return plain->path;
    if (!warned_ambiguous_) {
      LogWarn("--log names no run and several runs are watched: not used",
              {{"path", plain->path},
               {"runs", locations_.size()},
               {"hint", "write --log JOB/RUN=FILE"}});
      warned_ambiguous_ = true;
    }
  }
  bound = false;
  // No root known yet (before the first scan): nothing found could be read.
  if (options_.confine_to && options_.confine_to->empty()) return "";
  const steplog::LogTrust trust = TrustOf(loc);
  std::vector<std::pair<std::string, std::string>> refused;
  std::string path = FindLogByGlobs(
      loc, options_.globs, &trust, options_.confine_to ? &*options_.confine_to : nullptr, &refused);
  for (const auto& [file, why] : refused) RefuseLog(loc, file, why);
  return path;
}

void TrainingLogs::RefuseLog(const RunLocation& loc, const std::string& path,
                             const std::string& why) {
  if (!refused_logs_.emplace(loc.key, path).second) return;
  ++refused_logs_new_[loc.owner];
  LogWarn("training log refused",
          {{"training_job", loc.key.training_job},
           {"run", loc.key.run},
           watch::OwnerField(loc.owner),
           {"path", path},
           {"reason", kLogNotTheRunsReason},
           {"error", why},
           {"hint",
            "a log found by --log-glob is read only inside the run's or job's directory or when "
            "the run's owner wrote it; name another with --log JOB/RUN=FILE"}});
}

std::map<watch::Owner, size_t> TrainingLogs::TakeRefusedLogs() {
  std::map<watch::Owner, size_t> out;
  out.swap(refused_logs_new_);
  return out;
}

std::vector<LogUpdate> TrainingLogs::Poll(bool discover) {
  std::vector<LogUpdate> updates;
  behind_ = false;
  const TimePoint now = clock_.Now();
  for (const auto& [key, loc] : locations_) {
    auto it = followed_.find(key);
    if (it == followed_.end()) {
      if (!discover) continue;
      bool bound = false;
      std::string path = Resolve(loc, bound);
      if (path.empty()) continue;
      LogInfo("training log found",
              {{"training_job", key.training_job}, {"run", key.run}, {"path", path}});
      std::lock_guard<std::mutex> lock(mu_);
      it = followed_.emplace(key, std::make_unique<Followed>(path, bound, options_, clock_)).first;
      // Every later open (a rotation) is checked as discovery was.
      if (!bound) it->second->tailer.SetTrust(TrustOf(loc));
    }
    std::lock_guard<std::mutex> lock(mu_);
    Followed& f = *it->second;
    if (now >= f.budget_until) {
      f.budget_left = options_.max_bytes_per_scan;
      f.budget_until = now + options_.scan_period;
    }
    LogUpdate u;
    u.key = key;
    u.path = f.tailer.path();
    const read::Confinement* confine =
        f.bound || !options_.confine_to ? nullptr : &*options_.confine_to;
    // A spent budget still checks the path (0 bytes): a log that went away
    // is closed now, not a period later.
    const uint64_t read_before = f.tailer.counters().bytes_read;
    Result<std::vector<std::string>> lines =
        f.tailer.Poll(confine, static_cast<size_t>(std::min<uint64_t>(f.budget_left, SIZE_MAX)));
    f.budget_left -= std::min(f.budget_left, f.tailer.counters().bytes_read - read_before);
    if (!lines) {
      if (f.tailer.untrusted()) {
        RefuseLog(loc, f.tailer.path(), lines.error().context);
        continue;
      }
      const std::string err = lines.error().ToString();
      if (err != f.last_error) {
        LogWarn("training log unreadable", {{"training_job", key.training_job},
                                            {"run", key.run},
                                            {"path", f.tailer.path()},
                                            {"error", err}});
        f.last_error = err;
      }
      continue;
    }
    f.last_error.clear();
    if (!f.tailer.at_eof() && f.budget_left > 0) behind_ = true;
    // Lines read while catching up (a restart re-reads every log) are as old
    // as the file's last write, not as new as this read.
    const std::optional<TimePoint> written = f.tailer.last_write_time();
    for (size_t i = 0; i < lines->size(); ++i) {
      f.source.AddLine((*lines)[i], written, f.tailer.line_numbers()[i]);
    }
    if (!lines->empty()) {
      u.written_unix = ToUnixSeconds(written ? std::min(*written, clock_.Now()) : clock_.Now());
    }
    u.new_lines = !lines->empty();
    u.training = InfoOf(f.source);
    // The divisor needs the window length even when the first profiled step
    // is unknown (no skip_first_n in the log).
    u.profile_steps = f.source.profile_config().profiler_steps;
    if (u.profile_steps && *u.profile_steps <= 0) u.profile_steps.reset();
    u.changed = !SameInfo(u.training, f.reported) || u.profile_steps != f.reported_profile_steps;
    u.new_parse_errors = f.source.parse_errors() - f.reported_parse_errors;
    const auto& warnings = f.source.warnings();
    for (size_t i = f.reported_warnings; i < warnings.size(); ++i) {
      u.new_warnings.push_back(warnings[i]);
    }
    f.reported = u.training;
    f.reported_profile_steps = u.profile_steps;
    f.reported_parse_errors = f.source.parse_errors();
    f.reported_warnings = warnings.size();
    if (u.new_lines || u.changed || u.new_parse_errors > 0 || !u.new_warnings.empty()) {
      updates.push_back(std::move(u));
    }
  }
  return updates;
}

std::vector<std::string> TrainingLogs::LogDirectories() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> dirs;
  for (const auto& [key, f] : followed_) {
    dirs.insert(fs::path(f->tailer.path()).parent_path().string());
  }
  return {dirs.begin(), dirs.end()};
}

std::string TrainingLogs::LogPathOf(const snapshot::RunKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = followed_.find(key);
  return it == followed_.end() ? "" : it->second->tailer.path();
}

bool ChooseStepTime(snapshot::RunState& rs, std::optional<double> config_step_seconds) {
  figures::StepSources sources;
  const snapshot::WindowLogSteps& w = rs.window_log;
  // The window's own period once it is placed in its log; until then (or
  // without steady steps around it) the log's recent steady steps.
  if (rs.has_window && w.bound) sources.log_window = w.seconds;
  sources.log_steady = rs.training.steady_step_seconds;
  sources.config = config_step_seconds;
  figures::StepTime step =
      figures::ChooseStepTime(sources, rs.has_window ? rs.stats.get() : nullptr);
  const bool changed = step.seconds != rs.step_seconds || step.source != rs.step_source;
  rs.step_seconds = step.seconds;
  rs.step_source = std::move(step.source);
  return changed;
}

}  // namespace profwatch::pipeline
