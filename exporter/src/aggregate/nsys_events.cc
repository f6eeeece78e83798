// NsysEvents: see nsys_events.h.
#include "aggregate/nsys_events.h"

#include <string>

namespace profwatch::aggregate {

int NsysEvents::DeviceOf(int64_t pid, int64_t device_id) {
  auto it = devices_.find({pid, device_id});
  if (it != devices_.end()) return it->second;
  const int dev =
      table_.NewDevice("pid " + std::to_string(pid) + " GPU " + std::to_string(device_id));
  if (dev < 0) {
    ++table_.drops["device_limit"];  // past kMaxDevices
    return dev;
  }
  table_.devices.back().pid = pid;
  table_.devices.back().device_id = device_id;
  devices_.emplace(std::pair{pid, device_id}, dev);
  return dev;
}

void NsysEvents::OnComplete(const parse::TraceEvent& e) {
  int64_t start = 0, end = 0;
  if (!table_.Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
  if (e.cat == parse::kNsysStepCat) {
    table_.AddStep(e.name, start, end);
    return;
  }
  const int dev = DeviceOf(e.pid.num, e.args_device);
  if (dev < 0) return;
  if (e.cat == parse::kNsysMemopCat) {
    table_.AddMemop(dev, start, end, e.args_bytes);
  } else {
    const CollectiveCall call = CollectiveCallOf(e);  // the NCCL NVTX range it was launched in
    table_.AddKernel(dev, e.tid.num, table_.Intern(e.name), start, end, &call);
  }
}

}  // namespace profwatch::aggregate
