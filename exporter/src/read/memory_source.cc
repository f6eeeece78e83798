#include <algorithm>
#include <cstring>

#include "read/byte_source.h"

namespace profwatch::read {

MemorySource::MemorySource(std::string data, std::string name)
    : data_(std::move(data)), name_(std::move(name)) {}

void MemorySource::FailAt(size_t offset, Error error) {
  has_fail_ = true;
  fail_at_ = offset;
  fail_error_ = std::move(error);
}

Result<size_t> MemorySource::Read(char* buf, size_t n) {
  if (failed_) return tl::unexpected(fail_error_);
  size_t count = std::min({n, max_chunk_, data_.size() - pos_});
  // "Crossing" includes a read at the offset itself, so FailAt(size()) injects
  // an error in place of EOF.
  if (has_fail_ && pos_ <= fail_at_ && (fail_at_ < pos_ + count || fail_at_ == pos_)) {
    failed_ = true;
    return tl::unexpected(fail_error_);
  }
  std::memcpy(buf, data_.data() + pos_, count);
  pos_ += count;
  return count;
}

}  // namespace profwatch::read
