// Window grouping: which trace files form one profiling window. Pure logic on
// a directory listing (no I/O), shared by `analyze` and the daemon.
//
// Each process names its own <ts> directory (1 s resolution), so one window is
// spread over adjacent <ts> dirs. Dirs are chained in time order while the gap
// to the previous dir is <= skew; a file name already present in the current
// window (same host, same .procN) starts a new window, since one process
// writes one file per window. A stale window further away in time is never
// merged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace profwatch::window {

// Parses a profile dir name "YYYY_MM_DD_HH_MM_SS" into seconds since the
// epoch (UTC; only differences matter). nullopt if the name is not of that form.
std::optional<int64_t> ParseTimestampDirName(std::string_view name);

// True for names the analysis reads: *.trace.json.gz, *.trace.json,
// *.pt.trace.json[.gz], *.json.gz, *.xplane.pb.
bool IsTraceFileName(std::string_view name);
// The host part of a trace file name ("h0.proc3.trace.json.gz" -> "h0").
std::string HostOfTraceFile(std::string_view name);
// The window-identity key of a file: its name without the format suffix, so
// h0.trace.json.gz and h0.xplane.pb of one window share it.
std::string ProcessKeyOfTraceFile(std::string_view name);

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
