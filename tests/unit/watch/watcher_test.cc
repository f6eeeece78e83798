#include "watch/watcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "testing/test_util.h"
#include "watch/scanner.h"

namespace profwatch::watch {
namespace {

using namespace std::chrono_literals;
using profwatch::testing::TempDir;
using profwatch::testing::WriteFile;

// Waits (bounded) for a hint naming `dir`.
bool WaitForHint(Watcher& w, const std::string& dir) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    WatchHints h = w.Wait(200ms);
    for (const auto& d : h.dirs) {
      if (d == dir) return true;
    }
  }
  return false;
}

TEST(InotifyWatcherTest, HintsNameTheChangedDirectory) {
  auto w = MakeInotifyWatcher();
  if (!w) GTEST_SKIP() << w.error().ToString();
  TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("a"));
  (*w)->AddDirectories({tmp.path().string(), tmp.Sub("a")});
  WriteFile(tmp.Sub("a/x.trace.json.gz"), "data");
  EXPECT_TRUE(WaitForHint(**w, tmp.Sub("a")));
}

TEST(InotifyWatcherTest, WatchesDirectoriesCreatedLaterAtAnyDepth) {
  auto w = MakeInotifyWatcher();
  if (!w) GTEST_SKIP() << w.error().ToString();
  TempDir tmp;
  (*w)->AddDirectories({tmp.path().string()});
  // A whole tree appears at once (mkdir -p), then a file deep inside.
  std::filesystem::create_directories(tmp.Sub("job/run/tensorboard/plugins/profile"));
  EXPECT_TRUE(WaitForHint(**w, tmp.path().string()));
  const std::string ts = tmp.Sub("job/run/tensorboard/plugins/profile/2024_03_01_12_00_00");
  std::filesystem::create_directories(ts);
  EXPECT_TRUE(WaitForHint(**w, tmp.Sub("job/run/tensorboard/plugins/profile")));
  WriteFile(ts + "/h0.trace.json.gz", "x");
  EXPECT_TRUE(WaitForHint(**w, ts));
}

// Hints seen within a bounded wait that ends once `done` holds.
WatchHints CollectUntil(Watcher& w, const std::function<bool(const WatchHints&)>& done) {
  WatchHints all;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline && !done(all)) {
    WatchHints h = w.Wait(200ms);
    all.dirs.insert(all.dirs.end(), h.dirs.begin(), h.dirs.end());
    all.content_dirs.insert(all.content_dirs.end(), h.content_dirs.begin(), h.content_dirs.end());
  }
  return all;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Each owner holds at most its watch budget: directories past it are not
// watched (named per owner, left to the rescan), non-<ts> dirs go first, and
// a tree created later below an owner's directory counts against that
// owner; another owner's budget is untouched.
TEST(InotifyWatcherTest, EachOwnerHoldsAtMostItsWatchBudget) {
  auto w = MakeInotifyWatcher();
  if (!w) GTEST_SKIP() << w.error().ToString();
  TempDir tmp;
  const std::string a = tmp.Sub("a"), profile = tmp.Sub("a/profile"), b = tmp.Sub("b");
  const std::string ts1 = profile + "/2024_03_01_12_00_00", ts2 = profile + "/2024_03_01_12_10_00";
  for (const std::string& d : {ts1, ts2, b}) std::filesystem::create_directories(d);
  (*w)->SetOwnerBudget(2);
  (*w)->AddDirectories({tmp.path().string(), ts1, ts2, a, profile, b}, {kNoOwner, 7, 7, 7, 7, 8});
  // Owner 7: a and profile watched (not <ts> dirs), both <ts> dirs not.
  EXPECT_EQ((*w)->UnwatchedByOwner(), (std::map<Owner, int64_t>{{7, 2}}));
  WriteFile(profile + "/new.txt", "x");
  EXPECT_TRUE(WaitForHint(**w, profile));
  WriteFile(b + "/x.trace.json.gz", "x");
  EXPECT_TRUE(WaitForHint(**w, b));
  // A tree created below owner 7's watched dir is 7's: over its budget,
  // hinted (the rescan finds it) but not watched.
  std::filesystem::create_directories(a + "/late/deeper");
  EXPECT_TRUE(WaitForHint(**w, a));
  // Events come in order: a write in b after one in the unwatched dir ends
  // the wait, and the unwatched dir's was never reported.
  WriteFile(a + "/late/deeper/y.trace.json.gz", "x");
  WriteFile(b + "/z.trace.json.gz", "x");
  const WatchHints h =
      CollectUntil(**w, [&](const WatchHints& all) { return Contains(all.dirs, b); });
  EXPECT_TRUE(Contains(h.dirs, b));
  EXPECT_FALSE(Contains(h.dirs, a + "/late/deeper"));
  // Without a budget everything is watched.
  (*w)->SetOwnerBudget(0);
  (*w)->AddDirectories({ts1, ts2}, {7, 7});
  EXPECT_TRUE((*w)->UnwatchedByOwner().empty());
}

