#include "watch/scanner.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "watch/layout.h"

namespace profwatch::watch {
namespace {

namespace fs = std::filesystem;

bool IsKinetoName(std::string_view name) {
  return name.ends_with(".pt.trace.json") || name.ends_with(".pt.trace.json.gz");
}

// A name a profiler may have written: a trace file name, or a JSON file
// naming itself a trace (torch's handler output renamed, `rank0_trace.json`).
bool LooksLikeTrace(std::string_view name) {
  if (IsTraceFileName(name)) return true;
  return !name.empty() && name.front() != '.' && name.ends_with(".json") &&
         name.find("trace") != std::string_view::npos;
}

std::string FormatTs(int64_t t) {
  time_t tt = static_cast<time_t>(t);
  tm parts{};
  gmtime_r(&tt, &parts);
  char buf[32];
  strftime(buf, sizeof buf, "%Y_%m_%d_%H_%M_%S", &parts);
  return buf;
}

using Visited = std::set<std::pair<dev_t, ino_t>>;

// The components of `run_dir` below `root` (both absolute, normal, without
// a trailing '/'); empty when it is the root or lies outside it.
std::vector<std::string> PartsBelowRoot(const std::string& root, const std::string& run_dir) {
  const fs::path rel = fs::path(run_dir).lexically_relative(root);
  std::vector<std::string> parts;
  for (const fs::path& part : rel) {
    const std::string s = part.string();
    if (s == "..") return {};
    if (!s.empty() && s != ".") parts.push_back(s);
  }
  return parts;
}

struct Entry {
  std::string name;
  bool is_dir = false;
  bool is_link = false;
};

// An open directory stream, closed on scope exit (null: none).
class OpenDir {
 public:
  explicit OpenDir(DIR* d) : d_(d) {}
  ~OpenDir() {
    if (d_ != nullptr) closedir(d_);
  }
  OpenDir(const OpenDir&) = delete;
  OpenDir& operator=(const OpenDir&) = delete;
  DIR* get() const { return d_; }
  int fd() const { return dirfd(d_); }

 private:
  DIR* d_;
};

// Directories are opened relative to their parent's descriptor and
// identified with fstat on it: an idle daemon polling 1,000 jobs spends most
// of its time in this walk, and full-path stat + opendir per directory cost
// two path resolutions of ~7 components each.
class Walker {
 public:
  Walker(const ScanOptions& options, ScanResult* out) : options_(options), out_(out) {
    for (const std::string& root : options.roots) {
      std::error_code ec;
      std::string real = fs::canonical(root, ec).string();
      if (!ec) roots_real_.push_back(std::move(real));
    }
  }

  void WalkRoot(const std::string& root_in) {
    std::string root = fs::absolute(fs::path(root_in)).lexically_normal().string();
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    root_ = root;
    const auto bound = options_.root_jobs.find(root_in);
    root_job_ = bound == options_.root_jobs.end() ? "" : bound->second;
    out_->roots.push_back(CheckRoot(root_in, root));
    if (out_->roots.back().condition != RootCondition::kOk) return;
    std::error_code ec;
    root_real_ = fs::canonical(root, ec).string();
    root_owned_ = options_.shard.Owns(LabelsForRunDir(root_, root_, root_job_).training_job);
    // A root of one job another shard owns: nothing below it is ours.
    if (!root_job_.empty() && !root_owned_) {
      ++out_->other_shard_jobs;
      return;
    }
    Walk(AT_FDCWD, root, root, fs::path(root).parent_path().filename().string(), 0, kNoOwner);
  }

