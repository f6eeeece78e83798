// The work one trace file may cost (docs/security.md, "Budgets"): bytes read
// after decompression, bytes spilled to disk, wall time (its own and its
// window's), and a stop flag so
// the daemon can abandon a file when it shuts down. Readers call Check per
// chunk (JSON, xplane), per SQLite progress tick (nsys) or per spill write;
// the first limit passed makes every later call fail with the same kOverBudget
// error, so a reader stops within one chunk or tick of it.
//
// Thread-safety: every method may be called from any thread (the parsing
// thread and the aggregator on it; a read-ahead thread may share it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "core/caps.h"
#include "core/result.h"

namespace profwatch {

struct FileLimits {
  // Bytes a file may yield to its parser (decompressed: a gzip bomb is
  // counted by what it inflates to; an SQLite export by its size), and,
  // separately, bytes of intervals it may spill to disk. 0: no limit.
  uint64_t max_bytes = static_cast<uint64_t>(caps::kFileBytes.value);
  // Wall time from the start of the file's read. 0: no limit. Measured on
  // steady_clock inside the reader: it bounds work, it is not policy time.
  std::chrono::nanoseconds max_time = std::chrono::seconds(caps::kFileSeconds.value);
  // Wall time of the whole window the file belongs to, from the start of
  // the window's analysis (AnalyzeFiles sets `window_deadline` from it): every
  // file of a window stops there, whatever its own budget has left, so a
  // window of many files that each stay within their budget still ends.
  // 0: no limit.
  std::chrono::nanoseconds window_max_time{0};
  std::chrono::steady_clock::time_point window_deadline =
      std::chrono::steady_clock::time_point::max();
  // Set by the owner to abandon the read (daemon shutdown); may be null.
  const std::atomic<bool>* stop = nullptr;
};

class FileBudget {
 public:
  explicit FileBudget(FileLimits limits = {});

  // Charges `n` bytes read (decompressed), then Check.
  Status AddRead(uint64_t n);
  // Charges `n` bytes about to be spilled, then Check. On an error nothing
  // should be written.
  Status AddSpill(uint64_t n);
  // kOverBudget once a limit is passed or the stop flag is set; the same
  // error on every later call.
  Status Check();
  // Whether a limit was passed (or the read stopped) so far.
  bool exceeded() const { return exceeded_.load(std::memory_order_relaxed); }

 private:
  Status Trip(std::string why);

  FileLimits limits_;
  std::chrono::steady_clock::time_point deadline_;
  std::atomic<uint64_t> read_{0};
  std::atomic<uint64_t> spill_{0};
  std::atomic<bool> exceeded_{false};
  mutable std::mutex mu_;
  std::optional<Error> error_;  // under mu_
};

}  // namespace profwatch
