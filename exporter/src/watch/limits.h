// The watch stage's fixed bounds, in one place (issue 62). The caps a user
// sets with a flag (files per directory and window, directories and
// inotify watches per owner) are core/caps.h's table.
//
// Thread-safety: constants.
#pragma once

#include <cstddef>

namespace profwatch::watch {

// The longest job name of a --watch root (ParseWatchRoot refuses longer).
inline constexpr size_t kMaxJobNameBytes = 256;
// Deepest directory level added below a newly created directory
// (InotifyWatcher).
inline constexpr int kMaxNewDirDepth = 32;

}  // namespace profwatch::watch
