// Scanner: walks the watched roots and reports every trace file it finds with
// its identity (dev+inode), size and mtime, plus the labels of the run it
// belongs to. Watch events are only hints; the scanner is the truth.
//
// Discovery:
//  - any `plugins/profile/<ts>/` directory below a root (MaxText puts it at
//    `<job>/<run>/tensorboard/plugins/profile/<ts>/`); a root may itself be a
//    profile dir or lie inside a run;
//  - any directory holding Kineto `*.pt.trace.json[.gz]` files;
//  - any `capture-nsys-profile/` directory of Nsight Systems `*.sqlite`
//    exports (the run dir is its parent; all its exports are one window,
//    dated by the oldest export's mtime).
//
// Labels (`training_job`, `run`). The run directory is the profiler's logdir
// (the parent of `plugins/`), or the parent of that logdir when it is named
// `tensorboard`; for Kineto the directory of the files (or its parent when it
// is named tensorboard, traces, profiler or profile). Then, with `rel` = the
// run directory relative to the root it was found under, and nothing named
// after a directory above the root:
//  - a root of jobs (`--watch DIR`, ScanOptions::roots alone):
//      training_job = rel[0], run = the remaining components joined by '/',
//      or kRunOfJobDir when rel has one component (traces directly in a job
//      dir); rel empty or outside the root (traces at the root, or a root
//      inside a run dir): training_job = the root's own name, run =
//      kRunOfJobDir;
//  - the root of one job (`--watch JOB=DIR`, ScanOptions::root_jobs):
//      training_job = JOB, run = rel joined by '/', or kRunOfJobDir when
//      rel is empty or outside the root.
//
// Sharding (ScanOptions::shard): see there.
//
// Clashes: a job name found (with trace files) under two or more roots
// gets, in every one of them, training_job = "<root>:<job>", <root> being
// the root's last path component, or its whole normal path when another
// root has the same last component (ScanResult::job_clashes). Each copy is
// then a run of its own; a job found under one root keeps its plain name.
//
// Links (identity from the real path): a directory symlink anywhere below a
// root (job, run, <ts> or deeper) that resolves inside a watched root is
// never followed: it is reported in ScanResult::ignored (kIgnoredDirLink,
// charged to the link's owner), and the real directory is walked in its own
// place under its own name, so a link neither gives a run a second label
// nor takes its first. A directory link resolving outside every root is
// skipped (ScanResult::symlinks_skipped) unless ScanOptions::follow_symlinks.
// A root given as a symlink is resolved once, as a root. Trace file
// symlinks whose target lies outside the root are skipped unless
// follow_symlinks (a file link inside the root is read).
//
// Robustness: directories are identified by dev+inode so symlink loops end;
// unreadable directories are counted and skipped; hidden entries ('.x') are
// not walked; depth is bounded.
//
// Bounds (ScanOptions::max_files_per_dir, max_files_per_window): a directory
// holding more trace files than its cap is reported in ScanResult::capped_dirs
// and none of its files is stat'ed or reported. A <ts> directory is read only
// up to the first entry past the cap, so a directory of millions of names
// costs one bounded read per scan and no memory beyond the cap.
//
// Owners (watch/owner.h): each file carries the uid of its run directory
// (who created the run: in a group-writable job directory, another user's
// run is that user's); each walked directory the uid of the root's child it
// lies under (the root itself has none). At most ScanOptions::max_dirs_per_owner directories of one
// owner are walked per scan; a profile dir's <ts> dirs are walked newest first, so what the cap
// leaves out is the owner's oldest windows (ScanResult::owner_dirs_capped).
//
// Ignored entries (ScanResult::ignored): what looks like profiler output
// but is no layout above, and a directory link refused (Links above), is
// reported with a reason, one entry per directory, so the daemon can count
// and log it (reasons below).
//
// Stopping: ScanOptions::stop set ends the walk at the next directory
// (ScanResult::stopped; the result is then partial and must not be taken
// for what exists).
//
// Thread-safety: Scan() is a pure function of the filesystem and its options.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/caps.h"
#include "core/result.h"
#include "watch/limits.h"
#include "watch/owner.h"
#include "watch/shard.h"

