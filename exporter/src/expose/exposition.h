// Exposition: the /metrics body, built so that concurrent scrapes share the
// work and the memory. The published snapshot's families (every run: the
// bulk of the text) are rendered, serialized and, when a client asks for
// gzip, compressed once per snapshot by the first scrape that sees it; every
// other scrape of that snapshot reuses the same immutable text. The live
// collectables (the daemon's counters, process metrics) are small and are
// collected on every scrape.
//
// The two parts have disjoint metric families, so their texts concatenated
// are one exposition. The live families are collected before the snapshot
// is taken: a live counter that the daemon increments only after publishing
// what it counts (profwatch_scans_total) is never ahead of the snapshot.
//
// Compressed, the body is one gzip stream (RFC 1952): the gzip header, the
// live text deflated up to a byte boundary (sync flush), the snapshot
// text's own cached deflate stream (it ends with the final block and
// refers to nothing before it), and a trailer with the CRC-32 of both texts
// combined (crc32_combine) and their total length.
//
// Thread-safety: Render() may run concurrently from any number of threads;
// AddLive() only before the first Render().
#pragma once

#include <prometheus/collectable.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "expose/snapshot_collectable.h"
#include "snapshot/snapshot.h"

namespace profwatch::expose {

class Exposition {
 public:
  // REQUIRES: store != nullptr.
  explicit Exposition(std::shared_ptr<const snapshot::SnapshotStore> store,
                      BuildInfo build = DefaultBuildInfo());

  void AddLive(std::shared_ptr<prometheus::Collectable> collectable);

  // Written in order: head, bulk, tail.
  struct Body {
    std::string head;                         // (gzip header and) the live families
    std::shared_ptr<const std::string> bulk;  // the snapshot's families, shared
    std::string tail;                         // the gzip trailer, or empty
    size_t size() const { return head.size() + bulk->size() + tail.size(); }
  };
  // The body in the text format 0.0.4, gzip-compressed when `gzip`.
  Body Render(bool gzip) const;

  // How often the snapshot part was rendered (for tests: once per snapshot).
  uint64_t BulkRenders() const;

 private:
  // Render(gzip); `rendered`: whether it rendered the snapshot's part anew.
  Body Render(bool gzip, bool& rendered) const;

  std::shared_ptr<const snapshot::SnapshotStore> store_;
  BuildInfo build_;
  std::vector<std::weak_ptr<prometheus::Collectable>> live_;

  mutable std::mutex mu_;
  mutable std::shared_ptr<const snapshot::Snapshot> rendered_for_;
  mutable std::shared_ptr<const std::string> text_;
  // text_ as a raw deflate stream, made on first ask, and its CRC-32.
  mutable std::shared_ptr<const std::string> deflated_;
  mutable uint32_t text_crc_ = 0;
  mutable uint64_t bulk_renders_ = 0;
};

}  // namespace profwatch::expose