 private:
  // True when the directory link `name` in `dir` (open as `dir_fd`) may be
  // walked: never when it resolves inside a watched root (the real directory
  // is walked in its own place, under its own name: a link must not give
  // another user's run a second label, nor take its first); one resolving
  // outside every root only with follow_symlinks (else counted skipped). A
  // refused link is reported as an IgnoredDir (kIgnoredDirLink), charged to
  // the link's owner.
  bool MayEnterLink(int dir_fd, const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    std::error_code ec;
    const std::string target = fs::canonical(path, ec).string();
    if (ec) return false;  // dangling or unreadable: nothing to walk
    for (const std::string& real : roots_real_) {
      if (target == real || target.starts_with(real == "/" ? real : real + "/")) {
        struct stat lst;
        const Owner owner = fstatat(dir_fd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0
                                ? static_cast<Owner>(lst.st_uid)
                                : kNoOwner;
        // Paid from the link owner's directory share, like an odd <ts>
        // name: one user's links cannot grow the list of ignored paths.
        if (TakeDir(owner)) out_->ignored.push_back({path, kIgnoredDirLink, 0, owner});
        return false;
      }
    }
    if (options_.follow_symlinks) return true;
    ++out_->symlinks_skipped;
    return false;
  }

  // True when the file link at `path` resolves to a file outside the root;
  // false for a dangling link (it is no file to read).
  bool FileLeavesRoot(const std::string& path) const {
    std::error_code ec;
    const std::string target = fs::canonical(path, ec).string();
    if (ec) return false;
    if (root_real_ == "/") return false;
    return root_real_.empty() || !target.starts_with(root_real_ + "/");
  }

  static RootStatus CheckRoot(const std::string& configured, const std::string& root) {
    RootStatus status{configured, RootCondition::kOk, 0};
    const int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      return status;
    }
    status.error = errno;
    switch (status.error) {
      case ENOENT:
        status.condition = RootCondition::kMissing;
        break;
      case EACCES:
      case EPERM:
        status.condition = RootCondition::kUnreadable;
        break;
      case ENOTDIR:
        status.condition = RootCondition::kNotDirectory;
        break;
      default:
        status.condition = RootCondition::kError;
    }
    return status;
  }

  void CountError(int err, const std::string& path) {
    if (err == EACCES || err == EPERM) {
      ++out_->permission_errors;
      constexpr size_t kNamedPaths = 5;
      if (out_->permission_error_paths.size() < kNamedPaths) {
        out_->permission_error_paths.push_back(path);
      }
    } else if (err != ENOENT && err != ENOTDIR) {
      ++out_->other_errors;  // ENOENT: vanished; ENOTDIR: not a directory
    }
  }

  // True (and the result marked partial) once the stop flag is set.
  bool Stopped() {
    if (options_.stop == nullptr || !options_.stop->load(std::memory_order_relaxed)) return false;
    out_->stopped = true;
    return true;
  }

  // Counts one more directory of `owner`; false (counted as capped) when
  // the owner has had its max_dirs_per_owner this scan.
  bool TakeDir(Owner owner) {
    if (owner == kNoOwner || options_.max_dirs_per_owner <= 0) return true;
    int64_t& n = dirs_of_owner_[owner];
    if (n >= options_.max_dirs_per_owner) {
      ++out_->owner_dirs_capped[owner];
      return false;
    }
    ++n;
    return true;
  }

  // The uid of `run_dir`, the user who created the run, once per scan: a
  // run another user creates in a group-writable job directory is theirs,
  // not the job directory's owner's (their runs count against their caps).
  Owner RunOwner(const std::string& run_dir) {
    auto [it, fresh] = run_owners_.try_emplace(run_dir, kNoOwner);
    if (fresh) {
      struct stat st;
      if (stat(run_dir.c_str(), &st) == 0) it->second = st.st_uid;
    }
    return it->second;
  }

