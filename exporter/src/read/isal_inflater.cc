// ISA-L backend (only with PROFWATCH_HAVE_ISAL). crc_flag = ISAL_GZIP makes
// isal_inflate parse the gzip header and verify CRC32 and ISIZE, matching
// zlib's checks.
#include <algorithm>
#include <climits>

#include "read/inflater.h"

#ifdef PROFWATCH_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace profwatch::read::internal {

#ifdef PROFWATCH_HAVE_ISAL
namespace {

std::string IsalErrorName(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK:
      return "invalid deflate block";
    case ISAL_INVALID_SYMBOL:
      return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK:
      return "invalid lookback distance";
    case ISAL_INVALID_WRAPPER:
      return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD:
      return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM:
      return "incorrect checksum";
    case ISAL_NEED_DICT:
      return "needs a dictionary";
    default:
      return "isal_inflate error " + std::to_string(rc);
  }
}

class IsalInflater final : public Inflater {
 public:
  IsalInflater() { StartMember(); }

  void StartMember() override {
    isal_inflate_init(state_.get());
    state_->crc_flag = ISAL_GZIP;
  }

  InflateStep Inflate(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_len) override {
    inflate_state& s = *state_;
    s.next_in = const_cast<uint8_t*>(in);
    s.avail_in = static_cast<uint32_t>(std::min<size_t>(in_len, UINT32_MAX));
    s.next_out = out;
    s.avail_out = static_cast<uint32_t>(std::min<size_t>(out_len, UINT32_MAX));
    uint32_t in_before = s.avail_in, out_before = s.avail_out;
    int rc = isal_inflate(&s);
    InflateStep step;
    step.consumed = in_before - s.avail_in;
    step.produced = out_before - s.avail_out;
    if (rc < 0 || rc == ISAL_NEED_DICT) {
      step.status = InflateStep::Status::kError;
      step.error = IsalErrorName(rc);
    } else if (s.block_state == ISAL_BLOCK_FINISH) {
      step.status = InflateStep::Status::kMemberEnd;
    }
    return step;
  }

  bool PartialTrailerShowsBadCrc() const override {
    // In ISAL_CHECKSUM_CHECK the deflate data is complete, all output has been
    // flushed (the caller only asks once Inflate stopped producing) and the
    // trailer bytes seen so far wait in tmp_in_buffer (public header fields).
    const inflate_state& s = *state_;
    if (s.block_state != ISAL_CHECKSUM_CHECK || s.tmp_in_size < 4) return false;
    uint32_t stored = static_cast<uint32_t>(s.tmp_in_buffer[0]) |
                      static_cast<uint32_t>(s.tmp_in_buffer[1]) << 8 |
                      static_cast<uint32_t>(s.tmp_in_buffer[2]) << 16 |
                      static_cast<uint32_t>(s.tmp_in_buffer[3]) << 24;
    return stored != s.crc;
  }

 private:
  // inflate_state holds ~100 KB of tables and buffers: keep it off the stack.
  std::unique_ptr<inflate_state> state_ = std::make_unique<inflate_state>();
};

}  // namespace

std::unique_ptr<Inflater> MakeIsalInflater() { return std::make_unique<IsalInflater>(); }
#else
std::unique_ptr<Inflater> MakeIsalInflater() { return nullptr; }
#endif

}  // namespace profwatch::read::internal
