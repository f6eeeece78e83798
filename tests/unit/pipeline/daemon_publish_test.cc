// What a scrape can see while the daemon works: /metrics is rendered from
// two sources (the live registry, then the published snapshot), and a
// scrape may land between any two steps of the daemon's threads. A scrape
// that finds a thing counted must find what the daemon published with it:
// profwatch_scans_total = N, a completed scan's snapshot
// (profwatch_last_scan_timestamp_seconds); a failed save of --state counted,
// profwatch_state_last_save_successful 0 and /-/ready naming the failure.
// Tests and operators wait on the counter and then read the rest.
//
// The clock below renders the real exposition each time a daemon thread
// reads the time, so every step at which time is read is a scrape; no
// timing is involved.
#include <gtest/gtest.h>
#include <pthread.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "daemon_test_options.h"
#include "expose/exposition.h"
#include "pipeline/daemon.h"
#include "testing/serve_harness.h"
#include "testing/test_util.h"
#include "web/http_server.h"

namespace profwatch::pipeline {
namespace {

using namespace std::chrono_literals;

// A FakeClock that calls `on_daemon_thread` whenever one of the daemon's
// threads (the scan thread, a worker) reads it; not for reads made from
// inside the callback.
class ScrapingClock final : public Clock {
 public:
  explicit ScrapingClock(std::function<void()> on_daemon_thread)
      : on_daemon_thread_(std::move(on_daemon_thread)) {}
  TimePoint Now() const override {
    thread_local bool inside = false;
    if (!inside && OnDaemonThread()) {
      inside = true;
      on_daemon_thread_();
      inside = false;
    }
    return fake_.Now();
  }
  void Advance(std::chrono::nanoseconds d) { fake_.Advance(d); }

 private:
  static bool OnDaemonThread() {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    return std::string(name) == kScanThreadName || std::string(name) == kWorkerThreadName;
  }
  std::function<void()> on_daemon_thread_;
  FakeClock fake_{std::chrono::system_clock::now()};
};

// What one scrape saw.
struct Seen {
  double scans = 0;
  std::optional<double> last_scan;
  std::optional<double> save_errors;
  std::optional<double> last_save_ok;
  std::string ready;  // /-/ready's body for the snapshot the scrape took
};

// The real exposition of `registry` and `store`, as /metrics renders it,
// with /-/ready's answer for the snapshot it rendered.
class Scraper {
 public:
  Scraper(std::shared_ptr<snapshot::SnapshotStore> store,
          std::shared_ptr<prometheus::Registry> registry)
      : store_(store), exposition_(store) {
    exposition_.AddLive(std::move(registry));
  }
  void Scrape() {
    const expose::Exposition::Body body = exposition_.Render(/*gzip=*/false);
    const std::string text = body.head + *body.bulk;
    Seen s;
    s.scans = testing::Sample(text, "profwatch_scans_total").value_or(-1);
    s.last_scan = testing::Sample(text, "profwatch_last_scan_timestamp_seconds");
    s.save_errors = testing::Sample(text, "profwatch_state_save_errors_total");
    s.last_save_ok = testing::Sample(text, "profwatch_state_last_save_successful");
    // The snapshot the render took (a later publish only adds to what it
    // says, and no save succeeds in these tests).
    if (auto snap = store_->Current()) s.ready = web::OperationalAnswer("/-/ready", *snap)->body;
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(s);
  }
  std::vector<Seen> All() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::shared_ptr<snapshot::SnapshotStore> store_;
  expose::Exposition exposition_;
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
};

// Advances `clock` until `done` or a deadline (real time).
void RunUntil(ScrapingClock& clock, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    clock.Advance(100ms);
    std::this_thread::sleep_for(5ms);
  }
}

TEST(DaemonPublishTest, ScrapeThatSeesAScanCountedSeesItsSnapshot) {
  testing::TempDir tmp;
  testing::WriteFile(
      testing::ProfileDir(tmp.Sub("jobs"), "job", "run") + "/2024_03_01_12_00_00/h0.trace.json.gz",
      testing::Gzip(testing::SmallJaxTrace(1)));
  auto store = std::make_shared<snapshot::SnapshotStore>();
  auto registry = std::make_shared<prometheus::Registry>();
  Scraper scraper(store, registry);
  ScrapingClock clock([&] { scraper.Scrape(); });
  Daemon daemon(FakeClockDaemonOptions(tmp.Sub("jobs")), store, registry, clock);
  ASSERT_TRUE(daemon.Start());
  RunUntil(clock, [&] {
    const std::vector<Seen> seen = scraper.All();
    return daemon.WindowsAnalyzed() >= 1 && !seen.empty() && seen.back().scans >= 3;
  });
  daemon.Stop();

  const std::vector<Seen> seen = scraper.All();
  ASSERT_FALSE(seen.empty());
  ASSERT_GE(seen.back().scans, 3) << "no clock read after a third scan";
  for (size_t i = 0; i < seen.size(); ++i) {
    ASSERT_GE(seen[i].scans, 0) << "scrape " << i << ": no profwatch_scans_total";
    if (seen[i].scans >= 1) {
      EXPECT_TRUE(seen[i].last_scan) << "scrape " << i << " saw profwatch_scans_total "
                                     << seen[i].scans << " but no completed scan's snapshot";
    }
  }
}

// A failed save of --state: a scrape that sees it counted sees the gauge at
// 0 and /-/ready naming the failure.
TEST(DaemonPublishTest, ScrapeThatSeesAFailedSaveCountedSeesWhyNotReady) {
  testing::TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("jobs"));
  std::filesystem::create_directories(tmp.Sub("not_a_dir"));
  auto store = std::make_shared<snapshot::SnapshotStore>();
  auto registry = std::make_shared<prometheus::Registry>();
  Scraper scraper(store, registry);
  ScrapingClock clock([&] { scraper.Scrape(); });
  DaemonOptions o = FakeClockDaemonOptions(tmp.Sub("jobs"));
  o.state_file = tmp.Sub("not_a_dir/state.json");
  Daemon daemon(o, store, registry, clock);
  ASSERT_TRUE(daemon.Start());
  // The state file's directory becomes a file; then a window lands, whose
  // result is saved, and fails.
  std::filesystem::remove_all(tmp.Sub("not_a_dir"));
  testing::WriteFile(tmp.Sub("not_a_dir"), "x");
  testing::WriteFile(
      testing::ProfileDir(tmp.Sub("jobs"), "job", "run") + "/2024_03_01_12_00_00/h0.trace.json.gz",
      testing::Gzip(testing::SmallJaxTrace(1)));
  const auto failures_seen = [&] {
    int n = 0;
    for (const Seen& s : scraper.All()) n += s.save_errors.value_or(0) >= 1 ? 1 : 0;
    return n;
  };
  RunUntil(clock, [&] { return failures_seen() >= 3; });
  daemon.Stop();

  ASSERT_GE(failures_seen(), 3) << "no clock read after a failed save";
  const std::vector<Seen> seen = scraper.All();
  for (size_t i = 0; i < seen.size(); ++i) {
    if (seen[i].save_errors.value_or(0) < 1) continue;
    EXPECT_EQ(seen[i].last_save_ok, 0) << "scrape " << i;
    EXPECT_EQ(seen[i].ready.rfind("not ready: the last save of --state failed: ", 0), 0u)
        << "scrape " << i << ": " << seen[i].ready;
  }
}

}  // namespace
}  // namespace profwatch::pipeline
