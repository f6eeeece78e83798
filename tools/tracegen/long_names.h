// profwatch-tracegen `long-names`: a PyTorch Kineto trace that a hostile
// user of a shared cluster could write: `names` distinct kernel names of
// `name_bytes` bytes each (a unique prefix, then filler), one launch each
// on `gpus` devices in turn, every launch `kernel_us` long and alone on
// its device. Highly compressible: 600 names of 1 MiB are 600 MB of JSON
// in well under 1 MB of gzip. Deterministic; no randomness.
#pragma once

#include <cstdint>
#include <string>

namespace profwatch::tracegen {

struct LongNamesParams {
  int64_t names = 600;
  int64_t name_bytes = int64_t{1} << 20;
  int gpus = 1;
  int64_t kernel_us = 10;
};

// What a correct reader finds: launches and their summed time.
struct LongNamesTruth {
  int64_t launches = 0;
  int64_t kernel_ps = 0;
  uint64_t uncompressed_bytes = 0;
};

// Writes the gzip-compressed trace to `path`.
bool WriteLongNamesTrace(const LongNamesParams& p, const std::string& path, LongNamesTruth* truth,
                         std::string* error);

// The `index`-th name (exactly `name_bytes` bytes, at least the prefix).
std::string LongKernelName(int64_t index, int64_t name_bytes);

}  // namespace profwatch::tracegen
