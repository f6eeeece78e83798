#include "read/gzip_crc.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#ifdef PROFWATCH_HAVE_ISAL
#include <isa-l/crc.h>
#endif

namespace profwatch::read {

uint32_t GzipCrc32(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
#ifdef PROFWATCH_HAVE_ISAL
  return crc32_gzip_refl(crc, p, len);
#else
  // crc32_z takes a z_size_t; feed in uInt-sized pieces anyway so a 32-bit
  // z_size_t build cannot truncate.
  uLong c = crc;
  while (len > 0) {
    const size_t k = std::min<size_t>(len, UINT_MAX);
    c = crc32_z(c, p, k);
    p += k;
    len -= k;
  }
  return static_cast<uint32_t>(c);
#endif
}

const char* GzipCrc32Implementation() {
#ifdef PROFWATCH_HAVE_ISAL
  return "isal";
#else
  return "zlib";
#endif
}

}  // namespace profwatch::read