namespace profwatch::watch {

// The run label of traces that lie in a job directory itself, not in a run
// directory below it (and of traces at a root).
inline constexpr std::string_view kRunOfJobDir = "-";

struct RunLabels {
  std::string training_job;
  std::string run;
};

struct FileObservation {
  std::string path;  // full path of the trace file
  std::string name;  // file name
  std::string dir;   // real directory holding the file (<ts> or Kineto dir)
  // Directory identity used for window grouping: the <ts> dir itself; for
  // Kineto one pseudo dir per profiling cycle, "<dir>/<capture time as in the
  // file name>" (watch::KinetoCaptureOf), or "<dir>/<YYYY_MM_DD_HH_MM_SS>" of
  // the file's mtime when the name carries no time.
  std::string group_dir;
  int64_t group_time = 0;  // seconds, from the <ts> name (or Kineto capture time)
  RunLabels labels;
  std::string run_dir;  // the run directory the labels were derived from
  // The uid of the run directory (kNoOwner when it cannot be stat'ed).
  Owner owner = kNoOwner;
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

struct ScanOptions {
  // Roots of jobs: each child directory is a job (its name the training_job).
  std::vector<std::string> roots;
  // Roots that are one job's directory (`--watch JOB=DIR`), by path as given
  // in `roots`: every run below such a root is labelled training_job = JOB.
  std::map<std::string, std::string> root_jobs = {};
  // Only files whose name starts with this host name (followed by a
  // non-alphanumeric character or the end) are reported; Kineto files
  // (<host>_<pid>.<ns>.pt.trace.json) whose HostOfTraceFile is this host or
  // an FQDN of it. Empty: all files.
  std::string host_filter;
  int max_depth = 16;
  // Directory symlinks whose target lies outside every root are skipped
  // (counted) unless this is set; a symlink at /usr must not make every
  // poll walk /usr. Loops end either way (dev+inode). A link into a root is
  // never followed (Links above), with or without this. Trace
  // file symlinks whose target lies outside the root are skipped likewise
  // (ScanResult::outside_root_files).
  bool follow_symlinks = false;
  // serve --shard: the jobs of other shards are skipped. A directory right
  // below a root of jobs is a job directory (its name the training_job
  // label); one another shard owns is listed but never entered. A root of
  // one job another shard owns is not entered. Every file whose training_job
  // another shard owns is dropped, whatever the layout. When this shard owns
  // the job named like a root of jobs itself (its runs at the root), the
  // root's own profile and trace directories are entered too.
  Shard shard;
  // Trace files one directory may hold: a directory with more is not
  // analysed (ScanResult::capped_dirs). A <ts> or capture-nsys-profile
  // directory is one window, so the smaller of this and
  // max_files_per_window applies to it; a Kineto directory holds every
  // profiling cycle of its processes.
  int64_t max_files_per_dir = caps::kFilesPerDir.value;
  int64_t max_files_per_window = caps::kFilesPerWindow.value;
  // Directories of one owner walked per scan (see Owners above); 0: no cap.
  int64_t max_dirs_per_owner = caps::kDirsPerOwner.value;
  // Set by the owner to end the walk early (daemon shutdown); may be null.
  const std::atomic<bool>* stop = nullptr;
};

// What a watched root is at scan time. Anything but kOk means no file under
// it can be found until it is fixed (the daemon warns and exports it).
enum class RootCondition { kOk, kMissing, kUnreadable, kNotDirectory, kError };
std::string_view RootConditionName(RootCondition c);

struct RootStatus {
  std::string path;  // as configured
  RootCondition condition = RootCondition::kOk;
  int error = 0;  // errno of the failed open, 0 when kOk
};

// A directory with more trace files than its cap: none of them is reported.
struct CappedDir {
  std::string path;
  // Trace files counted; for a <ts> dir counting stops at cap + 1.
  int64_t files = 0;
  int64_t cap = 0;
  bool counted_all = true;  // false: `files` is a lower bound
  Owner owner = kNoOwner;   // of the run it would be, else of its directory
};

// Why a directory's trace-like files are not analysed (the reason label of
// profwatch_scan_refused_total).
// A <ts>-named directory holding trace files outside `plugins/profile/`
// (JAX's `<run>/tensorboard/<ts>/` without `plugins/profile`).
inline constexpr std::string_view kIgnoredTsOutsideProfile = "ts_outside_profile";
// A directory in `plugins/profile/` whose name is no <ts>
// (YYYY_MM_DD_HH_MM_SS), e.g. `run-2026-11-28`.
inline constexpr std::string_view kIgnoredNotTimestamp = "not_timestamp";
// Files named like traces (*.trace.json[.gz], *.json.gz, *.xplane.pb,
// *.sqlite, *trace*.json) in a directory of no layout, e.g. Kineto files not
// named *.pt.trace.json[.gz], or an nsys export outside capture-nsys-profile.
inline constexpr std::string_view kIgnoredTraceName = "unknown_trace_name";
// A directory symlink resolving inside a watched root: not followed (see
// Links above).
inline constexpr std::string_view kIgnoredDirLink = "symlink";
// ScanOptions::host_filter matched none of the trace files found (the
// daemon's reason; the scanner counts them in filtered_files).
inline constexpr std::string_view kIgnoredHostFilter = "host_filter";

struct IgnoredDir {
  std::string path;
  std::string_view reason;  // one of the kIgnored* above
  int64_t files = 0;        // trace-like files in it (0: not read)
  Owner owner = kNoOwner;   // of the directory's job (or run) directory
};

// A job name found under several roots (see Clashes above).
struct JobClash {
  std::string job;                  // the directory name
  std::vector<std::string> labels;  // the qualified training_job of each copy, by root order
  bool operator==(const JobClash&) const = default;
};

// A trace file symlink leading out of its root (not read).
struct OutsideLink {
  std::string path;
  Owner owner = kNoOwner;  // of the run it lies in
  bool operator==(const OutsideLink&) const = default;
};

struct ScanResult {
  std::vector<RootStatus> roots;       // one per ScanOptions::roots, same order
  std::vector<FileObservation> files;  // sorted by path
  std::vector<std::string> dirs;       // every directory walked (for watches)
  std::vector<Owner> dir_owners;       // the owner of each of `dirs`, same order
  int64_t permission_errors = 0;       // directories or files we may not read
  // The first few of those, so a warning can name them.
  std::vector<std::string> permission_error_paths;
  int64_t other_errors = 0;            // vanished mid-scan, I/O errors
  int64_t filtered_files = 0;          // trace files skipped by the host filter
  int64_t symlinks_skipped = 0;        // directory links leading out of every root
  std::vector<JobClash> job_clashes;   // job names under several roots, by name
  int64_t other_shard_jobs = 0;        // job directories owned by another shard
  std::vector<CappedDir> capped_dirs;  // over their file cap, not analysed
  // Trace file symlinks leading out of their root, not reported in `files`.
  std::vector<OutsideLink> outside_root_files;
  // Owners over max_dirs_per_owner: the directories of theirs not walked
  // (a lower bound: a directory not walked is not counted into).
  std::map<Owner, int64_t> owner_dirs_capped;
  // Directories whose trace-like files no layout reads, and directory links
  // into a root (kIgnoredDirLink), sorted by path.
  std::vector<IgnoredDir> ignored;
  // ScanOptions::stop ended the walk: the result is partial.
  bool stopped = false;
};

ScanResult Scan(const ScanOptions& options);

// A `--watch` value: `DIR` (a root of jobs) or `JOB=DIR` (a root of one job,
// bound to JOB; SplitBinding: write ./DIR for a relative directory whose
// name holds '='); JOB holds no '/' and at most kMaxJobNameBytes bytes.
// Text written NAME=PATH (a `--watch` or `--log` binding): {NAME, PATH} when
// its first '=' is not its first character and it starts with neither '/',
// '.' nor '~'; else {"", text} (a path, '=' and all).
std::pair<std::string_view, std::string_view> SplitBinding(std::string_view text);

struct WatchRoot {
  std::string path;
  std::string job;  // empty: a root of jobs
};
Result<WatchRoot> ParseWatchRoot(std::string_view text);

// The labelling rule above, exposed for tests and documentation: `root_job`
// empty for a root of jobs, else the job a root of one job is bound to.
RunLabels LabelsForRunDir(const std::string& root, const std::string& run_dir,
                          const std::string& root_job = "");

// True when `file_name` belongs to `host` (see ScanOptions::host_filter).
bool MatchesHost(const std::string& file_name, const std::string& host);

// The short host name (gethostname up to the first dot), for --host-filter auto.
std::string ShortHostName();

}  // namespace profwatch::watch
