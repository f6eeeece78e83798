// Polling backend: no hints at all; the daemon's timed rescan finds everything.
#include <condition_variable>
#include <mutex>

#include "watch/watcher.h"

namespace profwatch::watch {
namespace {

class PollWatcher final : public Watcher {
 public:
  void AddDirectories(const std::vector<std::string>&, const std::vector<Owner>&) override {}
  void SetOwnerBudget(int64_t) override {}
  std::map<Owner, int64_t> UnwatchedByOwner() const override { return {}; }
  WatchHints Wait(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return woken_; });
    WatchHints hints;
    hints.woken = woken_;
    woken_ = false;
    return hints;
  }
  void Wake() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }
  const char* Name() const override { return "poll"; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
};

}  // namespace

std::unique_ptr<Watcher> MakePollWatcher() { return std::make_unique<PollWatcher>(); }

}  // namespace profwatch::watch
