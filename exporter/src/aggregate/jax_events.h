// Internal to aggregate/. JaxEvents: turns JAX/XLA trace events (cat-less
// complete events and process/thread metadata) into KernelTable entries
// (detection rules: aggregator.h): stream kernels and memory copies on
// /device:GPU:N or TPU processes, with their scopes, collective kinds and
// CUDA-graph modules (graph_kernels.h), and "Steps" thread events as steps.
// Events of a thread or process not declared yet are held and judged when
// the file ends (ResolveHeld). One owner thread.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aggregate/graph_kernels.h"
#include "aggregate/kernel_table.h"
#include "parse/trace_parser.h"

namespace profwatch::aggregate {

class JaxEvents {
 public:
  // `table` and `graph` must outlive this.
  JaxEvents(KernelTable& table, GraphKernels& graph) : table_(table), graph_(graph) {}

  // A metadata event (ph 'M'): process_name and thread_name declarations.
  void OnMetadata(const parse::TraceEvent& e);
  // REQUIRES: e.ph == 'X', a non-empty name and no cat.
  void OnComplete(const parse::TraceEvent& e);
  // A cat was seen: a Kineto file, whose cat-less events are never kernels
  // (so none are held).
  void SawCat() { saw_cat_ = true; }
  // At the file's end: judges the held events by the metadata seen by then;
  // those still undeclared are counted in drops["no_metadata"].
  void ResolveHeld();

 private:
  // kXlaOps: the "XLA Ops" line, which is where a TPU plane's ops are (TPU
  // planes have no "Stream #" lines); on GPU planes it would duplicate the
  // streams, so it only counts on TPU devices.
  enum class ThreadKind : uint8_t { kStream, kSteps, kXlaOps, kOther };
  // An event of a thread whose metadata was not known when it arrived.
  struct Held {
    uint32_t name = 0;
    uint32_t scope = 0;      // ScopeId(args.name): 0 = none
    uint32_t module = 0;     // GraphKernels::ModuleId(args.hlo_module): 0 = none
    uint8_t collective = 0;  // 1 + the CollectiveKind its args.hlo_op names; 0 = none
    uint32_t hlo_op = 0;     // a collective's GraphKernels::HloOpId(args.hlo_op); 0 = none
    bool has_ts = false;
    bool has_dur = false;
    bool dur_exact = false;
    int64_t ts_ps = 0;
    int64_t dur_ps = 0;
    int64_t bytes = -1;  // a memory operation's byte count (MemopBytes); -1: unknown
  };
  // The one decision on a complete event of (pid, tid), from the metadata
  // seen so far: device work on *dev (kStream), a step marker (kSteps),
  // neither (kIgnore), or not known yet (kHold: a thread or process not
  // declared yet).
  // kOverDeviceLimit: a device past kMaxDevices (dropped, counted).
  enum class Route : uint8_t { kIgnore, kHold, kSteps, kStream, kOverDeviceLimit };
  static constexpr int kDroppedDevice = -2;  // in pid_device_: a device past kMaxDevices
  Route RouteOf(int64_t pid, int64_t tid, int* dev) const;
  bool IsHostPid(int64_t pid) const;
  // Applies a decided route to one event (kIgnore and kHold: nothing).
  void Take(Route route, int dev, int64_t tid, const Held& h);
  // A stream event on a known device.
  void StreamEvent(int dev, int64_t tid, const Held& h);
  void StepsThreadEvent(const Held& h);

  KernelTable& table_;
  GraphKernels& graph_;
  std::unordered_map<int64_t, int> pid_device_;  // pid -> device index, -1 = host, -2 over the cap
  std::unordered_map<std::pair<int64_t, int64_t>, ThreadKind, PairHash> threads_;
  std::unordered_map<std::pair<int64_t, int64_t>, std::vector<Held>, PairHash> held_;
  size_t held_count_ = 0;
  bool saw_cat_ = false;
  // JAX writes a thread's events together, so OnComplete keeps the last
  // route; any metadata event clears it.
  struct LastRoute {
    bool valid = false;
    int64_t pid = 0, tid = 0;
    Route route = Route::kIgnore;
    int dev = -1;
  } last_route_;
};

}  // namespace profwatch::aggregate