  // Opens `name` (relative to `parent_fd`) as a directory not walked yet;
  // null when it cannot be read (counted), is no directory, or was walked
  // already (a symlink loop or a second path to it). `uid` (when not null)
  // receives the directory's owner.
  // `path` is the full path, for naming it in errors.
  DIR* Enter(int parent_fd, const std::string& name, const std::string& path,
             Owner* uid = nullptr) {
    const int fd = openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      CountError(errno, path);
      return nullptr;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !visited_.insert({st.st_dev, st.st_ino}).second) {
      close(fd);
      return nullptr;
    }
    if (uid != nullptr) *uid = st.st_uid;
    DIR* d = fdopendir(fd);
    if (d == nullptr) {
      CountError(errno, path);
      close(fd);
    }
    return d;
  }

  // The entries of an open directory, sorted by name.
  std::vector<Entry> List(const OpenDir& dir) {
    std::vector<Entry> entries;
    while (dirent* e = readdir(dir.get())) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      bool is_link = e->d_type == DT_LNK;
      if (e->d_type == DT_UNKNOWN) {
        struct stat lst;
        is_link =
            fstatat(dir.fd(), name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode);
        is_dir = !is_link && fstatat(dir.fd(), name.c_str(), &lst, 0) == 0 && S_ISDIR(lst.st_mode);
      }
      if (is_link) {
        struct stat st;
        is_dir = fstatat(dir.fd(), name.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode);
      }
      entries.push_back({std::move(name), is_dir, is_link});
    }
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
    return entries;
  }

