#include "aggregate/device_sweep.h"

#include <algorithm>

namespace profwatch::aggregate {

DeviceSweep::DeviceSweep(std::vector<uint8_t> is_comm,
                         std::function<bool(uint32_t, uint32_t)> name_less)
    : is_comm_(std::move(is_comm)),
      name_less_(std::move(name_less)),
      exclusive_(is_comm_.size(), 0),
      idle_before_(is_comm_.size(), 0) {}

void DeviceSweep::SetCollectiveKinds(std::vector<uint8_t> kind_by_tag) {
  collective_kind_ = std::move(kind_by_tag);
}

void DeviceSweep::Charge(int64_t to) {
  if (to <= now_) return;
  const int64_t len = to - now_;
  if (running_.size() == 1) {
    exclusive_[running_.front().tag] += len;
    totals_.exclusive += len;
  } else if (running_.size() > 1) {
    totals_.overlapped += len;
  } else {
    totals_.idle += len;
  }
  if (compute_running_ > 0) {
    totals_.compute_busy += len;
  } else if (comm_running_ > 0) {
    totals_.exposed_comm += len;
    for (size_t k = 0; k < kCollectiveKinds; ++k) {
      if (collective_running_[k] > 0) totals_.exposed_by_collective[k] += len;
    }
  }
  now_ = to;
}

void DeviceSweep::AdvanceTo(int64_t to) {
  while (!running_.empty() && running_.front().end <= to) {
    Charge(running_.front().end);
    const uint32_t tag = running_.front().tag;
    std::pop_heap(running_.begin(), running_.end(), std::greater<>());
    running_.pop_back();
    --(is_comm_[tag] ? comm_running_ : compute_running_);
    CountCollective(tag, -1);
  }
  Charge(to);
}

void DeviceSweep::Add(int64_t start, int64_t end, uint32_t tag) {
  if (end <= start) return;
  if (!started_) {
    started_ = true;
    now_ = start;
  }
  const int64_t idle_so_far = totals_.idle;
  AdvanceTo(start);
  if (const int64_t gap = totals_.idle - idle_so_far; gap > 0) {
    if (gaps_.size() < kLargestGaps || gap > gaps_.front()) {
      gaps_.push_back(gap);
      std::push_heap(gaps_.begin(), gaps_.end(), std::greater<>());
      if (gaps_.size() > kLargestGaps) {
        std::pop_heap(gaps_.begin(), gaps_.end(), std::greater<>());
        gaps_.pop_back();
      }
    }
    gap_ = gap;
    gap_end_ = start;
    gap_owner_ = tag;
    idle_before_[tag] += gap;
  } else if (gap_ > 0 && gap_end_ == start && name_less_(tag, gap_owner_)) {
    // Another kernel starts where the gap ended: the smallest name takes it.
    idle_before_[gap_owner_] -= gap_;
    idle_before_[tag] += gap_;
    gap_owner_ = tag;
  }
  running_.push_back(Running{end, tag});
  std::push_heap(running_.begin(), running_.end(), std::greater<>());
  ++(is_comm_[tag] ? comm_running_ : compute_running_);
  CountCollective(tag, +1);
}

SweepTotals DeviceSweep::Finish() {
  while (!running_.empty()) AdvanceTo(running_.front().end);
  totals_.busy = totals_.exclusive + totals_.overlapped;
  totals_.largest_gaps = gaps_;
  std::sort(totals_.largest_gaps.begin(), totals_.largest_gaps.end(), std::greater<>());
  return totals_;
}

}  // namespace profwatch::aggregate
