// JaxEvents: see jax_events.h.
#include "aggregate/jax_events.h"

#include <string>
#include <string_view>

#include "aggregate/aggregator.h"
#include "aggregate/collectives.h"

namespace profwatch::aggregate {

namespace {

bool IsDeviceProcessName(std::string_view n) {
  return n.starts_with("/device:GPU:") || n.starts_with("/device:TPU:");
}

}  // namespace

void JaxEvents::StreamEvent(int dev, int64_t tid, const Held& h) {
  int64_t start = 0, end = 0;
  if (!table_.Times(h.has_ts, h.ts_ps, h.has_dur, h.dur_exact, h.dur_ps, &start, &end)) return;
  if (table_.name_is_memop[h.name]) {
    table_.AddMemop(dev, start, end, h.bytes);
    return;
  }
  CollectiveCall call;
  if (h.collective != 0) call.kind = static_cast<CollectiveKind>(h.collective - 1);
  const uint64_t hlo_op = h.module != 0 && h.module != GraphKernels::kAnyModule && h.hlo_op != 0
                              ? (uint64_t{h.module} << 32) | h.hlo_op
                              : 0;
  table_.AddKernel(dev, tid, h.name, start, end, &call, hlo_op);
  if (h.scope != 0) table_.AddScopeTime(h.scope, h.name, end - start);
  // Kernels of a module are placed by its schedule: for a scope when they
  // have none, and for the FLOPs of the launch they execute.
  if (h.module != 0) graph_.Add(dev, h.name, h.module, h.scope != 0, start, end);
}

void JaxEvents::StepsThreadEvent(const Held& h) {
  int64_t start = 0, end = 0;
  if (!table_.Times(h.has_ts, h.ts_ps, h.has_dur, h.dur_exact, h.dur_ps, &start, &end)) return;
  table_.AddStep(table_.names[h.name], start, end);
}

void JaxEvents::OnMetadata(const parse::TraceEvent& e) {
  last_route_.valid = false;
  if (e.pid.kind != parse::IdKind::kInt) return;
  const int64_t pid = e.pid.num;
  if (e.name == "process_name") {
    if (pid_device_.contains(pid)) return;  // first declaration wins
    if (IsDeviceProcessName(e.args_name)) {
      // Past kMaxDevices: kDroppedDevice, its events dropped.
      const int dev = table_.NewDevice(e.args_name);
      pid_device_.emplace(pid, dev < 0 ? kDroppedDevice : dev);
    } else {
      pid_device_.emplace(pid, -1);
    }
  } else if (e.name == "thread_name") {
    if (e.tid.kind != parse::IdKind::kInt) return;
    ThreadKind k = ThreadKind::kOther;
    if (e.args_name.starts_with("Stream #")) {
      k = ThreadKind::kStream;
    } else if (e.args_name == "Steps") {
      k = ThreadKind::kSteps;
    } else if (e.args_name == "XLA Ops") {
      k = ThreadKind::kXlaOps;
    }
    threads_.emplace(std::pair{pid, e.tid.num}, k);
  }
}

JaxEvents::Route JaxEvents::RouteOf(int64_t pid, int64_t tid, int* dev) const {
  auto t = threads_.find({pid, tid});
  if (t == threads_.end()) return Route::kHold;
  if (t->second == ThreadKind::kSteps) return Route::kSteps;
  if (t->second != ThreadKind::kStream && t->second != ThreadKind::kXlaOps) {
    return Route::kIgnore;  // host, overhead or annotation thread
  }
  auto p = pid_device_.find(pid);
  if (p == pid_device_.end()) return Route::kHold;
  if (p->second == kDroppedDevice) return Route::kOverDeviceLimit;
  if (p->second < 0) return Route::kIgnore;  // a host process
  if (t->second == ThreadKind::kXlaOps &&
      !table_.devices[static_cast<size_t>(p->second)].name.starts_with("/device:TPU:")) {
    return Route::kIgnore;
  }
  *dev = p->second;
  return Route::kStream;
}

bool JaxEvents::IsHostPid(int64_t pid) const {
  auto p = pid_device_.find(pid);
  return p != pid_device_.end() && p->second < 0;
}

void JaxEvents::Take(Route route, int dev, int64_t tid, const Held& h) {
  if (route == Route::kOverDeviceLimit) ++table_.drops["device_limit"];
  if (route == Route::kSteps) StepsThreadEvent(h);
  if (route == Route::kStream) StreamEvent(dev, tid, h);
}

void JaxEvents::OnComplete(const parse::TraceEvent& e) {
  if (e.pid.kind != parse::IdKind::kInt || e.tid.kind != parse::IdKind::kInt) return;
  const int64_t pid = e.pid.num, tid = e.tid.num;
  LastRoute& r = last_route_;
  if (!r.valid || r.pid != pid || r.tid != tid) {
    r = LastRoute{true, pid, tid, Route::kIgnore, -1};
    r.route = RouteOf(pid, tid, &r.dev);
    // A host process's events are never device work, so they are not held
    // for a thread declared later (only a Steps thread would count there).
    if (r.route == Route::kHold && IsHostPid(pid)) r.route = Route::kIgnore;
  }
  if (r.route == Route::kIgnore) return;
  if (r.route == Route::kOverDeviceLimit) {
    ++table_.drops["device_limit"];
    return;
  }
  uint8_t collective = 0;
  uint32_t hlo_op = 0;
  if (!e.args_hlo_op.empty()) {
    if (auto k = CollectiveKindOfHloOp(e.args_hlo_op)) {
      collective = 1 + static_cast<uint8_t>(*k);
      hlo_op = graph_.HloOpId(e.args_hlo_op);
    }
  }
  Held h{table_.Intern(e.name),
         table_.ScopeId(e.args_name),
         graph_.ModuleId(e.args_hlo_module),
         collective,
         hlo_op,
         e.has_ts,
         e.has_dur,
         e.dur_exact,
         e.ts_ps,
         e.dur_ps,
         e.args_memop_details.empty() ? -1 : MemopBytes(e.args_memop_details)};
  if (r.route != Route::kHold) {
    Take(r.route, r.dev, tid, h);
    return;
  }
  if (saw_cat_) return;  // a Kineto file: cat-less events are never kernels
  if (held_count_ >= kMaxHeldEvents) {
    ++table_.drops["no_metadata_held_limit"];
    return;
  }
  ++held_count_;
  held_[{pid, tid}].push_back(h);
}

void JaxEvents::ResolveHeld() {
  if (saw_cat_) held_.clear();
  for (auto& [key, events] : held_) {
    for (const Held& h : events) {
      int dev = -1;
      const Route route = RouteOf(key.first, key.second, &dev);
      if (route == Route::kHold) ++table_.drops["no_metadata"];
      Take(route, dev, key.second, h);
    }
  }
  held_.clear();
  held_count_ = 0;
}

}  // namespace profwatch::aggregate
