// Exact interval arithmetic on integer picoseconds for busy time (union of
// kernel intervals) and exposed communication (comm minus compute).
// Internal to aggregate/. Value types; not thread-safe (one owner).
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

// An append-mostly list of intervals. Appends in start order (the common case:
// one stream's kernels arrive in time order) coalesce with the last interval,
// so a busy stream of back-to-back or overlapping kernels stays small; an
// out-of-order append only marks the list for a sort at Normalize().
class IntervalList {
 public:
  // Empty intervals (end <= start) are ignored: they add no time.
  void Add(int64_t start, int64_t end);
  // Appends every interval of `other` (used to combine lists before Normalize).
  void Append(const IntervalList& other);
  // Sorts and merges into disjoint, increasing intervals (idempotent).
  void Normalize();
  // Sum of lengths. REQUIRES: Normalize() since the last Add for the exact union.
  int64_t Length() const;
  const std::vector<Interval>& intervals() const { return v_; }
  size_t size() const { return v_.size(); }
  void Clear();

 private:
  std::vector<Interval> v_;
  bool sorted_ = true;
};

// Length of a \ b. REQUIRES: both normalized.
int64_t DifferenceLength(const IntervalList& a, const IntervalList& b);

}  // namespace profwatch::aggregate
