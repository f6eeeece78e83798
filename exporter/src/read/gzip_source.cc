// Gzip layer: streams members through an Inflater with a fixed 256 KiB input
// buffer (memory does not grow with the file).
//
// End-of-stream policy (same for every backend, decided here):
// - several concatenated members are one stream (gzip(1) semantics);
// - input that ends inside a member, or an empty input, is kTruncated: with
//   files written in place this is usually a writer that has not finished;
// - after a complete member, zero bytes up to EOF are padding and ignored
//   (gzip(1) says "trailing zero bytes ignored"); any other trailing bytes are
//   decoded as the next member's header, so non-gzip garbage is kCorrupt
//   (where gzip(1) only warns "trailing garbage ignored"): a reader that
//   silently ignored it could hide a file overwritten by something else.
// The fixed start of every member (magic 1f 8b, method 8, no reserved flag
// bits) is checked here byte by byte before the inflater sees it: ISA-L only
// looks at a header once all of it has arrived and ignores reserved flags, so
// without this check a short non-gzip input would be kTruncated under ISA-L
// and kCorrupt under zlib.
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "read/byte_source.h"
#include "read/inflater.h"

namespace profwatch::read {
namespace {

constexpr size_t kInputBufferSize = 256 * 1024;

class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> inner, std::unique_ptr<internal::Inflater> inflater,
             std::string_view backend)
      : inner_(std::move(inner)),
        inflater_(std::move(inflater)),
        backend_(backend),
        in_(kInputBufferSize) {}

  bool HandOverGzipChecks() override {
    if (state_ != State::kStart || in_len_ != 0 || !inflater_->SkipDataCheck()) return false;
    hand_over_ = true;
    return true;
  }

  void TakeGzipChecks(std::vector<GzipMemberCheck>& out) override {
    for (GzipMemberCheck& c : checks_) out.push_back(std::move(c));
    checks_.clear();
  }

  Result<size_t> Read(char* buf, size_t n) override {
    if (error_) return tl::unexpected(*error_);
    if (done_) return size_t{0};
    uint8_t* out = reinterpret_cast<uint8_t*>(buf);
    for (;;) {
      if (in_pos_ == in_len_ && !inner_eof_) {
        if (auto filled = Fill(); !filled) return tl::unexpected(*error_);
      }
      if (state_ != State::kInMember) {
        // Start of stream or between members.
        if (state_ == State::kBetween) {
          while (in_pos_ < in_len_ && in_[in_pos_] == 0) {
            ++in_pos_;
            saw_padding_ = true;
          }
        }
        if (in_pos_ < in_len_) {
          if (saw_padding_) {
            return Fail(ErrorCode::kCorrupt,
                        "non-zero byte after the zero padding that follows a "
                        "gzip member");
          }
          inflater_->StartMember();
          state_ = State::kInMember;
          member_start_ = in_base_ + in_pos_;
          header_checked_ = 0;
          continue;
        }
        if (!inner_eof_) continue;
        if (state_ == State::kStart) {
          return Fail(ErrorCode::kTruncated, "empty gzip stream (file still being written?)");
        }
        done_ = true;
        return size_t{0};
      }
      if (header_checked_ < 4) {
        if (auto bad = CheckHeaderPrefix()) return Fail(ErrorCode::kCorrupt, *bad);
      }
      internal::InflateStep step =
          inflater_->Inflate(in_.data() + in_pos_, in_len_ - in_pos_, out, n);
      in_pos_ += step.consumed;
      out_total_ += step.produced;
      switch (step.status) {
        case internal::InflateStep::Status::kError:
          return Fail(ErrorCode::kCorrupt, "invalid gzip data: " + step.error);
        case internal::InflateStep::Status::kMemberEnd:
          if (hand_over_) HandOverMemberEnd();
          state_ = State::kBetween;
          saw_padding_ = false;
          break;
        case internal::InflateStep::Status::kOk:
          if (step.produced == 0 && step.consumed == 0) {
            if (in_pos_ < in_len_) {
              // Input and output space but no progress: never expected from
              // either library; fail rather than spin.
              return Fail(ErrorCode::kCorrupt, "inflate made no progress");
            }
            if (inner_eof_) {
              if (hand_over_) HandOverPartialTrailer();
              if (inflater_->PartialTrailerShowsBadCrc()) {
                return Fail(ErrorCode::kCorrupt, "invalid gzip data: incorrect data check");
              }
              return Fail(ErrorCode::kTruncated,
                          "gzip stream ends before its trailer (file still being written?)");
            }
          }
          break;
      }
      if (step.produced > 0) return step.produced;
    }
  }

