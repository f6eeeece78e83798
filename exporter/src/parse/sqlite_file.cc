// See sqlite_file.h.
#include "parse/sqlite_file.h"

#include <cstdio>

namespace profwatch::parse::sqlite {

std::string ImmutableFileUri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#' || static_cast<unsigned char>(c) < 0x21) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      uri += buf;
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

ErrorCode CodeOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
      return ErrorCode::kCorrupt;
    case SQLITE_CANTOPEN:
      return ErrorCode::kNotFound;
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return ErrorCode::kPermission;
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG:
      return ErrorCode::kTooLarge;
    default:
      return ErrorCode::kIo;
  }
}

}  // namespace profwatch::parse::sqlite
