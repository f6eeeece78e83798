// The git revision the binary was built from (12 hex digits), or "unknown"
// when the sources were not a git checkout. Written at build time, not at
// configure time, so it follows every commit (see cmake/write_revision.cmake).
#pragma once

namespace profwatch {

const char* BuildRevision();

}  // namespace profwatch