TEST(InotifyWatcherTest, WritesToFilesThatCannotBeTracesAreContentOnlyHints) {
  auto w = MakeInotifyWatcher();
  if (!w) GTEST_SKIP() << w.error().ToString();
  TempDir tmp;
  const std::string run = tmp.Sub("job/run");
  std::filesystem::create_directories(run);
  WriteFile(run + "/events.out.tfevents.1700000000.host", "");
  WriteFile(run + "/train.log", "");
  WriteFile(run + "/h0.trace.json.gz", "");
  (*w)->AddDirectories({run});

  // A growing TensorBoard event file and training log: content only.
  std::ofstream(run + "/events.out.tfevents.1700000000.host", std::ios::app) << "record";
  std::ofstream(run + "/train.log", std::ios::app) << "completed step: 1\n";
  WatchHints h =
      CollectUntil(**w, [&](const WatchHints& a) { return Contains(a.content_dirs, run); });
  EXPECT_TRUE(Contains(h.content_dirs, run));
  EXPECT_FALSE(Contains(h.dirs, run)) << "an append must not ask for a rescan";

  // A trace file being written is a rescan hint (its size and mtime matter).
  std::ofstream(run + "/h0.trace.json.gz", std::ios::app) << "more";
  h = CollectUntil(**w, [&](const WatchHints& a) { return Contains(a.dirs, run); });
  EXPECT_TRUE(Contains(h.dirs, run));
  EXPECT_FALSE(Contains(h.content_dirs, run)) << "the rescan covers the directory";

  // So is a new file of any name (an entry changed).
  WriteFile(run + "/notes.txt", "x");
  h = CollectUntil(**w, [&](const WatchHints& a) { return Contains(a.dirs, run); });
  EXPECT_TRUE(Contains(h.dirs, run));
}

// The daemon passes a zero timeout while a log is catching up: what the
// kernel has queued (inotify queues an event before write() returns) comes
// back from that one call, and nothing blocks.
TEST(InotifyWatcherTest, ZeroTimeoutReturnsWhatIsQueued) {
  auto w = MakeInotifyWatcher();
  if (!w) GTEST_SKIP() << w.error().ToString();
  TempDir tmp;
  const std::string run = tmp.Sub("run");
  std::filesystem::create_directories(run);
  WriteFile(run + "/train.log", "");
  (*w)->AddDirectories({run});
  EXPECT_TRUE((*w)->Wait(0ms).empty());
  std::ofstream(run + "/train.log", std::ios::app) << "completed step: 1\n";
  WatchHints h = (*w)->Wait(0ms);
  EXPECT_TRUE(Contains(h.content_dirs, run));
  EXPECT_TRUE(h.dirs.empty());
  EXPECT_TRUE((*w)->Wait(0ms).empty()) << "the queue was drained";
}

TEST(InotifyWatcherTest, WakeInterruptsWait) {
  auto w = MakeInotifyWatcher();
  if (!w) GTEST_SKIP() << w.error().ToString();
  std::thread t([&] { (*w)->Wake(); });
  auto start = std::chrono::steady_clock::now();
  WatchHints h = (*w)->Wait(10s);
  t.join();
  EXPECT_TRUE(h.woken);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(PollWatcherTest, WaitTimesOutWithoutHintsAndWakes) {
  auto w = MakePollWatcher();
  WatchHints h = w->Wait(10ms);
  EXPECT_TRUE(h.empty());
  EXPECT_FALSE(h.woken);
  w->Wake();
  EXPECT_TRUE(w->Wait(10s).woken);
}

}  // namespace
}  // namespace profwatch::watch
