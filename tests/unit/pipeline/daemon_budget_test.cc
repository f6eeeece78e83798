// The daemon's workers against budgets and shutdown, with an injected clock:
// a worker busy on one window longer than its time budget (the window's,
// else the per-file one) is published as stuck (profwatch_workers_stuck;
// /-/ready 503 once every worker is) and Stop ends it mid-file; healthy
// windows leave both quiet.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "core/clock.h"
#include "daemon_test_options.h"
#include "pipeline/daemon.h"
#include "testing/serve_harness.h"
#include "testing/test_util.h"
#include "web/http_server.h"

namespace profwatch::pipeline {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

// Waits (bounded, real time) until `pred` holds; `tick` runs between tries.
bool Eventually(const std::function<bool()>& pred, const std::function<void()>& tick = {}) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    if (tick) tick();
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

class DaemonBudgetTest : public ::testing::Test {
 protected:
  DaemonOptions Options() {
    DaemonOptions o = FakeClockDaemonOptions(tmp_.Sub("jobs"));
    o.analyze.limits.max_time = 1h;  // steady time in the reader; clock_ time for "stuck"
    return o;
  }
  std::string Window(const std::string& job) {
    return testing::ProfileDir(tmp_.Sub("jobs"), job, "run") + "/2024_03_01_12_00_00";
  }
  std::shared_ptr<const snapshot::Snapshot> Snap() const { return store_->Current(); }
  int ReadyStatus() const { return web::OperationalAnswer("/-/ready", *Snap())->status; }

  TempDir tmp_;
  FakeClock clock_{std::chrono::system_clock::now()};
  std::shared_ptr<snapshot::SnapshotStore> store_ = std::make_shared<snapshot::SnapshotStore>();
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
};

TEST_F(DaemonBudgetTest, WorkerPastTheTimeBudgetIsStuckUntilStopEndsItMidFile) {
  // 8 GiB of `{}` events: minutes of parsing, within every byte budget.
  testing::WriteFile(Window("bad") + "/h0.trace.json.gz",
                     testing::GzipBomb("{\"traceEvents\":[", "{},", 8ull << 30, "{}]}"));
  DaemonOptions o = Options();
  o.workers = 1;
  Daemon daemon(o, store_, registry_, clock_);
  ASSERT_TRUE(daemon.Start());
  ASSERT_TRUE(
      Eventually([&] { return Snap()->workers_busy == 1; }, [&] { clock_.Advance(100ms); }));
  EXPECT_EQ(Snap()->workers_stuck, 0);
  EXPECT_EQ(ReadyStatus(), 200);
  clock_.Advance(2h);  // past the per-file time budget by the daemon's clock
  ASSERT_TRUE(Eventually([&] { return Snap()->workers_stuck == 1; }));
  const auto ready = web::OperationalAnswer("/-/ready", *Snap());
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ready->body.find("--window-max-seconds"), std::string::npos) << ready->body;
  // Stop sets the stop flag: the read ends at its next chunk.
  auto stopped = std::async(std::launch::async, [&] { daemon.Stop(); });
  ASSERT_EQ(stopped.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(daemon.WindowsAnalyzed(), 0);  // abandoned, not recorded
}

// With a window budget, stuck means past it; one stuck worker of two leaves
// the other serving, so /-/ready stays 200 (one user's window cannot take
// the instance out of service).
TEST_F(DaemonBudgetTest, OneStuckWorkerOfTwoIsCountedButLeavesTheInstanceReady) {
  testing::WriteFile(Window("bad") + "/h0.trace.json.gz",
                     testing::GzipBomb("{\"traceEvents\":[", "{},", 8ull << 30, "{}]}"));
  DaemonOptions o = Options();
  o.workers = 2;
  o.analyze.limits.window_max_time = 30min;
  Daemon daemon(o, store_, registry_, clock_);
  ASSERT_TRUE(daemon.Start());
  ASSERT_TRUE(
      Eventually([&] { return Snap()->workers_busy == 1; }, [&] { clock_.Advance(100ms); }));
  clock_.Advance(20min);
  ASSERT_TRUE(Eventually([&] { return Snap()->last_scan_unix >= ToUnixSeconds(clock_.Now()); }));
  EXPECT_EQ(Snap()->workers_stuck, 0);
  clock_.Advance(20min);  // past the window budget, within the per-file one
  ASSERT_TRUE(Eventually([&] { return Snap()->workers_stuck == 1; }));
  EXPECT_EQ(ReadyStatus(), 200);
  auto stopped = std::async(std::launch::async, [&] { daemon.Stop(); });
  ASSERT_EQ(stopped.wait_for(10s), std::future_status::ready);
}

TEST_F(DaemonBudgetTest, HealthyWindowsLeaveStuckAtZeroAndReadyAt200) {
  testing::WriteFile(Window("good") + "/h0.trace.json.gz",
                     testing::Gzip(R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k",)"
                                   R"("pid":0,"tid":7,"ts":10,"dur":5}]})"));
  Daemon daemon(Options(), store_, registry_, clock_);
  ASSERT_TRUE(daemon.Start());
  ASSERT_TRUE(
      Eventually([&] { return daemon.WindowsAnalyzed() == 1; }, [&] { clock_.Advance(100ms); }));
  // The window is counted before its worker is free. A scan from now on
  // publishes the workers as they are: wait for one that shows the worker
  // free, or the jump below could find it still busy (stuck, rightly).
  clock_.Advance(100ms);
  const double counted = ToUnixSeconds(clock_.Now());
  ASSERT_TRUE(Eventually(
      [&] {
        const auto snap = Snap();
        return snap->last_scan_unix >= counted && snap->workers_busy == 0;
      },
      [&] { clock_.Advance(100ms); }));
  // Long after, by the daemon's clock, with no worker busy: nothing is stuck.
  clock_.Advance(2h);
  const double after = ToUnixSeconds(clock_.Now());
  ASSERT_TRUE(Eventually([&] { return Snap()->last_scan_unix >= after; }));
  EXPECT_EQ(Snap()->workers_busy, 0);
  EXPECT_EQ(Snap()->workers_stuck, 0);
  EXPECT_EQ(ReadyStatus(), 200);
  daemon.Stop();
}

}  // namespace
}  // namespace profwatch::pipeline
