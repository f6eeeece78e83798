// The one pass over a device's kernels that yields every time figure of the
// device: busy, exposed communication, compute busy, exclusive, overlapped
// and idle time, and per kernel name its exclusive and idle-before time.
//
// Definitions (issue #22; tests assert them): kernels of every stream are
// taken in start order; zero-length kernels take no part.
//  - exclusive: time when exactly one kernel runs, charged to that kernel;
//  - overlapped: time when two or more run;
//  - idle: time when none runs, between the first start and the last end;
//  - idle-before: each idle gap is charged to the kernel that starts at the
//    instant the gap ends; of several, to the one with the smallest name;
//  - compute busy: time when a non-communication kernel runs;
//  - exposed communication: time when a communication kernel runs and no
//    compute kernel does; busy = exclusive + overlapped;
//  - largest gaps: the lengths of the kLargestGaps longest idle gaps, longest
//    first (where a window's step boundaries lie when the host stalls the
//    GPU between steps: diagnosis.h).
// Memory: the kernels running at one instant, nothing else.
// Internal to aggregate/. One sweep per device and thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "aggregate/collectives.h"

namespace profwatch::aggregate {

// Idle gaps kept per device: enough for the step boundaries of a window of
// up to kLargestGaps + 1 profiled steps.
inline constexpr size_t kLargestGaps = 32;

struct SweepTotals {
  std::vector<int64_t> largest_gaps;  // longest first, at most kLargestGaps
  int64_t busy = 0;
  int64_t compute_busy = 0;
  int64_t exposed_comm = 0;
  // Per collective kind (SetCollectiveKinds): time when a kernel of that
  // kind runs and no compute kernel does. Kinds running together are each
  // charged, so these may sum to more than exposed_comm.
  std::array<int64_t, kCollectiveKinds> exposed_by_collective{};
  int64_t exclusive = 0;
  int64_t overlapped = 0;
  int64_t idle = 0;
};

class DeviceSweep {
 public:
  // Kernels are told apart by a tag (the caller's name slot, < is_comm.size()).
  // `name_less(a, b)`: whether tag a's name sorts before tag b's (ties of
  // idle-before). exclusive() and idle_before() are indexed by tag.
  DeviceSweep(std::vector<uint8_t> is_comm, std::function<bool(uint32_t, uint32_t)> name_less);

  // Optional, before the first Add: 1 + the CollectiveKind of each comm
  // tag (0: none), for SweepTotals::exposed_by_collective.
  void SetCollectiveKinds(std::vector<uint8_t> kind_by_tag);

  // REQUIRES: start <= every later call's start. end <= start is ignored.
  void Add(int64_t start, int64_t end, uint32_t tag);
  // Runs the kernels still running to their ends; call once, after the last Add.
  SweepTotals Finish();

  const std::vector<int64_t>& exclusive() const { return exclusive_; }
  const std::vector<int64_t>& idle_before() const { return idle_before_; }

 private:
  struct Running {
    int64_t end;
    uint32_t tag;
    bool operator>(const Running& o) const { return end > o.end; }
  };
  // Charges [now_, to) to the kernels running now.
  void Charge(int64_t to);
  // Ends the kernels that stop by `to`, charging the time up to there.
  void AdvanceTo(int64_t to);

  std::vector<uint8_t> is_comm_;
  std::function<bool(uint32_t, uint32_t)> name_less_;
  std::vector<int64_t> exclusive_, idle_before_;
  std::vector<Running> running_;  // min-heap by end
  int compute_running_ = 0, comm_running_ = 0;
  std::vector<uint8_t> collective_kind_;  // by tag: 1 + CollectiveKind, 0 none
  std::array<int, kCollectiveKinds> collective_running_{};
  // Counts the kernels of tag's collective kind running (+1 or -1).
  void CountCollective(uint32_t tag, int delta) {
    if (tag < collective_kind_.size() && collective_kind_[tag] != 0) {
      collective_running_[collective_kind_[tag] - 1] += delta;
    }
  }
  bool started_ = false;
  int64_t now_ = 0;
  // The last idle gap: its length, where it ended and who it is charged to.
  int64_t gap_ = 0, gap_end_ = 0;
  uint32_t gap_owner_ = 0;
  std::vector<int64_t> gaps_;  // min-heap of the longest idle gaps so far
  SweepTotals totals_;
};

}  // namespace profwatch::aggregate
