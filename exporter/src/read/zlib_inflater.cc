#include <zlib.h>

#include <algorithm>
#include <climits>
#include <string>

#include "read/inflater.h"

namespace profwatch::read::internal {
namespace {

class ZlibInflater final : public Inflater {
 public:
  // 15 + 16: gzip wrapper only (a zlib or raw stream is corrupt here).
  ZlibInflater() : ok_(inflateInit2(&zs_, 15 + 16) == Z_OK) {}
  ~ZlibInflater() override {
    if (ok_) inflateEnd(&zs_);
  }
  ZlibInflater(const ZlibInflater&) = delete;
  ZlibInflater& operator=(const ZlibInflater&) = delete;

  void StartMember() override {
    if (ok_) inflateReset(&zs_);
  }

  InflateStep Inflate(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_len) override {
    if (!ok_) return {InflateStep::Status::kError, 0, 0, "inflateInit2 failed (out of memory?)"};
    zs_.next_in = const_cast<Bytef*>(in);
    zs_.avail_in = static_cast<uInt>(std::min<size_t>(in_len, UINT_MAX));
    zs_.next_out = out;
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(out_len, UINT_MAX));
    uInt in_before = zs_.avail_in, out_before = zs_.avail_out;
    int rc = inflate(&zs_, Z_NO_FLUSH);
    InflateStep step;
    step.consumed = in_before - zs_.avail_in;
    step.produced = out_before - zs_.avail_out;
    switch (rc) {
      case Z_OK:
      case Z_BUF_ERROR:  // no progress possible: needs input
        step.status = InflateStep::Status::kOk;
        break;
      case Z_STREAM_END:
        step.status = InflateStep::Status::kMemberEnd;
        break;
      default:  // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR, Z_MEM_ERROR
        step.status = InflateStep::Status::kError;
        step.error = zs_.msg != nullptr ? zs_.msg : "inflate error " + std::to_string(rc);
        break;
    }
    return step;
  }

 private:
  z_stream zs_{};
  bool ok_;
};

}  // namespace

std::unique_ptr<Inflater> MakeZlibInflater() { return std::make_unique<ZlibInflater>(); }

}  // namespace profwatch::read::internal
