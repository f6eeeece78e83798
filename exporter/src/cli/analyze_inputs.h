// Turns `analyze`/`compare` PATH arguments into windows: files as given, a
// <ts> dir as its trace files, a run/job dir as every window found below it
// (grouped with window::GroupWindows). Filesystem errors name the path.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace profwatch::cli {

struct InputWindow {
  std::string label;               // "job/run/<first ts dir>" or the path given
  std::vector<std::string> files;  // in window order
  std::vector<std::string> timestamp_dirs;
  // The run directory the window belongs to (serve's rule, watch/layout.h);
  // "" for plain file arguments. Its training log is looked up from it.
  std::string run_dir;
};

// `skew_seconds`: largest gap between adjacent <ts> dirs of one window.
// Plain file arguments form one window together (in argument order).
Result<std::vector<InputWindow>> ResolveInputs(const std::vector<std::string>& paths,
                                               int64_t skew_seconds);

}  // namespace profwatch::cli
