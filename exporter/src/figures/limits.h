// The figures stage's fixed bounds, in one place (issue 62).
//
// Thread-safety: constants.
#pragma once

#include <cstddef>

namespace profwatch::figures {

// Longest kernel label value in bytes (cut on a UTF-8 character boundary).
inline constexpr size_t kMaxKernelLabelBytes = 128;

}  // namespace profwatch::figures
