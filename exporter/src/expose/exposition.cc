// Exposition: see exposition.h.
#include "expose/exposition.h"

#include <malloc.h>
#include <prometheus/text_serializer.h>
#include <zlib.h>

#include <sstream>
#include <utility>

namespace profwatch::expose {

namespace {

std::string Serialize(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return std::move(out).str();
}

// `text` as raw deflate data (no header or trailer). `flush`: Z_FINISH ends
// the stream with its final block; Z_SYNC_FLUSH leaves it open, ending on a
// byte boundary, so another deflate stream may follow it.
std::string Deflate(const std::string& text, int flush) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return {};
  }
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, flush);
  const bool ok = flush == Z_FINISH ? rc == Z_STREAM_END : rc == Z_OK && z.avail_in == 0;
  out.resize(ok ? z.total_out : 0);
  deflateEnd(&z);
  return out;
}

uint32_t Crc32(const std::string& text) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
}

void AppendLe32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

Exposition::Exposition(std::shared_ptr<const snapshot::SnapshotStore> store, BuildInfo build)
    : store_(std::move(store)), build_(std::move(build)) {}

void Exposition::AddLive(std::shared_ptr<prometheus::Collectable> collectable) {
  live_.push_back(collectable);
}

Exposition::Body Exposition::Render(bool gzip) const {
  bool rendered = false;
  Body body = Render(gzip, rendered);
  // A snapshot's render builds every run's families as small allocations
  // and frees them: the allocator keeps those pages (in the arena of
  // whichever HTTP worker rendered) unless told to return them, and the
  // daemon's memory would then follow its scrapes' history instead of its
  // runs. Once per snapshot, not per scrape.
  if (rendered) malloc_trim(0);
  return body;
}

Exposition::Body Exposition::Render(bool gzip, bool& rendered) const {
  // Live first, then the snapshot: the order the header promises.
  std::vector<prometheus::MetricFamily> families;
  for (const auto& weak : live_) {
    if (auto c = weak.lock()) {
      auto more = c->Collect();
      families.insert(families.end(), std::make_move_iterator(more.begin()),
                      std::make_move_iterator(more.end()));
    }
  }
  const std::string live = Serialize(families);

  Body body;
  std::shared_ptr<const snapshot::Snapshot> snap = store_->Current();
  std::lock_guard<std::mutex> lock(mu_);
  if (snap != rendered_for_ || !text_) {
    text_ = std::make_shared<const std::string>(snap ? RenderSnapshotText(*snap, build_)
                                                     : std::string());
    deflated_.reset();
    rendered_for_ = std::move(snap);
    ++bulk_renders_;
    rendered = true;
  }
  if (!gzip) {
    body.head = live;
    body.bulk = text_;
    return body;
  }
  if (!deflated_) {
    deflated_ = std::make_shared<const std::string>(Deflate(*text_, Z_FINISH));
    text_crc_ = Crc32(*text_);
  }
  // Header: magic, deflate, no flags, no mtime, no extra flags, OS unknown.
  body.head = std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  body.head += Deflate(live, Z_SYNC_FLUSH);
  body.bulk = deflated_;
  const uint32_t crc = static_cast<uint32_t>(
      crc32_combine(Crc32(live), text_crc_, static_cast<z_off_t>(text_->size())));
  AppendLe32(body.tail, crc);
  AppendLe32(body.tail, static_cast<uint32_t>(live.size() + text_->size()));
  return body;
}

uint64_t Exposition::BulkRenders() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bulk_renders_;
}

}  // namespace profwatch::expose
