#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "snapshot/snapshot.h"

namespace profwatch::snapshot {
namespace {

std::shared_ptr<const Snapshot> Make(int64_t generation) {
  auto s = std::make_shared<Snapshot>();
  // Each generation is internally consistent: pending_windows == generation,
  // last_scan_unix == generation, and `generation` runs. A reader that ever
  // sees a mix of two generations (a torn or mutated snapshot) fails.
  s->pending_windows = generation;
  s->last_scan_unix = static_cast<double>(generation);
  for (int64_t i = 0; i < generation % 8; ++i) {
    RunState r;
    r.key = {"job", "run-" + std::to_string(i)};
    r.expected_gpus = static_cast<int>(generation);
    s->runs.emplace(r.key, std::move(r));
  }
  return s;
}

TEST(SnapshotStoreTest, StartsWithAnEmptySnapshot) {
  SnapshotStore store;
  auto s = store.Current();
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->runs.empty());
  EXPECT_EQ(s->pending_windows, 0);
}

TEST(SnapshotStoreTest, CurrentReturnsTheLastPublished) {
  SnapshotStore store;
  store.Publish(Make(3));
  auto held = store.Current();
  store.Publish(Make(5));
  EXPECT_EQ(store.Current()->pending_windows, 5);
  // An old pointer stays valid and unchanged after a newer publish.
  EXPECT_EQ(held->pending_windows, 3);
  EXPECT_EQ(held->runs.size(), 3u);
}

TEST(SnapshotStoreTest, ConcurrentReadersSeeWholeMonotonicGenerations) {
  SnapshotStore store;
  store.Publish(Make(0));
  constexpr int64_t kGenerations = 2000;
  constexpr int kReaders = 4;
  std::atomic<bool> done{false};
  std::atomic<int64_t> bad{0};
  std::atomic<int64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&] {
      int64_t last = -1;
      while (true) {
        // Read `done` before the snapshot so the final read sees the last generation.
        const bool finished = done.load();
        auto s = store.Current();
        const int64_t g = s->pending_windows;
        bool ok = g >= last && s->last_scan_unix == static_cast<double>(g) &&
                  static_cast<int64_t>(s->runs.size()) == g % 8;
        for (const auto& [k, r] : s->runs) ok = ok && r.expected_gpus == g;
        if (!ok) bad.fetch_add(1);
        if (finished && g != kGenerations) bad.fetch_add(1);
        last = g;
        reads.fetch_add(1);
        if (finished) break;
      }
    });
  }
  for (int64_t g = 1; g <= kGenerations; ++g) store.Publish(Make(g));
  done.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(reads.load(), kReaders);
  EXPECT_EQ(store.Current()->pending_windows, kGenerations);
}

}  // namespace
}  // namespace profwatch::snapshot