  uint64_t RawBytesRead() const override { return inner_->RawBytesRead(); }
  std::string_view Name() const override { return inner_->Name(); }

 private:
  enum class State { kStart, kInMember, kBetween };

  // The check of the member whose trailer ends at the current input position.
  void HandOverMemberEnd() {
    const uint64_t end = in_base_ + in_pos_;
    GzipMemberCheck c;
    c.end = out_total_;
    c.crc = InputWord(end - 8);
    c.isize = InputWord(end - 4);
    c.crc_error_raw = RawAfterReading(end - 5);  // zlib's CRC-32 check ends there
    c.length_error_raw = inner_->RawBytesRead();
    // Where zlib's own checks would have stopped: after the CRC-32, after ISIZE.
    c.crc_error = Context(end - 4, "invalid gzip data: incorrect data check");
    c.length_error = Context(end, "invalid gzip data: incorrect length check");
    checks_.push_back(std::move(c));
  }

  // At the end of the input inside a member: if its trailer's CRC-32 arrived,
  // the reader decides between truncated (it matches) and corrupt.
  void HandOverPartialTrailer() {
    const int present = inflater_->TrailerBytesAtEnd();
    if (present < 4) return;
    const uint64_t trailer = in_base_ + in_len_ - static_cast<uint64_t>(present);
    GzipMemberCheck c;
    c.end = out_total_;
    c.complete = false;
    c.crc = InputWord(trailer);
    c.crc_error_raw = RawAfterReading(trailer + 3);
    c.crc_error = Context(trailer + 4, "invalid gzip data: incorrect data check");
    checks_.push_back(std::move(c));
  }

  // The little-endian word at compressed offset `at`, at most 8 bytes before
  // the end of the input read so far (a trailer may straddle two reads).
  uint32_t InputWord(uint64_t at) const {
    uint32_t w = 0;
    for (int i = 3; i >= 0; --i) {
      const uint64_t abs = at + static_cast<uint64_t>(i);
      const uint8_t b = abs >= in_base_ ? in_[abs - in_base_] : tail_[8 - (in_base_ - abs)];
      w = (w << 8) | b;
    }
    return w;
  }

  // RawBytesRead() as of the read that brought compressed offset `at` (one of
  // the last 8 read), where the gzip layer would have stopped with an error.
  uint64_t RawAfterReading(uint64_t at) const {
    for (size_t i = fills_.size(); i-- > 0;) {
      if (fills_[i].first <= at) return fills_[i].second;
    }
    return inner_->RawBytesRead();
  }

  bool Fill() {
    // Keep the last 8 bytes before the next buffer's first (see InputWord).
    for (size_t i = in_len_ > 8 ? in_len_ - 8 : 0; i < in_len_; ++i) {
      std::memmove(tail_, tail_ + 1, sizeof tail_ - 1);
      tail_[sizeof tail_ - 1] = in_[i];
    }
    in_base_ += in_len_;
    in_pos_ = in_len_ = 0;
    Result<size_t> got = inner_->Read(reinterpret_cast<char*>(in_.data()), in_.size());
    if (!got) {
      error_ = got.error();  // the inner layer already names the file
      return false;
    }
    if (*got == 0) inner_eof_ = true;
    in_len_ = *got;
    if (hand_over_ && in_len_ > 0) {
      // Enough reads to hold a trailer, even of 1-byte reads (RawAfterReading).
      if (fills_.size() == 9) fills_.erase(fills_.begin());
      fills_.emplace_back(in_base_, inner_->RawBytesRead());
    }
    return true;
  }