  // The trace files of a <ts> dir (no directories), sorted by name; nullopt
  // once more than `cap` are found: reading stops there, so a directory of
  // millions of names costs at most cap + 1 entries.
  std::optional<std::vector<Entry>> ListTraceFiles(const OpenDir& dir, int64_t cap) {
    std::vector<Entry> entries;
    while (dirent* e = readdir(dir.get())) {
      if (e->d_type == DT_DIR || !IsTraceFileName(e->d_name)) continue;
      bool is_link = e->d_type == DT_LNK;
      if (e->d_type == DT_UNKNOWN) {
        struct stat lst;
        if (fstatat(dir.fd(), e->d_name, &lst, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(lst.st_mode)) continue;
        is_link = S_ISLNK(lst.st_mode);
      }
      if (static_cast<int64_t>(entries.size()) >= cap) return std::nullopt;
      entries.push_back({e->d_name, false, is_link});
    }
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
    return entries;
  }

  // The cap of a directory that is one window (<ts>, capture-nsys-profile).
  int64_t WindowDirCap() const {
    return std::min(options_.max_files_per_dir, options_.max_files_per_window);
  }

  // True (and the directory reported) when `files` trace files exceed `cap`.
  bool OverCap(const std::string& dir, int64_t files, int64_t cap, Owner owner) {
    if (files <= cap) return false;
    out_->capped_dirs.push_back({dir, files, cap, true, owner});
    return true;
  }

  // The children of a root of jobs that hold the root's own run (labelled
  // with the root's name) rather than being jobs: where a run dir keeps its
  // traces (scanner.h, Labels).
  static bool IsRunDirOfRoot(const std::string& child) {
    return child == "tensorboard" || child == "plugins" || child == "traces" ||
           child == "profiler" || child == "profile" || child == kNsysCaptureDirName ||
           child == kRocprofDirName;
  }

  // `root_run_only`: `dir` is inside such a child of the root, entered only
  // because this shard owns the job named like the root: only the
  // directories where the root's run keeps its traces are entered, not a
  // whole job another shard owns that happens to bear such a name.
  static bool MayHoldRootRun(const std::string& base, const std::string& child) {
    if (base == "tensorboard") return child == "plugins";
    if (base == "plugins") return child == "profile";
    return false;
  }

  // `name` relative to `parent_fd` is the directory `dir`, and `parent_name`
  // the name of the directory holding it. `owner`: the owner of the
  // directory holding it (kNoOwner above the root's children).
  void Walk(int parent_fd, const std::string& name, const std::string& dir,
            const std::string& parent_name, int depth, Owner owner, bool root_run_only = false) {
    if (depth > options_.max_depth || Stopped()) return;
    Owner uid = kNoOwner;
    const OpenDir d(Enter(parent_fd, name, dir, &uid));
    if (d.get() == nullptr) return;
    // A child of the root starts its owner's share; what lies below is theirs.
    if (depth == 1) owner = uid;
    if (!TakeDir(owner)) return;
    const std::vector<Entry> entries = List(d);
    out_->dirs.push_back(dir);
    out_->dir_owners.push_back(owner);
    const std::string base = fs::path(dir).filename().string();
    if (base == "profile" && parent_name == "plugins") {
      ScanProfileDir(d.fd(), dir, entries, owner);
      return;
    }
    if (base == kNsysCaptureDirName) {
      ScanExportDir(d.fd(), dir, entries, IsNsysExportName);
      return;
    }
    if (base == kRocprofDirName) {
      ScanExportDir(d.fd(), dir, entries, IsRocprofOutputName);
      return;
    }
    bool kineto = std::any_of(entries.begin(), entries.end(),
                              [](const Entry& e) { return !e.is_dir && IsKinetoName(e.name); });
    if (kineto) ScanKinetoDir(d.fd(), dir, entries);
    // Trace-like files no layout reads: the Kineto files were read above.
    const int64_t stray = std::count_if(entries.begin(), entries.end(), [](const Entry& e) {
      return !e.is_dir && !IsKinetoName(e.name) && LooksLikeTrace(e.name);
    });
    if (stray > 0) {
      out_->ignored.push_back(
          {dir, ParseTimestampDirName(base) ? kIgnoredTsOutsideProfile : kIgnoredTraceName, stray,
           owner});
    }
    for (const Entry& e : entries) {
      if (!e.is_dir || e.name.front() == '.') continue;
      // A child of a root of jobs is a job directory (training_job = its
      // name); a child of a root of one job is one of its runs.
      bool child_root_run_only = root_run_only;
      if (depth == 0 && root_job_.empty() && !options_.shard.Owns(e.name)) {
        if (!root_owned_ || !IsRunDirOfRoot(e.name)) {
          ++out_->other_shard_jobs;
          continue;
        }
        child_root_run_only = true;
      }
      if (root_run_only && !MayHoldRootRun(base, e.name)) continue;
      if (e.is_link && !MayEnterLink(d.fd(), dir, e.name)) continue;
      Walk(d.fd(), e.name, dir + "/" + e.name, base, depth + 1, owner, child_root_run_only);
    }
  }

  // The <ts> dirs newest first (their names sort by time): an owner over
  // its directory cap loses its oldest windows, not its newest.
  void ScanProfileDir(int profile_fd, const std::string& dir, const std::vector<Entry>& entries,
                      Owner dir_owner) {
    const std::string run_dir = RunDirOfProfileDir(dir);
    RunLabels labels = LabelsForRunDir(root_, run_dir, root_job_);
    const Owner owner = RunOwner(run_dir);
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      const Entry& e = *it;
      if (!e.is_dir) continue;
      std::optional<int64_t> t = ParseTimestampDirName(e.name);
      if (!t) {
        // Kept and reported like a directory walked, so it is paid from its
        // owner's directory share: one owner's odd names cannot grow the
        // scan's (and the daemon's) list of ignored paths past that share.
        if (e.name.front() != '.' && TakeDir(dir_owner)) {
          out_->ignored.push_back({dir + "/" + e.name, kIgnoredNotTimestamp, 0, owner});
        }
        continue;
      }
      if (Stopped()) return;
      if (e.is_link && !MayEnterLink(profile_fd, dir, e.name)) continue;
      std::string ts_dir = dir + "/" + e.name;
      if (!TakeDir(dir_owner)) continue;
      const OpenDir ts(Enter(profile_fd, e.name, ts_dir));
      if (ts.get() == nullptr) continue;
      out_->dirs.push_back(ts_dir);  // watched, so its files going away is seen
      out_->dir_owners.push_back(dir_owner);
      const int64_t cap = WindowDirCap();
      const std::optional<std::vector<Entry>> files = ListTraceFiles(ts, cap);
      if (!files) {
        out_->capped_dirs.push_back({ts_dir, cap + 1, cap, false, owner});
        continue;
      }
      for (const Entry& f : *files) {
        if (FileObservation* obs = AddFile(ts.fd(), ts_dir, f, ts_dir, *t, labels, run_dir)) {
          obs->owner = owner;
        }
      }
    }
  }

