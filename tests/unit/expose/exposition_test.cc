// The /metrics body: the snapshot's part is rendered once per snapshot and
// shared by every scrape of it (also concurrent ones), the live part is
// collected per scrape, and the gzip form is one stream (one member, valid
// CRC and length) that decodes to the same text.
#include "expose/exposition.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <zlib.h>

#include <sstream>
#include <thread>
#include <vector>

#include "testing/sample_snapshot.h"

namespace profwatch::expose {
namespace {

const BuildInfo kBuild{"1.2.3", "abcdef012345"};

std::string SnapshotText(const snapshot::Snapshot& snap) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, RenderSnapshot(snap, kBuild));
  return out.str();
}

// Inflates one gzip member, checking its CRC-32 and length (zlib does);
// data after the member fails the test.
std::string Gunzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  while (z.avail_in > 0) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    const int rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_STREAM_END) {
      EXPECT_EQ(z.avail_in, 0u) << "bytes after the gzip member";
      break;
    }
    if (rc != Z_OK) {
      ADD_FAILURE() << "inflate " << rc;
      break;
    }
  }
  inflateEnd(&z);
  return out;
}

class ExpositionTest : public ::testing::Test {
 protected:
  ExpositionTest() {
    counter_ = &prometheus::BuildCounter()
                    .Name("profwatch_test_total")
                    .Help("t")
                    .Register(*registry_)
                    .Add({});
    exposition_.AddLive(registry_);
  }
  std::shared_ptr<snapshot::SnapshotStore> store_ = std::make_shared<snapshot::SnapshotStore>();
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Counter* counter_ = nullptr;
  Exposition exposition_{store_, kBuild};
};

TEST_F(ExpositionTest, SnapshotPartIsRenderedOncePerSnapshotLivePartPerScrape) {
  auto a = std::make_shared<const snapshot::Snapshot>(testing::SampleSnapshot());
  store_->Publish(a);
  const Exposition::Body first = exposition_.Render(false);
  counter_->Increment(3);
  const Exposition::Body second = exposition_.Render(false);
  EXPECT_EQ(exposition_.BulkRenders(), 1u);
  EXPECT_EQ(first.bulk, second.bulk);  // the same shared text
  EXPECT_EQ(*first.bulk, SnapshotText(*a));
  EXPECT_NE(first.head.find("profwatch_test_total 0"), std::string::npos) << first.head;
  EXPECT_NE(second.head.find("profwatch_test_total 3"), std::string::npos) << second.head;
  EXPECT_EQ(first.size(), first.head.size() + SnapshotText(*a).size());
  EXPECT_TRUE(first.tail.empty());

  auto b_snap = testing::SampleSnapshot();
  b_snap.last_scan_unix += 60;
  auto b = std::make_shared<const snapshot::Snapshot>(b_snap);
  store_->Publish(b);
  const Exposition::Body third = exposition_.Render(false);
  EXPECT_EQ(exposition_.BulkRenders(), 2u);
  EXPECT_EQ(*third.bulk, SnapshotText(*b));
  EXPECT_NE(*third.bulk, *first.bulk);
}

TEST_F(ExpositionTest, GzipBodyIsOneStreamOfTheSameText) {
  store_->Publish(std::make_shared<const snapshot::Snapshot>(testing::SampleSnapshot()));
  const Exposition::Body plain = exposition_.Render(false);
  const Exposition::Body gz = exposition_.Render(true);
  EXPECT_EQ(exposition_.BulkRenders(), 1u);  // compressing reuses the rendered text
  ASSERT_GT(gz.bulk->size(), 18u);
  EXPECT_EQ(gz.head.substr(0, 3), "\x1f\x8b\x08");  // gzip, deflate
  EXPECT_EQ(gz.tail.size(), 8u);                    // CRC-32, length
  EXPECT_LT(gz.bulk->size(), plain.bulk->size());
  EXPECT_EQ(Gunzip(gz.head + *gz.bulk + gz.tail), plain.head + *plain.bulk);
  counter_->Increment();  // a new live part, the same cached snapshot stream
  const Exposition::Body again = exposition_.Render(true);
  EXPECT_EQ(again.bulk, gz.bulk);
  EXPECT_EQ(Gunzip(again.head + *again.bulk + again.tail),
            exposition_.Render(false).head + *plain.bulk);
}

TEST_F(ExpositionTest, ConcurrentScrapesOfOneSnapshotShareOneRender) {
  store_->Publish(std::make_shared<const snapshot::Snapshot>(testing::SampleSnapshot()));
  std::vector<std::thread> scrapers;
  std::vector<std::shared_ptr<const std::string>> bulks(8);
  for (size_t i = 0; i < bulks.size(); ++i) {
    scrapers.emplace_back([&, i] { bulks[i] = exposition_.Render(i % 2 == 1).bulk; });
  }
  for (auto& t : scrapers) t.join();
  EXPECT_EQ(exposition_.BulkRenders(), 1u);
  for (size_t i = 2; i < bulks.size(); ++i) EXPECT_EQ(bulks[i], bulks[i % 2]) << i;
}

}  // namespace
}  // namespace profwatch::expose
