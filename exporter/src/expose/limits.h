// The expose stage's fixed bounds, in one place (issue 62).
//
// Thread-safety: constants.
#pragma once

#include <cstddef>

namespace profwatch::expose {

// Longest label value in bytes; longer ones are cut (on a UTF-8 boundary)
// and counted in profwatch_label_values_rewritten{reason="too_long"}.
inline constexpr size_t kMaxLabelValueBytes = 256;
// The most bytes read of a /proc file (process_collectable.cc): /proc files
// report size 0, so they are read until EOF; the cap guards against a
// misdirected proc_root.
inline constexpr size_t kMaxProcFileBytes = 1 << 20;

}  // namespace profwatch::expose
