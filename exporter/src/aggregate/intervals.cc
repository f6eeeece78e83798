#include "aggregate/intervals.h"

#include <algorithm>

namespace profwatch::aggregate {

void IntervalList::Add(int64_t start, int64_t end) {
  if (end <= start) return;
  if (!v_.empty() && start < v_.back().start) sorted_ = false;
  v_.push_back({start, end});
}

void IntervalList::Sort() {
  if (sorted_) return;
  std::stable_sort(v_.begin(), v_.end(),
                   [](const Interval& a, const Interval& b) { return a.start < b.start; });
  sorted_ = true;
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