  void ScanKinetoDir(int dir_fd, const std::string& dir, const std::vector<Entry>& entries) {
    const int64_t files = std::count_if(entries.begin(), entries.end(), [](const Entry& e) {
      return !e.is_dir && IsKinetoName(e.name);
    });
    const std::string run_dir = RunDirOfKinetoDir(dir);
    const Owner owner = RunOwner(run_dir);
    if (OverCap(dir, files, options_.max_files_per_dir, owner)) return;
    RunLabels labels = LabelsForRunDir(root_, run_dir, root_job_);
    for (const Entry& f : entries) {
      if (f.is_dir || !IsKinetoName(f.name)) continue;
      std::optional<KinetoCapture> capture = KinetoCaptureOf(f.name);
      FileObservation* obs = AddFile(dir_fd, dir, f, "", 0, labels, run_dir);
      if (obs == nullptr) continue;
      obs->owner = owner;
      if (capture) {
        // One profiling cycle per capture: its own grouping dir, named by the
        // capture time, so two cycles of one process never share a window
        // (processes of one cycle are chained within the skew).
        obs->group_time = capture->unix_ns / 1'000'000'000;
        obs->group_dir = dir + "/" + capture->id;
      } else {
        // Without a time in the name, the file's mtime stands in for it.
        obs->group_time = obs->mtime_ns / 1'000'000'000;
        obs->group_dir = dir + "/" + FormatTs(obs->group_time);
      }
    }
  }

  // Every export of the directory (capture-nsys-profile/*.sqlite,
  // rocprof/*.json[.gz]: names `is_export` accepts) is one window, dated by
  // the oldest export's mtime: a node's file landing later joins it, and an
  // export rewritten in place (nsys export --force-overwrite) changes and is
  // analysed again.
  void ScanExportDir(int dir_fd, const std::string& dir, const std::vector<Entry>& entries,
                     bool (*is_export)(std::string_view)) {
    const int64_t files = std::count_if(entries.begin(), entries.end(), [&](const Entry& e) {
      return !e.is_dir && is_export(e.name);
    });
    const std::string run_dir = RunDirOfNsysDir(dir);
    if (OverCap(dir, files, WindowDirCap(), RunOwner(run_dir))) return;
    RunLabels labels = LabelsForRunDir(root_, run_dir, root_job_);
    const size_t first = out_->files.size();
    for (const Entry& f : entries) {
      if (f.is_dir || !is_export(f.name)) continue;
      AddFile(dir_fd, dir, f, "", 0, labels, run_dir);
    }
    if (out_->files.size() == first) return;
    int64_t oldest = std::numeric_limits<int64_t>::max();
    for (size_t i = first; i < out_->files.size(); ++i) {
      oldest = std::min(oldest, out_->files[i].mtime_ns / 1'000'000'000);
    }
    const Owner owner = RunOwner(run_dir);
    for (size_t i = first; i < out_->files.size(); ++i) {
      out_->files[i].group_time = oldest;
      out_->files[i].group_dir = dir + "/" + FormatTs(oldest);
      out_->files[i].owner = owner;
    }
  }

  FileObservation* AddFile(int dir_fd, const std::string& dir, const Entry& entry,
                           const std::string& group_dir, int64_t group_time,
                           const RunLabels& labels, const std::string& run_dir) {
    const std::string& name = entry.name;
    if (!options_.shard.Owns(labels.training_job)) return nullptr;
    if (!options_.host_filter.empty() && !MatchesHost(name, options_.host_filter)) {
      ++out_->filtered_files;
      return nullptr;
    }
    std::string path = dir + "/" + name;
    // A link to a file outside the root is not read: the daemon reads only
    // what lies under its roots (a dangling link fails the stat below).
    if (entry.is_link && !options_.follow_symlinks && FileLeavesRoot(path)) {
      out_->outside_root_files.push_back({std::move(path), RunOwner(run_dir)});
      return nullptr;
    }
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, 0) != 0) {
      CountError(errno, path);
      return nullptr;
    }
    if (!S_ISREG(st.st_mode)) return nullptr;
    FileObservation obs;
    obs.path = std::move(path);
    obs.name = name;
    obs.dir = dir;
    obs.group_dir = group_dir;
    obs.group_time = group_time;
    obs.labels = labels;
    obs.run_dir = run_dir;
    obs.dev = st.st_dev;
    obs.ino = st.st_ino;
    obs.size = static_cast<uint64_t>(st.st_size);
    obs.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    out_->files.push_back(std::move(obs));
    return &out_->files.back();
  }

  const ScanOptions& options_;
  ScanResult* out_;
  std::string root_;
  std::string root_job_;                 // the job a root of one job is bound to, else ""
  std::string root_real_;                // the root with every symlink resolved
  bool root_owned_ = true;               // this shard owns the job named like the root
  std::vector<std::string> roots_real_;  // every root's real path (those that resolve)
  Visited visited_;
  std::map<Owner, int64_t> dirs_of_owner_;   // directories walked this scan
  std::map<std::string, Owner> run_owners_;  // RunOwner's answers this scan
};

}  // namespace

