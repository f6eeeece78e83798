// What a scrape can see while the daemon scans: /metrics is rendered from
// two sources (the live registry and the published snapshot), and a scrape
// may land between any two steps of the scan thread. A scrape that finds
// profwatch_scans_total = N must find the snapshot of a completed scan too
// (profwatch_last_scan_timestamp_seconds present): tests and operators wait
// on the counter and then read what the scan published.
//
// The clock below renders the real exposition each time the scan thread
// reads the time, so every step of a scan at which time is read is a
// scrape; no timing is involved.
#include <gtest/gtest.h>
#include <pthread.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "expose/exposition.h"
#include "pipeline/daemon.h"
#include "testing/serve_harness.h"
#include "testing/test_util.h"

namespace profwatch::pipeline {
namespace {

using namespace std::chrono_literals;

// A FakeClock that calls `on_scan_thread` whenever the daemon's scan thread
// reads it (not for reads made from inside the callback).
class ScrapingClock final : public Clock {
 public:
  explicit ScrapingClock(std::function<void()> on_scan_thread)
      : on_scan_thread_(std::move(on_scan_thread)) {}
  TimePoint Now() const override {
    thread_local bool inside = false;
    if (!inside && OnScanThread()) {
      inside = true;
      on_scan_thread_();
      inside = false;
    }
    return fake_.Now();
  }
  void Advance(std::chrono::nanoseconds d) { fake_.Advance(d); }

 private:
  static bool OnScanThread() {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    return std::string(name) == kScanThreadName;
  }
  std::function<void()> on_scan_thread_;
  FakeClock fake_{std::chrono::system_clock::now()};
};

struct Seen {
  double scans = 0;
  std::optional<double> last_scan;
};

TEST(DaemonPublishTest, ScrapeThatSeesAScanCountedSeesItsSnapshot) {
  testing::TempDir tmp;
  testing::WriteFile(
      testing::ProfileDir(tmp.Sub("jobs"), "job", "run") + "/2024_03_01_12_00_00/h0.trace.json.gz",
      testing::Gzip(testing::SmallJaxTrace(1)));
  auto store = std::make_shared<snapshot::SnapshotStore>();
  auto registry = std::make_shared<prometheus::Registry>();
  expose::Exposition exposition(store);
  exposition.AddLive(registry);
  std::mutex mu;
  std::vector<Seen> seen;
  ScrapingClock clock([&] {
    const expose::Exposition::Body body = exposition.Render(/*gzip=*/false);
    const std::string text = body.head + *body.bulk;
    Seen s;
    s.scans = testing::Sample(text, "profwatch_scans_total").value_or(-1);
    s.last_scan = testing::Sample(text, "profwatch_last_scan_timestamp_seconds");
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(s);
  });
  auto scans_seen = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.empty() ? 0.0 : seen.back().scans;
  };

  DaemonOptions o;
  o.roots = {tmp.Sub("jobs")};
  o.use_inotify = false;
  o.poll_interval = 100ms;
  o.assembler.settle = 0ms;
  o.analyze.threads = 1;
  Daemon daemon(o, store, registry, clock);
  ASSERT_TRUE(daemon.Start());
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((scans_seen() < 3 || daemon.WindowsAnalyzed() < 1) &&
         std::chrono::steady_clock::now() < deadline) {
    clock.Advance(100ms);
    std::this_thread::sleep_for(5ms);
  }
  daemon.Stop();

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(seen.size(), 3u);
  ASSERT_GE(seen.back().scans, 3) << "the scan thread never read the clock after a third scan";
  for (size_t i = 0; i < seen.size(); ++i) {
    ASSERT_GE(seen[i].scans, 0) << "scrape " << i << ": no profwatch_scans_total";
    if (seen[i].scans >= 1) {
      EXPECT_TRUE(seen[i].last_scan) << "scrape " << i << " saw profwatch_scans_total "
                                     << seen[i].scans << " but no completed scan's snapshot";
    }
  }
}

}  // namespace
}  // namespace profwatch::pipeline
