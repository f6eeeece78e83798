// Content sniffing of decompressed trace bytes (see sniff.h).
#include "parse/sniff.h"

#include <cstdint>

#include "parse/rocprof_reader.h"

namespace profwatch::parse {

FileFormat SniffFormat(std::string_view head) {
  size_t i = 0;
  // A UTF-8 byte order mark is tolerated before JSON (Python's json accepts it
  // from bytes).
  if (head.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) {
    ++i;
  }
  if (i < head.size() && (head[i] == '{' || head[i] == '[')) {
    return LooksLikeRocprofJson(head) ? FileFormat::kRocprofJson : FileFormat::kJson;
  }
  if (head.starts_with(std::string_view{"SQLite format 3\0", 16})) return FileFormat::kSqlite;

  // XSpace: the first field is planes(1), errors(2), warnings(3) or
  // hostnames(4), all length-delimited (wire type 2), so the first byte is the
  // tag 0x0a/0x12/0x1a/0x22 followed by a varint length.
  if (head.empty()) return FileFormat::kUnknown;
  const auto tag = static_cast<uint8_t>(head[0]);
  if (tag != 0x0a && tag != 0x12 && tag != 0x1a && tag != 0x22) return FileFormat::kUnknown;
  // Validate the varint length as far as `head` reaches (at most 10 bytes).
  for (size_t k = 1; k < head.size() && k <= 10; ++k) {
    if ((static_cast<uint8_t>(head[k]) & 0x80) == 0) return FileFormat::kXplane;
  }
  // The varint did not end within 10 bytes: not protobuf. A head too short to
  // tell is given the benefit of the doubt.
  return head.size() > 10 ? FileFormat::kUnknown : FileFormat::kXplane;
}

}  // namespace profwatch::parse
