#include "cli/http_server.h"

#include <gtest/gtest.h>

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

// A worker busy on one window past the per-file time budget makes the
// instance not ready, naming why; ready again once it is not.
TEST(OperationalAnswerTest, NotReadyWhileAWorkerIsStuck) {
  snapshot::Snapshot snap;
  snap.last_scan_unix = 1795003700;
  snap.workers_busy = 2;
  snap.workers_stuck = 1;
  std::optional<HttpAnswer> stuck = OperationalAnswer("/-/ready", snap);
  ASSERT_TRUE(stuck);
  EXPECT_EQ(stuck->status, 503);
  EXPECT_EQ(stuck->body,
            "not ready: 1 analysis worker(s) busy on one window longer than --file-max-seconds\n");
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

TEST(OperationalAnswerTest, LandingPageShowsTheShardNote) {
  snapshot::Snapshot snap;
  std::optional<HttpAnswer> landing = OperationalAnswer("/", snap, "Shard 1 of 3: ...");
  ASSERT_TRUE(landing);
  EXPECT_NE(landing->body.find("<p>Shard 1 of 3: ...</p>"), std::string::npos) << landing->body;
  EXPECT_NE(landing->body.find("href=\"/metrics\""), std::string::npos);
}

}  // namespace
}  // namespace profwatch::cli
