#include "aggregate/intervals.h"

#include <algorithm>

namespace profwatch::aggregate {

void IntervalList::Add(int64_t start, int64_t end) {
  if (end <= start) return;
  if (!v_.empty()) {
    Interval& last = v_.back();
    if (start == last.end) {
      last.end = end;
      return;
    }
    if (start < last.start) sorted_ = false;
  }
  v_.push_back({start, end});
}

void IntervalList::Sort() {
  if (!sorted_) {
    std::stable_sort(v_.begin(), v_.end(),
                     [](const Interval& a, const Interval& b) { return a.start < b.start; });
    sorted_ = true;
  }
  size_t out = 0;
  for (size_t i = 0; i < v_.size(); ++i) {
    if (out > 0 && v_[i].start == v_[out - 1].end) {
      v_[out - 1].end = v_[i].end;
    } else {
      v_[out++] = v_[i];
    }
  }
  v_.resize(out);
}

int64_t IntervalList::Total() const {
  int64_t total = 0;
  for (const Interval& i : v_) total += i.end - i.start;
  return total;
}

void IntervalList::Clear() {
  std::vector<Interval>().swap(v_);
  sorted_ = true;
}

}  // namespace profwatch::aggregate
