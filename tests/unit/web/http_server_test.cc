#include "web/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "expose/snapshot_collectable.h"

namespace profwatch::web {
namespace {

TEST(OperationalAnswerTest, HealthyAlwaysReadyOnlyOnceAScanIsPublished) {
  snapshot::Snapshot before;
  std::optional<HttpAnswer> healthy = OperationalAnswer("/-/healthy", before);
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->status, 200);
  EXPECT_EQ(healthy->body, "OK\n");
  std::optional<HttpAnswer> not_ready = OperationalAnswer("/-/ready", before);
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_EQ(not_ready->body, "not ready: no scan of the watch roots yet\n");

  snapshot::Snapshot scanned;
  scanned.last_scan_unix = 1795003700;
  std::optional<HttpAnswer> ready = OperationalAnswer("/-/ready", scanned);
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, "OK\n");
}

// Every worker busy on one window past the window's time budget makes the
// instance not ready, naming why; one stuck worker of two leaves the other
// serving, so the instance stays ready (one tenant's flood must not take it
// out of service).
TEST(OperationalAnswerTest, NotReadyWhileEveryWorkerIsStuck) {
  snapshot::Snapshot snap;
  snap.last_scan_unix = 1795003700;
  snap.workers = 2;
  snap.workers_busy = 2;
  snap.workers_stuck = 2;
  std::optional<HttpAnswer> stuck = OperationalAnswer("/-/ready", snap);
  ASSERT_TRUE(stuck);
  EXPECT_EQ(stuck->status, 503);
  EXPECT_EQ(stuck->body,
            "not ready: all 2 analysis worker(s) busy on one window longer than its time budget "
            "(--window-max-seconds)\n");
  snap.workers_stuck = 1;
  EXPECT_EQ(OperationalAnswer("/-/ready", snap)->status, 200);
  snap.workers_stuck = 0;
  EXPECT_EQ(OperationalAnswer("/-/ready", snap)->status, 200);
}

TEST(OperationalAnswerTest, LandingPageLinksTheEndpointsAndMetricsIsServedApart) {
  snapshot::Snapshot snap;
  std::optional<HttpAnswer> landing = OperationalAnswer("/", snap);
  ASSERT_TRUE(landing);
  EXPECT_EQ(landing->status, 200);
  EXPECT_EQ(landing->content_type, "text/html; charset=utf-8");
  for (const char* link : {"href=\"/metrics\"", "href=\"/-/healthy\"", "href=\"/-/ready\""}) {
    EXPECT_NE(landing->body.find(link), std::string::npos) << link;
  }
  EXPECT_FALSE(OperationalAnswer("/metrics", snap));
  EXPECT_FALSE(OperationalAnswer("/nope", snap));
  EXPECT_FALSE(OperationalAnswer("/-/healthyX", snap));
  EXPECT_EQ(landing->body.find("Shard"), std::string::npos);
}

