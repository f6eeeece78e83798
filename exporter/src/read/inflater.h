// Internal to read/: one gzip member decoder behind a small interface, so the
// zlib and ISA-L backends share gzip_source.cc's member/padding/EOF logic and
// therefore classify every input the same way. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace profwatch::read::internal {

struct InflateStep {
  enum class Status { kOk, kMemberEnd, kError };
  Status status = Status::kOk;
  size_t consumed = 0;  // input bytes used (for kMemberEnd: up to the trailer end)
  size_t produced = 0;  // output bytes written
  std::string error;    // kError: the library's message
};

class Inflater {
 public:
  virtual ~Inflater() = default;
  // Prepares for a new gzip member (header included). Called before the first
  // member and after every kMemberEnd that is followed by more input.
  virtual void StartMember() = 0;
  // Decodes from `in` into `out`. kOk with nothing consumed nor produced means
  // "needs more input". REQUIRES: out_len > 0.
  virtual InflateStep Inflate(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_len) = 0;
  // Called when the input ended inside a member: true when the part of the
  // trailer that did arrive already proves the data corrupt (a CRC32 that
  // does not match). zlib checks the CRC as soon as its 4 bytes arrive, ISA-L
  // only once all 8 trailer bytes are there; this keeps them in agreement.
  virtual bool PartialTrailerShowsBadCrc() const { return false; }

  // Stops computing and checking the CRC-32 and length of members' data (the
  // header's own CRC is still checked): the caller checks them from the
  // trailer. False when the backend cannot. Call before the first member.
  virtual bool SkipDataCheck() { return false; }
  // With SkipDataCheck, when the input ended inside a member: how many of its
  // 8 trailer bytes arrived, or -1 when its compressed data did not end.
  virtual int TrailerBytesAtEnd() { return -1; }
};

std::unique_ptr<Inflater> MakeZlibInflater();
// nullptr when ISA-L was not compiled in.
std::unique_ptr<Inflater> MakeIsalInflater();

}  // namespace profwatch::read::internal
