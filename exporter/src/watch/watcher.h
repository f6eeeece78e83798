// Change notification backends for the watched roots. Events are only hints
// that something below a directory changed: the daemon answers them with a
// rescan (watch/scanner.h), and a timed full rescan runs regardless, because
// inotify does not see writes made by other nodes on NFS/Lustre/GPFS.
//
// Two backends picked at startup: inotify (Linux, recursive watches added for
// every directory the scanner reports and for directories created later) and
// pure polling (no hints; the timed rescan does everything).
//
// Watches are a per-uid kernel resource (fs.inotify.max_user_watches, shared
// with everything else the daemon's user runs), so each owner (watch/owner.h)
// gets at most a budget of them (SetOwnerBudget); an owner's directories
// beyond it are found by the timed rescan only. A directory created below a
// watched one belongs to that one's owner; below a root (no owner), to its
// own uid. Directories that are not <ts> dirs are watched first: a new
// window shows up as an entry in its profile dir.
//
// Thread-safety: Wait() and AddDirectories() are called from one thread (the
// scan thread); Wake() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/caps.h"
#include "core/result.h"
#include "watch/owner.h"

namespace profwatch::watch {

struct WatchHints {
  // Directories whose entries changed (created, moved, deleted, attributes)
  // or whose trace files were written: the daemon rescans.
  std::vector<std::string> dirs;
  // Directories where only files that cannot be traces were written (a
  // training log or a TensorBoard event file growing). The scan cannot change
  // (it reports trace files only), so these re-read the training logs and
  // never rescan: with many busy jobs, appends would otherwise rescan every
  // tree four times a second.
  std::vector<std::string> content_dirs;
  // The kernel dropped events (IN_Q_OVERFLOW): only a full rescan is safe.
  bool overflow = false;
  // Wake() was called.
  bool woken = false;
  bool empty() const { return dirs.empty() && content_dirs.empty() && !overflow; }
};

class Watcher {
 public:
  virtual ~Watcher() = default;
  // Starts watching each directory (not recursively: the scanner reports every
  // directory it walks). Already watched directories are skipped cheaply.
  // Failures (watch limit, permissions) are logged once and counted; polling
  // still covers those directories. `owners` (empty, or one per dir): whose
  // budget each watch counts against; none given: no budget (a training
  // log's directory).
  virtual void AddDirectories(const std::vector<std::string>& dirs,
                              const std::vector<Owner>& owners = {}) = 0;
  // Watches one owner may hold; 0: no budget.
  virtual void SetOwnerBudget(int64_t max_watches) = 0;
  // Per owner over the budget: directories of the last AddDirectories call
  // with owners that are not watched for it (polled only).
  virtual std::map<Owner, int64_t> UnwatchedByOwner() const = 0;
  // Blocks until a hint arrives, Wake() is called or `timeout` passes. A zero
  // timeout (the caller has work waiting) returns what is queued at once,
  // without waiting for the rest of a burst of events.
  virtual WatchHints Wait(std::chrono::milliseconds timeout) = 0;
  // Interrupts a Wait() in progress (shutdown, or work to do).
  virtual void Wake() = 0;
  virtual const char* Name() const = 0;
};

// Polling only: Wait() just waits for the timeout or Wake().
std::unique_ptr<Watcher> MakePollWatcher();

// inotify backend; an error when inotify is unavailable (the caller falls back
// to polling).
Result<std::unique_ptr<Watcher>> MakeInotifyWatcher();

}  // namespace profwatch::watch
