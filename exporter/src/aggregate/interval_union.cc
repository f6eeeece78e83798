#include "aggregate/interval_union.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace profwatch::aggregate {

void IntervalList::Add(int64_t start, int64_t end) {
  if (end <= start) return;
  if (!v_.empty()) {
    Interval& last = v_.back();
    if (start >= last.start) {
      if (start <= last.end) {
        last.end = std::max(last.end, end);
        return;
      }
    } else {
      sorted_ = false;
    }
  }
  v_.push_back({start, end});
}

void IntervalList::Append(const IntervalList& other) {
  for (const Interval& i : other.v_) Add(i.start, i.end);
}

void IntervalList::Normalize() {
  if (!sorted_) {
    std::sort(v_.begin(), v_.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    sorted_ = true;
  }
  size_t out = 0;
  for (size_t i = 0; i < v_.size(); ++i) {
    if (out > 0 && v_[i].start <= v_[out - 1].end) {
      v_[out - 1].end = std::max(v_[out - 1].end, v_[i].end);
    } else {
      v_[out++] = v_[i];
    }
  }
  v_.resize(out);
}

int64_t IntervalList::Length() const {
  int64_t total = 0;
  for (const Interval& i : v_) total += i.end - i.start;
  return total;
}

void IntervalList::Clear() {
  std::vector<Interval>().swap(v_);
  sorted_ = true;
}

int64_t DifferenceLength(const IntervalList& a, const IntervalList& b) {
  const auto& av = a.intervals();
  const auto& bv = b.intervals();
  int64_t total = 0;
  size_t j = 0;
  for (const Interval& x : av) {
    int64_t cur = x.start;
    // Skip b intervals entirely before the current point.
    while (j < bv.size() && bv[j].end <= cur) ++j;
    size_t k = j;
    while (cur < x.end) {
      if (k >= bv.size() || bv[k].start >= x.end) {
        total += x.end - cur;
        break;
      }
      if (bv[k].start > cur) total += bv[k].start - cur;
      cur = std::max(cur, bv[k].end);
      ++k;
    }
  }
  return total;
}

}  // namespace profwatch::aggregate