std::pair<std::string_view, std::string_view> SplitBinding(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || text[0] == '/' || text[0] == '.' ||
      text[0] == '~') {
    return {std::string_view(), text};
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

Result<WatchRoot> ParseWatchRoot(std::string_view text) {
  const auto [job, path] = SplitBinding(text);
  if (job.find('/') != std::string_view::npos || job.size() > kMaxJobNameBytes) {
    return MakeError(ErrorCode::kConfig,
                     "--watch '" + std::string(text) +
                         "': expected JOB=DIR with a job name of at most 256 bytes and no '/'");
  }
  if (path.empty()) {
    return MakeError(ErrorCode::kConfig, "--watch '" + std::string(text) + "': empty directory");
  }
  return WatchRoot{std::string(path), std::string(job)};
}

RunLabels LabelsForRunDir(const std::string& root_in, const std::string& run_dir_in,
                          const std::string& root_job) {
  auto normal = [](const std::string& p) {
    std::string s = fs::absolute(fs::path(p)).lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
  };
  const std::string root = normal(root_in);
  const std::vector<std::string> parts = PartsBelowRoot(root, normal(run_dir_in));
  RunLabels labels;
  size_t first_of_run = 0;
  if (!root_job.empty()) {
    labels.training_job = root_job;
  } else if (parts.empty()) {
    labels.training_job = fs::path(root).filename().string();
  } else {
    labels.training_job = parts[0];
    first_of_run = 1;
  }
  for (size_t i = first_of_run; i < parts.size(); ++i) {
    if (!labels.run.empty()) labels.run += "/";
    labels.run += parts[i];
  }
  if (labels.run.empty()) labels.run = kRunOfJobDir;
  return labels;
}

bool MatchesHost(const std::string& file_name, const std::string& host) {
  if (host.empty()) return true;
  if (IsKinetoTraceFileName(file_name)) {
    // The pid follows the host (<host>_<pid>.<ns>): compare the host the
    // labels use, so "node" does not claim node_12's files. A short name
    // still matches its FQDN's files.
    const std::string of_file = HostOfTraceFile(file_name);
    return of_file == host || (of_file.size() > host.size() && of_file.starts_with(host) &&
                               of_file[host.size()] == '.');
  }
  if (file_name.size() < host.size() || file_name.compare(0, host.size(), host) != 0) {
    return false;
  }
  // "node1" must not claim "node10.trace.json.gz".
  return file_name.size() == host.size() ||
         !std::isalnum(static_cast<unsigned char>(file_name[host.size()]));
}

std::string ShortHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  std::string name = buf;
  return name.substr(0, name.find('.'));
}

