// Content sniffing: a gzip stack when the first bytes are the gzip magic,
// the plain source otherwise. The peeked bytes are replayed, never lost.
#include <algorithm>
#include <cstring>

#include "read/byte_source.h"

namespace profwatch::read {
namespace {

// Returns `prefix` first, then the rest of `inner`.
class ReplaySource final : public ByteSource {
 public:
  ReplaySource(std::string prefix, std::unique_ptr<ByteSource> inner)
      : prefix_(std::move(prefix)), inner_(std::move(inner)) {}

  Result<size_t> Read(char* buf, size_t n) override {
    if (pos_ < prefix_.size()) {
      size_t count = std::min(n, prefix_.size() - pos_);
      std::memcpy(buf, prefix_.data() + pos_, count);
      pos_ += count;
      return count;
    }
    return inner_->Read(buf, n);
  }
  bool HandOverGzipChecks() override { return inner_->HandOverGzipChecks(); }
  void TakeGzipChecks(std::vector<GzipMemberCheck>& out) override { inner_->TakeGzipChecks(out); }
  // The prefix was already counted by `inner` when it was peeked.
  uint64_t RawBytesRead() const override { return inner_->RawBytesRead(); }
  std::string_view Name() const override { return inner_->Name(); }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  std::unique_ptr<ByteSource> inner_;
};

}  // namespace

std::unique_ptr<ByteSource> MakeReplaySource(std::string prefix,
                                             std::unique_ptr<ByteSource> inner) {
  return std::make_unique<ReplaySource>(std::move(prefix), std::move(inner));
}

Result<std::unique_ptr<ByteSource>> SniffAndWrap(std::unique_ptr<ByteSource> raw,
                                                 InflateBackend backend) {
  char head[2];
  size_t have = 0;
  while (have < sizeof(head)) {
    Result<size_t> got = raw->Read(head + have, sizeof(head) - have);
    if (!got) return tl::unexpected(got.error());
    if (*got == 0) break;
    have += *got;
  }
  // A lone 0x1f at EOF is taken as the start of a gzip stream still being
  // written (kTruncated from the gzip layer) rather than as plain content.
  bool gzip = have >= 1 && static_cast<uint8_t>(head[0]) == 0x1f &&
              (have == 1 || static_cast<uint8_t>(head[1]) == 0x8b);
  auto replay = MakeReplaySource(std::string(head, have), std::move(raw));
  if (gzip) return MakeGzipSource(std::move(replay), backend);
  return std::unique_ptr<ByteSource>(std::move(replay));
}

Result<std::unique_ptr<ByteSource>> OpenTraceSource(const std::string& path, InflateBackend backend,
                                                    const Confinement* confine_to) {
  auto file = OpenFileSource(path, confine_to);
  if (!file) return tl::unexpected(file.error());
  return SniffAndWrap(std::move(*file), backend);
}

}  // namespace profwatch::read
