// Test-local ByteSource over a string: fixed read size, optional injected
// error at an offset. Kept here so the parse tests do not depend on the read
// stage's MemorySource. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "read/byte_source.h"

namespace profwatch::testing {

class StringSource final : public read::ByteSource {
 public:
  explicit StringSource(std::string data, size_t max_chunk = static_cast<size_t>(-1))
      : data_(std::move(data)), max_chunk_(max_chunk) {}

  // A Read that would reach `offset` fails with `error` (and keeps failing).
  void FailAt(size_t offset, Error error) {
    fail_at_ = offset;
    fail_error_ = std::move(error);
  }

  Result<size_t> Read(char* buf, size_t n) override {
    size_t take = std::min({n, max_chunk_, data_.size() - pos_});
    if (fail_at_ && pos_ + take >= *fail_at_ && take > 0) {
      return tl::unexpected<Error>(fail_error_);
    }
    std::memcpy(buf, data_.data() + pos_, take);
    pos_ += take;
    return take;
  }
  uint64_t RawBytesRead() const override { return pos_; }
  std::string_view Name() const override { return "<string>"; }

 private:
  std::string data_;
  size_t max_chunk_;
  size_t pos_ = 0;
  std::optional<size_t> fail_at_;
  Error fail_error_;
};

}  // namespace profwatch::testing
