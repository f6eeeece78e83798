// inotify backend. One watch per directory; directories created (or moved in)
// below a watched one are watched at once, recursively, so a new job/run/<ts>
// tree created in one go is not missed between mkdir and the next rescan.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/log.h"
#include "watch/layout.h"
#include "watch/limits.h"
#include "watch/watcher.h"

namespace profwatch::watch {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kMask = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_MODIFY |
                           IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB | IN_ONLYDIR;

class InotifyWatcher final : public Watcher {
 public:
  InotifyWatcher(int fd, int wake_fd) : fd_(fd), wake_fd_(wake_fd) {}
  ~InotifyWatcher() override {
    close(fd_);
    close(wake_fd_);
  }

  void AddDirectories(const std::vector<std::string>& dirs,
                      const std::vector<Owner>& owners) override {
    if (owners.size() != dirs.size()) {
      for (const std::string& d : dirs) AddOne(d, kNoOwner);
      return;
    }
    std::map<Owner, int64_t> unwatched;
    // Directories other than <ts> dirs first: a new window appears as an
    // entry in its profile dir, and old <ts> dirs change rarely.
    for (const bool ts_pass : {false, true}) {
      for (size_t i = 0; i < dirs.size(); ++i) {
        const bool is_ts = ParseTimestampDirName(fs::path(dirs[i]).filename().string()).has_value();
        if (is_ts != ts_pass) continue;
        if (!AddOne(dirs[i], owners[i])) ++unwatched[owners[i]];
      }
    }
    unwatched_ = std::move(unwatched);
  }

  void SetOwnerBudget(int64_t max_watches) override { budget_ = max_watches; }

  std::map<Owner, int64_t> UnwatchedByOwner() const override { return unwatched_; }

  WatchHints Wait(std::chrono::milliseconds timeout) override {
    WatchHints hints;
    std::set<std::string> dirs, content_dirs;
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int rc = poll(fds, 2, static_cast<int>(timeout.count()));
    if (rc <= 0) return hints;
    if (fds[1].revents & POLLIN) {
      uint64_t v;
      if (read(wake_fd_, &v, sizeof v) < 0) {
        // Another reader consumed it; nothing to do.
      }
      hints.woken = true;
    }
    if (fds[0].revents & POLLIN) {
      Drain(&hints, &dirs, &content_dirs);
      // Writers produce bursts (create, many modifies, close): coalesce a
      // short burst into one hint set so the daemon rescans once. Not when
      // the caller has work waiting (a log catching up): a writer appending
      // all the while would hold each of its reads for the whole burst wait.
      pollfd more = {fd_, POLLIN, 0};
      for (int i = 0; timeout.count() > 0 && i < 5 && poll(&more, 1, 20) > 0; ++i) {
        Drain(&hints, &dirs, &content_dirs);
      }
    }
    hints.dirs.assign(dirs.begin(), dirs.end());
    for (const std::string& d : content_dirs) {
      if (dirs.count(d) == 0) hints.content_dirs.push_back(d);  // a rescan covers it
    }
    return hints;
  }

  void Wake() override {
    uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof one) < 0) {
      // The counter is saturated: a wake is already pending.
    }
  }

  const char* Name() const override { return "inotify"; }

 private:
  void Drain(WatchHints* hints, std::set<std::string>* dirs, std::set<std::string>* content_dirs) {
    alignas(inotify_event) char buf[64 * 1024];
    for (;;) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return;  // EAGAIN: drained
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        p += sizeof(inotify_event) + ev->len;
        if (ev->mask & IN_Q_OVERFLOW) {
          hints->overflow = true;
          continue;
        }
        auto it = wd_dir_.find(ev->wd);
        if (it == wd_dir_.end()) continue;
        const std::string dir = it->second.dir;
        const Owner owner = it->second.owner;
        if (ev->mask & IN_IGNORED) {
          watched_.erase(dir);
          if (owner != kNoOwner && --watches_of_[owner] <= 0) watches_of_.erase(owner);
          wd_dir_.erase(it);
          dirs->insert(dir);
          continue;
        }
        // A write to a file that cannot be a trace leaves the scan as it was.
        const bool content_only = (ev->mask & (IN_MODIFY | IN_CLOSE_WRITE)) != 0 &&
                                  (ev->mask & IN_ISDIR) == 0 && ev->len > 0 &&
                                  !IsTraceFileName(ev->name);
        if (content_only) {
          content_dirs->insert(dir);
          continue;
        }
        dirs->insert(dir);
        if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && ev->len > 0) {
          std::set<std::pair<dev_t, ino_t>> visited;
          AddTree((fs::path(dir) / ev->name).string(), 0, owner, &visited, dirs);
        }
      }
    }
  }

  // Watches `dir` and everything below it (visited dev+inode stops symlink
  // loops) within the owner's budget: `parent_owner` is the owner of the
  // directory it was created in (none for a root: then its own uid). A tree
  // past the budget is left to the rescan.
  void AddTree(const std::string& dir, int depth, Owner parent_owner,
               std::set<std::pair<dev_t, ino_t>>* visited, std::set<std::string>* dirs) {
    struct stat st;
    if (depth > kMaxNewDirDepth || stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
    if (!visited->insert({st.st_dev, st.st_ino}).second) return;
    const Owner owner = parent_owner == kNoOwner ? st.st_uid : parent_owner;
    dirs->insert(dir);
    if (!AddOne(dir, owner)) return;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      std::error_code dec;
      if (it->is_directory(dec)) AddTree(it->path().string(), depth + 1, owner, visited, dirs);
    }
  }

  // True when `dir` is watched (already, or now); false when the owner's
  // budget is spent or the kernel refused.
  bool AddOne(const std::string& dir, Owner owner) {
    if (watched_.count(dir) != 0) return true;
    if (owner != kNoOwner && budget_ > 0) {
      auto n = watches_of_.find(owner);
      if (n != watches_of_.end() && n->second >= budget_) return false;
    }
    int wd = inotify_add_watch(fd_, dir.c_str(), kMask);
    if (wd < 0) {
      if (!warned_limit_ && errno == ENOSPC) {
        warned_limit_ = true;
        LogWarn("inotify watch limit reached; relying on polling for the rest",
                {{"stage", "watch"}, {"path", dir}, {"hint", "raise fs.inotify.max_user_watches"}});
      }
      return false;
    }
    if (wd_dir_.count(wd) == 0) {
      // A second path to a watched directory returns its descriptor again.
      if (owner != kNoOwner) ++watches_of_[owner];
      wd_dir_[wd] = Watched{dir, owner};
    }
    watched_.insert(dir);
    return true;
  }

  struct Watched {
    std::string dir;
    Owner owner = kNoOwner;
  };

  int fd_;
  int wake_fd_;
  std::set<std::string> watched_;
  std::unordered_map<int, Watched> wd_dir_;
  std::map<Owner, int64_t> watches_of_;  // watches held per owner
  std::map<Owner, int64_t> unwatched_;   // AddDirectories' last answer
  int64_t budget_ = caps::kWatchesPerOwner.value;
  bool warned_limit_ = false;
};

}  // namespace

Result<std::unique_ptr<Watcher>> MakeInotifyWatcher() {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    return MakeError(ErrorCode::kUnsupported, std::string("inotify_init1: ") + strerror(errno));
  }
  int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    close(fd);
    return MakeError(ErrorCode::kUnsupported, std::string("eventfd: ") + strerror(errno));
  }
  return std::unique_ptr<Watcher>(std::make_unique<InotifyWatcher>(fd, wake));
}

}  // namespace profwatch::watch