  // Checks the not yet checked bytes of the member's first four that are in
  // the buffer. Returns the problem, or nullopt.
  std::optional<std::string> CheckHeaderPrefix() {
    while (header_checked_ < 4) {
      uint64_t abs = member_start_ + header_checked_;
      if (abs >= in_base_ + in_len_) return std::nullopt;  // not arrived yet
      uint8_t b = in_[abs - in_base_];
      switch (header_checked_) {
        case 0:
        case 1:
          if (b != (header_checked_ == 0 ? 0x1f : 0x8b)) {
            in_pos_ = abs - in_base_;
            return "not a gzip member (bad magic)";
          }
          break;
        case 2:
          if (b != 8) {
            in_pos_ = abs - in_base_;
            return "unknown gzip compression method " + std::to_string(b);
          }
          break;
        case 3:
          if ((b & 0xe0) != 0) {
            in_pos_ = abs - in_base_;
            return "reserved gzip header flags set";
          }
          break;
      }
      ++header_checked_;
    }
    return std::nullopt;
  }

  std::string Context(uint64_t offset, const std::string& what) const {
    return std::string(inner_->Name()) + ": compressed offset " + std::to_string(offset) + ": " +
           what + " [" + backend_ + "]";
  }

  tl::unexpected<Error> Fail(ErrorCode code, const std::string& what) {
    error_ = Error{code, Context(in_base_ + in_pos_, what)};
    return tl::unexpected(*error_);
  }

  std::unique_ptr<ByteSource> inner_;
  std::unique_ptr<internal::Inflater> inflater_;
  std::string backend_;
  std::vector<uint8_t> in_;
  size_t in_pos_ = 0;
  size_t in_len_ = 0;
  uint64_t in_base_ = 0;  // compressed offset of in_[0]
  bool inner_eof_ = false;
  State state_ = State::kStart;
  bool saw_padding_ = false;
  uint64_t member_start_ = 0;  // compressed offset of the current member
  int header_checked_ = 4;     // bytes of the member's fixed prefix checked
  bool done_ = false;
  std::optional<Error> error_;
  uint64_t out_total_ = 0;  // bytes inflated so far
  uint8_t tail_[8] = {};    // the 8 compressed bytes before in_[0]
  bool hand_over_ = false;  // HandOverGzipChecks: members' checks go to the reader
  std::vector<GzipMemberCheck> checks_;
  std::vector<std::pair<uint64_t, uint64_t>> fills_;  // (offset, RawBytesRead) of the last reads
};

}  // namespace

bool IsalAvailable() {
#ifdef PROFWATCH_HAVE_ISAL
  return true;
#else
  return false;
#endif
}

InflateBackend DefaultInflateBackend() {
  return IsalAvailable() ? InflateBackend::kIsal : InflateBackend::kZlib;
}

std::string_view InflateBackendName(InflateBackend backend) {
  return backend == InflateBackend::kIsal ? "isal" : "zlib";
}

Result<InflateBackend> ParseInflateBackend(std::string_view name) {
  if (name == "zlib") return InflateBackend::kZlib;
  if (name == "isal") {
    if (IsalAvailable()) return InflateBackend::kIsal;
    return MakeError(ErrorCode::kConfig,
                     "inflate backend \"isal\" is not available: built without ISA-L "
                     "(install libisal-dev and rebuild)");
  }
  return MakeError(ErrorCode::kConfig,
                   "unknown inflate backend \"" + std::string(name) + "\" (expected zlib or isal)");
}

std::unique_ptr<ByteSource> MakeGzipSource(std::unique_ptr<ByteSource> inner,
                                           InflateBackend backend) {
  if (backend == InflateBackend::kIsal) {
    if (auto isal = internal::MakeIsalInflater()) {
      return std::make_unique<GzipSource>(std::move(inner), std::move(isal), "isal");
    }
    // Not compiled in: ParseInflateBackend refuses "isal" then, so only a
    // direct caller gets here; zlib gives the same bytes and error classes.
  }
  return std::make_unique<GzipSource>(std::move(inner), internal::MakeZlibInflater(), "zlib");
}

}  // namespace profwatch::read
