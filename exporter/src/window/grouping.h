// Window grouping: which trace files form one profiling window. Pure logic on
// a directory listing (no I/O), shared by `analyze` and the daemon.
//
// Each process names its own <ts> directory (1 s resolution), so one window is
// spread over adjacent <ts> dirs. Dirs are chained in time order while the gap
// to the previous dir is <= skew; a file name already present in the current
// window (same host, same .procN) starts a new window, since one process
// writes one file per window. A stale window further away in time is never
// merged. Kineto files come as one pseudo dir per capture (watch/scanner.h),
// so the processes of one profiling cycle chain within the skew and a
// process's next cycle starts a new window. Dirs of one second are ordered by
// path (capture ids of one length sort as numbers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace profwatch::window {

// The names of <ts> dirs and trace files: watch/layout.h.

struct TimestampDir {
  std::string path;                // full path of the <ts> directory
  int64_t time = 0;                // parsed from the name
  std::vector<std::string> files;  // trace file names inside (not paths)
};

struct Window {
  std::vector<std::string> timestamp_dirs;  // full paths, in time order
  std::vector<std::string> files;           // full paths, dir order then name order
  int64_t first_time = 0;                   // time of the first dir
  int64_t last_time = 0;                    // time of the last dir
  // A stable id for labels and state: the first dir's name.
  std::string id;
};

// Groups `dirs` (any order) into windows, oldest first. `skew_seconds` is the
// largest gap between consecutive dirs of one window.
std::vector<Window> GroupWindows(std::vector<TimestampDir> dirs, int64_t skew_seconds);

// Filesystem helpers: lists <ts> dirs under `<run>/.../plugins/profile/`.
// `profile_dir` is a plugins/profile directory. Unreadable entries are skipped.
Result<std::vector<TimestampDir>> ListTimestampDirs(const std::string& profile_dir);

}  // namespace profwatch::window
