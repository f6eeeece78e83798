#include "cli/http_server.h"

#include <gtest/gtest.h>

#include "expose/snapshot_collectable.h"

namespace profwatch::cli {
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

}  // namespace
}  // namespace profwatch::cli
