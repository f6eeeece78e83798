#include "read/gzip_check.h"

#include <string>
#include <string_view>

#include "read/gzip_crc.h"

namespace profwatch::read {

void GzipMemberChecker::Check(const char* data, uint64_t out_before,
                              const std::vector<GzipMemberCheck>& checks, size_t& len, bool& eof,
                              std::optional<Error>& error, uint64_t& raw_after) {
  size_t at = 0;
  auto digest = [&](size_t to) {
    crc_ = GzipCrc32(crc_, data + at, to - at);
    len_ += to - at;
    at = to;
  };
  for (const GzipMemberCheck& c : checks) {
    digest(static_cast<size_t>(c.end - out_before));
    const bool crc_ok = crc_ == c.crc;
    if (c.complete) {
      if (!crc_ok || static_cast<uint32_t>(len_) != c.isize) {
        len = at;
        eof = false;
        error = Error{ErrorCode::kCorrupt, crc_ok ? c.length_error : c.crc_error};
        raw_after = crc_ok ? c.length_error_raw : c.crc_error_raw;
        return;
      }
      crc_ = 0;
      len_ = 0;
    } else if (!crc_ok && error) {
      error = Error{ErrorCode::kCorrupt, c.crc_error};  // truncated, but already wrong
      raw_after = c.crc_error_raw;
    }
  }
  digest(len);
}

namespace {

class GzipCheckSource final : public ByteSource {
 public:
  explicit GzipCheckSource(std::unique_ptr<ByteSource> inner)
      : inner_(std::move(inner)), raw_(inner_->RawBytesRead()) {}

  Result<size_t> Read(char* buf, size_t n) override {
    if (terminal_error_) return tl::unexpected(*terminal_error_);
    if (terminal_eof_) return size_t{0};
    Result<size_t> got = inner_->Read(buf, n);
    checks_.clear();
    inner_->TakeGzipChecks(checks_);
    size_t len = got ? *got : 0;
    bool eof = got && *got == 0;
    std::optional<Error> error;
    if (!got) error = got.error();
    uint64_t raw_after = inner_->RawBytesRead();
    checker_.Check(buf, out_, checks_, len, eof, error, raw_after);
    out_ += len;
    raw_ = raw_after;
    if (error) {
      terminal_error_ = std::move(error);
      // The bytes up to the failing member's end first, the error next.
      if (len > 0) return len;
      return tl::unexpected(*terminal_error_);
    }
    if (eof) terminal_eof_ = true;
    return len;
  }

  uint64_t RawBytesRead() const override { return raw_; }
  std::string_view Name() const override { return inner_->Name(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  GzipMemberChecker checker_;
  std::vector<GzipMemberCheck> checks_;
  uint64_t out_ = 0;  // bytes returned so far
  uint64_t raw_ = 0;
  bool terminal_eof_ = false;
  std::optional<Error> terminal_error_;
};

}  // namespace

std::unique_ptr<ByteSource> MakeGzipCheckSource(std::unique_ptr<ByteSource> inner) {
  if (!inner->HandOverGzipChecks()) return inner;
  return std::make_unique<GzipCheckSource>(std::move(inner));
}

}  // namespace profwatch::read
