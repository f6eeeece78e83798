// Turns `analyze`/`compare` PATH arguments into windows: files as given, a
// <ts> dir as its trace files, and a jobs root, job dir, run dir or any dir
// inside a run as every window serve finds below it (watch::Scan's discovery:
// plugins/profile <ts> dirs, Kineto dirs, capture-nsys-profile exports; then
// window::GroupWindows, one window per profiling cycle). Filesystem errors
// name the path.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace profwatch::cli {

struct InputWindow {
  std::string label;               // "job/run/<window id>" or the path given
  std::vector<std::string> files;  // in window order
  std::vector<std::string> timestamp_dirs;
  // The run directory the window belongs to (serve's rule, watch/layout.h);
  // "" for plain file arguments. Its training log is looked up from it.
  std::string run_dir;
  // When the window was captured: its newest <ts> dir's (or Kineto
  // capture's) time, seconds since the epoch as the name gives it; 0 when
  // the name carries none (plain trace files).
  int64_t capture_time = 0;
};

// `skew_seconds`: largest gap between adjacent <ts> dirs (or Kineto captures
// of different processes) of one window. Plain file arguments form one window
// together (in argument order), except that Kineto files of one process with
// different capture times are one window per capture, oldest first.
// Errors: kNotFound for a path that does not exist or holds nothing to
// analyse (the message says which); kPermission for an unreadable directory;
// kUnsupported for a path that is neither file nor directory.
Result<std::vector<InputWindow>> ResolveInputs(const std::vector<std::string>& paths,
                                               int64_t skew_seconds);

// `--window latest`: of each run's windows (same run_dir; plain file
// arguments count as one run), the one captured last (capture_time; on a tie
// the later in `windows`), as serve exports one window per run. Runs keep
// the order of their first window in `windows`.
std::vector<InputWindow> LatestPerRun(std::vector<InputWindow> windows);

// A variant of `compare`: the window of `windows` captured last (on a tie
// the later one). `windows` must not be empty.
InputWindow NewestWindow(std::vector<InputWindow> windows);

}  // namespace profwatch::cli