// /runbook: this build's runbook (made from docs/alerts-and-dashboards.md at
// build time), an id per alert heading for the rules' runbook_url anchors,
// cacheable (fixed for the binary's life); the landing page links it.
TEST(OperationalAnswerTest, RunbookIsServedWithAnAnchorPerAlert) {
  snapshot::Snapshot snap;
  std::optional<HttpAnswer> runbook = OperationalAnswer("/runbook", snap);
  ASSERT_TRUE(runbook);
  EXPECT_EQ(runbook->status, 200);
  EXPECT_EQ(runbook->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(runbook->cache_control, "max-age=3600");
  for (const char* id : {"<h3 id=\"profwatchstepkernelgaphigh\">ProfwatchStepKernelGapHigh</h3>",
                         "<h3 id=\"profwatchexporterdown\">ProfwatchExporterDown</h3>",
                         "<h2 id=\"alerts-runbook\">Alerts runbook</h2>",
                         "<h2 id=\"terms-what-the-diagnosis-calls-what\">"}) {
    EXPECT_NE(runbook->body.find(id), std::string::npos) << id;
  }
  // The docs' check comments are not served; links to other documents name
  // them instead of pointing where this daemon serves nothing.
  EXPECT_EQ(runbook->body.find("<!--"), std::string::npos);
  EXPECT_EQ(runbook->body.find("href=\"security.md"), std::string::npos);
  EXPECT_NE(runbook->body.find("(docs/security.md#hostile-trees)"), std::string::npos);
  // The Dashboards section is not the runbook's.
  EXPECT_EQ(runbook->body.find("id=\"dashboards-dashboards\""), std::string::npos);
  std::optional<HttpAnswer> alias = OperationalAnswer("/runbook/alerts-and-dashboards.md", snap);
  ASSERT_TRUE(alias);
  EXPECT_EQ(alias->body, runbook->body);
  EXPECT_FALSE(OperationalAnswer("/runbookx", snap));
  EXPECT_FALSE(OperationalAnswer("/runbook/", snap));
  EXPECT_EQ(OperationalAnswer("/-/healthy", snap)->cache_control, "no-store");
  EXPECT_NE(OperationalAnswer("/", snap)->body.find("href=\"/runbook\""), std::string::npos);
}

TEST(OperationalAnswerTest, LandingPageShowsTheShardNote) {
  snapshot::Snapshot snap;
  std::optional<HttpAnswer> landing = OperationalAnswer("/", snap, "Shard 1 of 3: ...");
  ASSERT_TRUE(landing);
  EXPECT_NE(landing->body.find("<p>Shard 1 of 3: ...</p>"), std::string::npos) << landing->body;
  EXPECT_NE(landing->body.find("href=\"/metrics\""), std::string::npos);
}

// The landing page says what this daemon is and watches: its version, the
// roots and the runs with their window. Root and run names are directory
// names anyone writing under a root picks: they are escaped, never markup.
TEST(OperationalAnswerTest, LandingPageShowsVersionRootsAndRunsEscaped) {
  snapshot::Snapshot snap;
  snap.watch_roots = {{"/jobs", true}, {"/gone<b>", false}};
  snapshot::RunState good;
  good.key = {"4242-llama", "base"};
  good.has_window = true;
  good.window_id = "2026_11_26_00_29_00";
  snap.runs[good.key] = good;
  snapshot::RunState hostile;
  hostile.key = {"<script>alert(1)</script>", "r&\"'"};
  hostile.window_failure = "truncated";
  snap.runs[hostile.key] = hostile;
  std::optional<HttpAnswer> landing = OperationalAnswer("/", snap);
  ASSERT_TRUE(landing);
  const std::string& b = landing->body;
  EXPECT_NE(b.find("version " + expose::DefaultBuildInfo().version), std::string::npos) << b;
  EXPECT_NE(b.find("<li>/jobs</li>"), std::string::npos) << b;
  EXPECT_NE(b.find("<li>/gone&lt;b&gt; (not readable)</li>"), std::string::npos) << b;
  EXPECT_NE(b.find("<li>4242-llama/base: window 2026_11_26_00_29_00</li>"), std::string::npos) << b;
  EXPECT_NE(b.find("<li>&lt;script&gt;alert(1)&lt;/script&gt;/r&amp;&quot;&#39;: no window yet, "
                   "latest window failed (truncated)</li>"),
            std::string::npos)
      << b;
  EXPECT_EQ(b.find("<script>"), std::string::npos) << b;
  EXPECT_EQ(b.find("<b>"), std::string::npos) << b;
}

// At 1,000 runs the landing page lists the first 50 by name and counts the
// rest (issue #65: it listed every run, 58 KB); it says how many runs in how
// many jobs, and how many failed.
TEST(OperationalAnswerTest, LandingPageListsTheFirstRunsAndCountsTheRest) {
  snapshot::Snapshot snap;
  for (int i = 0; i < 1000; ++i) {
    snapshot::RunState rs;
    char job[32], run[32];
    std::snprintf(job, sizeof job, "job-%02d", i / 100);
    std::snprintf(run, sizeof run, "run-%03d", i % 100);
    rs.key = {job, run};
    rs.has_window = true;
    rs.window_id = "2026_11_26_00_29_00";
    if (i % 250 == 7) rs.window_failure = "truncated";
    snap.runs[rs.key] = rs;
  }
  std::optional<HttpAnswer> landing = OperationalAnswer("/", snap);
  ASSERT_TRUE(landing);
  const std::string& b = landing->body;
  EXPECT_LT(b.size(), 6000u) << b.size();
  EXPECT_NE(b.find("<p>1000 runs in 10 jobs; 4 with a failed latest window.</p>"),
            std::string::npos)
      << b;
  EXPECT_NE(b.find("<li>job-00/run-000: window 2026_11_26_00_29_00</li>"), std::string::npos);
  EXPECT_NE(b.find("<li>job-00/run-049: window"), std::string::npos) << b;
  EXPECT_EQ(b.find("job-00/run-050"), std::string::npos) << b;
  EXPECT_NE(b.find("<li>... and 950 more (every run is on /metrics)</li>"), std::string::npos) << b;
  size_t items = 0;
  for (size_t at = b.find("<li>job-"); at != std::string::npos; at = b.find("<li>job-", at + 1)) {
    ++items;
  }
  EXPECT_EQ(items, 50u);
}

bool WaitFor(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a deadline-bounded wait
  }
  return condition();
}

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// The accept registers a connection as pending under the peer address and
// port civetweb reports to the request and close hooks, which end it: a
// mismatch would leave answered connections pending (and cut them later).
TEST(HttpServerTest, AConnectionIsPendingFromItsAcceptUntilItsRequestOrClose) {
  auto store = std::make_shared<snapshot::SnapshotStore>();
  auto server =
      HttpServer::Start("127.0.0.1:0", store, std::make_shared<expose::Exposition>(store));
  ASSERT_TRUE(server) << server.error().context;
  const int port = (*server)->ListeningPorts().at(0);
  const PendingConnections& pending = (*server)->pending();
  EXPECT_EQ(pending.limit(), 192u);

  const int silent = Connect(port);
  ASSERT_TRUE(WaitFor([&] { return pending.size() == 1; })) << pending.size();
  close(silent);  // civetweb reads its end and closes it
  ASSERT_TRUE(WaitFor([&] { return pending.size() == 0; })) << pending.size();

  const int asking = Connect(port);
  ASSERT_TRUE(WaitFor([&] { return pending.size() == 1; })) << pending.size();
  const std::string request = "GET /-/healthy HTTP/1.0\r\n\r\n";
  ASSERT_EQ(send(asking, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string answer;
  char buf[512];
  for (ssize_t n; (n = recv(asking, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
  close(asking);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK", 0), 0u) << answer;
  EXPECT_EQ(pending.size(), 0u);  // ended by the request, before the answer
}

// The whole answer to one raw HTTP request.
std::string Ask(int port, const std::string& request) {
  const int fd = Connect(port);
  EXPECT_EQ(send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
  close(fd);
  return answer;
}

// Before the daemon's first publish (its --state being restored) /-/ready
// is 503 and a scrape waits for the runs: refused (503) once Prometheus's
// scrape timeout, which it sends as a header, has passed; served from the
// published snapshot once there is one. /-/healthy answers throughout.
TEST(HttpServerTest, MetricsWaitsForTheFirstPublishAndReadyIsNotReadyBefore) {
  auto store = std::make_shared<snapshot::SnapshotStore>();
  auto server =
      HttpServer::Start("127.0.0.1:0", store, std::make_shared<expose::Exposition>(store));
  ASSERT_TRUE(server) << server.error().context;
  const int port = (*server)->ListeningPorts().at(0);
  const std::string starting = "not ready: starting, restoring the runs of --state\n";

  EXPECT_EQ(Ask(port, "GET /-/healthy HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 200 OK", 0), 0u);
  const std::string ready = Ask(port, "GET /-/ready HTTP/1.0\r\n\r\n");
  EXPECT_EQ(ready.rfind("HTTP/1.1 503", 0), 0u) << ready;
  EXPECT_NE(ready.find(starting), std::string::npos) << ready;
  const std::string refused =
      Ask(port, "GET /metrics HTTP/1.0\r\nX-Prometheus-Scrape-Timeout-Seconds: 0.2\r\n\r\n");
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused;
  EXPECT_NE(refused.find(starting), std::string::npos) << refused;

  auto published = std::make_shared<snapshot::Snapshot>();
  published->last_scan_unix = 1795003700;
  store->Publish(published);
  const std::string served =
      Ask(port, "GET /metrics HTTP/1.0\r\nX-Prometheus-Scrape-Timeout-Seconds: 0.2\r\n\r\n");
  EXPECT_EQ(served.rfind("HTTP/1.1 200 OK", 0), 0u) << served;
  EXPECT_NE(served.find("profwatch_last_scan_timestamp_seconds 1795003700"), std::string::npos)
      << served;
  EXPECT_EQ(Ask(port, "GET /-/ready HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 200 OK", 0), 0u);
}

// A failed save of --state makes the instance not ready, naming the error,
// until a save succeeds again (the daemon publishes the change at once).
TEST(OperationalAnswerTest, NotReadyWhileTheLastStateSaveFailed) {
  snapshot::Snapshot snap;
  snap.last_scan_unix = 1795003700;
  snap.state_save_error = "io: rename /state/x.json: No space left on device";
  std::optional<HttpAnswer> failed = OperationalAnswer("/-/ready", snap);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 503);
  EXPECT_EQ(failed->body,
            "not ready: the last save of --state failed: io: rename /state/x.json: No space left "
            "on device\n");
  snap.state_save_error.clear();
  EXPECT_EQ(OperationalAnswer("/-/ready", snap)->status, 200);
}

}  // namespace
}  // namespace profwatch::web
