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
    if (!ok_) return;
    inflateReset(&zs_);
    if (skip_data_check_) {
      inflateValidate(&zs_, 1);  // on for the header (its FHCRC), off after it
      in_header_ = true;
    }
  }

  bool SkipDataCheck() override {
    skip_data_check_ = ok_;
    return skip_data_check_;
  }

  // Probes a copy of the stream with zero bytes: with the check off it ends
  // once the 8 trailer bytes are in, whatever their values, so the number fed
  // tells how many were missing. Data that had not ended needs more than 8.
  int TrailerBytesAtEnd() override {
    if (!ok_ || !skip_data_check_ || in_header_) return -1;
    z_stream probe{};
    if (inflateCopy(&probe, &zs_) != Z_OK) return -1;
    int present = -1;
    Bytef zero = 0, out = 0;
    for (int fed = 1; fed <= 9; ++fed) {
      probe.next_in = &zero;
      probe.avail_in = 1;
      probe.next_out = &out;
      probe.avail_out = 1;
      const int rc = inflate(&probe, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        present = 8 - fed;
        break;
      }
      if ((rc != Z_OK && rc != Z_BUF_ERROR) || probe.avail_out == 0) break;  // still data
    }
    inflateEnd(&probe);
    return present;
  }

  InflateStep Inflate(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_len) override {
    if (!ok_) return {InflateStep::Status::kError, 0, 0, "inflateInit2 failed (out of memory?)"};
    zs_.next_in = const_cast<Bytef*>(in);
    zs_.avail_in = static_cast<uInt>(std::min<size_t>(in_len, UINT_MAX));
    zs_.next_out = out;
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(out_len, UINT_MAX));
    uInt in_before = zs_.avail_in, out_before = zs_.avail_out;
    // Z_BLOCK stops right after a member's header, where the data check goes off.
    int rc = inflate(&zs_, in_header_ ? Z_BLOCK : Z_NO_FLUSH);
    if (in_header_ && rc == Z_OK && (zs_.data_type & 128) != 0) {
      inflateValidate(&zs_, 0);
      in_header_ = false;
    }
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
  bool skip_data_check_ = false;
  bool in_header_ = false;  // skip_data_check_: the member's header is not done
};

}  // namespace

std::unique_ptr<Inflater> MakeZlibInflater() { return std::make_unique<ZlibInflater>(); }

}  // namespace profwatch::read::internal
