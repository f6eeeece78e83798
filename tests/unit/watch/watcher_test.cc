#include "watch/watcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
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
