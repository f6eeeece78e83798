// The kernel intervals of one (device, kernel name), kept as they came: the
// per-device sweep (device_sweep.h) counts how many kernels run at each
// instant, and the PyTorch region of a kernel depends on its own bounds
// (region.h), so intervals are neither merged nor joined.
// Internal to aggregate/. Value type; not thread-safe (one owner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace profwatch::aggregate {

// Half-open [start, end), 16 bytes.
struct Interval {
  int64_t start = 0;
  int64_t end = 0;
};

class IntervalList {
 public:
  // Empty intervals (end <= start) are ignored: they add no time and take no
  // part in the sweep.
  void Add(int64_t start, int64_t end);
  // Sorts by start (stable for equal starts); idempotent.
  void Sort();
  // Sum of lengths (overlaps counted each time).
  int64_t Total() const;
  const std::vector<Interval>& intervals() const { return v_; }
  size_t size() const { return v_.size(); }
  void Clear();

 private:
  std::vector<Interval> v_;
  bool sorted_ = true;
};

}  // namespace profwatch::aggregate
