// Internal to aggregate/. NsysEvents: turns the events of an nsys export
// (parse/nsys_reader.h: cat kNsysKernelCat, kNsysMemopCat, kNsysStepCat)
// into KernelTable entries: kernels and memory operations on the device
// (pid, args.device), NVTX step ranges as steps. One owner thread.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>

#include "aggregate/kernel_table.h"
#include "parse/trace_parser.h"

namespace profwatch::aggregate {

class NsysEvents {
 public:
  // `table` must outlive this.
  explicit NsysEvents(KernelTable& table) : table_(table) {}

  // REQUIRES: e.ph == 'X', a non-empty name, one of the nsys cats.
  void OnComplete(const parse::TraceEvent& e);

 private:
  // The table's device "pid <pid> GPU <device>" (created on first sight).
  int DeviceOf(int64_t pid, int64_t device_id);

  KernelTable& table_;
  std::unordered_map<std::pair<int64_t, int64_t>, int, PairHash> devices_;  // (pid, device)
};

}  // namespace profwatch::aggregate