std::string_view RootConditionName(RootCondition c) {
  switch (c) {
    case RootCondition::kOk:
      return "ok";
    case RootCondition::kMissing:
      return "missing";
    case RootCondition::kUnreadable:
      return "unreadable";
    case RootCondition::kNotDirectory:
      return "not a directory";
    case RootCondition::kError:
      return "error";
  }
  return "error";
}

namespace {

// The root's name in a qualified label: its last component, or its whole
// normal path when another root has the same last component.
std::vector<std::string> RootQualifiers(const std::vector<std::string>& roots) {
  std::vector<std::string> normal, names;
  std::map<std::string, int> uses;
  for (const std::string& root : roots) {
    std::string n = fs::absolute(fs::path(root)).lexically_normal().string();
    while (n.size() > 1 && n.back() == '/') n.pop_back();
    std::string name = fs::path(n).filename().string();
    if (name.empty()) name = n;
    ++uses[name];
    normal.push_back(std::move(n));
    names.push_back(std::move(name));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (uses[names[i]] > 1) names[i] = normal[i];
  }
  return names;
}

// Jobs whose files were found under two or more roots: every copy's
// training_job becomes "<root qualifier>:<job>" (scanner.h, Clashes).
// `starts[i]`..`starts[i + 1]` are the files of root i.
void QualifyClashingJobs(const std::vector<std::string>& roots, const std::vector<size_t>& starts,
                         ScanResult& out) {
  std::map<std::string, std::set<size_t>> roots_of_job;
  for (size_t r = 0; r + 1 < starts.size(); ++r) {
    for (size_t i = starts[r]; i < starts[r + 1]; ++i) {
      roots_of_job[out.files[i].labels.training_job].insert(r);
    }
  }
  std::vector<std::string> qualifiers;
  for (const auto& [job, in_roots] : roots_of_job) {
    if (in_roots.size() < 2) continue;
    if (qualifiers.empty()) qualifiers = RootQualifiers(roots);
    JobClash clash{job, {}};
    for (size_t r : in_roots) clash.labels.push_back(qualifiers[r] + ":" + job);
    out.job_clashes.push_back(std::move(clash));
  }
  if (out.job_clashes.empty()) return;
  for (size_t r = 0; r + 1 < starts.size(); ++r) {
    for (size_t i = starts[r]; i < starts[r + 1]; ++i) {
      RunLabels& labels = out.files[i].labels;
      if (roots_of_job[labels.training_job].size() > 1) {
        labels.training_job = qualifiers[r] + ":" + labels.training_job;
      }
    }
  }
}

}  // namespace

ScanResult Scan(const ScanOptions& options) {
  ScanResult out;
  Walker walker(options, &out);
  std::vector<size_t> starts;
  for (const std::string& root : options.roots) {
    starts.push_back(out.files.size());
    walker.WalkRoot(root);
  }
  starts.push_back(out.files.size());
  QualifyClashingJobs(options.roots, starts, out);
  std::sort(out.files.begin(), out.files.end(),
            [](const FileObservation& a, const FileObservation& b) { return a.path < b.path; });
  std::sort(out.ignored.begin(), out.ignored.end(),
            [](const IgnoredDir& a, const IgnoredDir& b) { return a.path < b.path; });
  return out;
}

}  // namespace profwatch::watch
