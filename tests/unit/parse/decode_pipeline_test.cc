// DecodePipeline: batches come back recycled with their capacity, except
// buffers an outsized event made large (memory stays bounded).
#include "parse/decode_pipeline.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace profwatch::parse {
namespace {

class CountSink final : public EventSink {
 public:
  void OnEvent(const TraceEvent& e) override { names.emplace_back(e.name); }
  std::vector<std::string> names;
};

// A batch holding `text` (one object) in a buffer of `buffer_bytes`.
std::unique_ptr<EventBatch> OneEventBatch(DecodePipeline& p, const std::string& text,
                                          size_t buffer_bytes) {
  auto b = p.NewBatch();
  b->bytes.assign(buffer_bytes, ' ');
  std::memcpy(b->bytes.data(), text.data(), text.size());
  b->entries.push_back({0, text.size()});
  b->base.known = true;
  return b;
}

TEST(DecodePipelineTest, RecyclesSmallBuffersAndFreesOutsizedOnes) {
  for (int helpers : {0, 1}) {
    DecodePipeline p(helpers, true, nullptr, 2);
    CountSink sink;
    DecodeCounts total;
    const size_t small = 512 << 10;
    const size_t big = kMaxRecycledBytes + 4096;
    p.Submit(OneEventBatch(p, R"({"ph":"X","name":"a"})", small), sink, total);
    p.Drain(sink, total);
    auto again = p.NewBatch();
    EXPECT_EQ(again->bytes.size(), small);  // recycled whole
    EXPECT_TRUE(again->entries.empty());
    EXPECT_EQ(again->decoded, 0u);
    EXPECT_EQ(again->counts.events, 0u);
    p.Submit(OneEventBatch(p, R"({"ph":"X","name":"b"})", big), sink, total);
    p.Drain(sink, total);
    EXPECT_EQ(p.NewBatch()->bytes.size(), 0u);  // the outsized buffer was freed
    EXPECT_EQ(sink.names, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(total.events, 2u);
  }
}

// A recycled batch keeps its old event slots to overwrite them: only the
// events decoded this time are delivered, and a dropped entry leaves no slot.
TEST(DecodePipelineTest, StaleSlotsOfARecycledBatchAreNotDelivered) {
  DecodePipeline p(0, true, nullptr, 1);
  CountSink sink;
  DecodeCounts total;
  const std::string three = R"({"ph":"X","name":"a"},{"ph":"X","name":"b"},{"ph":"X","name":"c"})";
  auto b = p.NewBatch();
  b->bytes.assign(4096, ' ');
  std::memcpy(b->bytes.data(), three.data(), three.size());
  b->entries = {{0, 21}, {22, 21}, {44, 21}};
  b->base.known = true;
  p.Submit(std::move(b), sink, total);
  p.Drain(sink, total);
  ASSERT_EQ(sink.names, (std::vector<std::string>{"a", "b", "c"}));

  // Same batch object again: one bad entry, then one event.
  const std::string two = R"({"ph":"X" "name":"x"},{"ph":"X","name":"d"})";
  b = p.NewBatch();
  ASSERT_GE(b->events.size(), 3u);  // the stale slots are still there
  std::memcpy(b->bytes.data(), two.data(), two.size());
  b->entries = {{0, 21}, {22, 21}};
  b->base.known = true;
  p.Submit(std::move(b), sink, total);
  p.Drain(sink, total);
  EXPECT_EQ(sink.names, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(total.events, 4u);
  EXPECT_EQ(total.drops["bad_json"], 1u);
}

}  // namespace
}  // namespace profwatch::parse
