// Crafted HloProtos that a reader without bounds never finishes (issue #37),
// built with proto_writer.h, and a watchdog that fails a test fast instead of
// letting a regression hang it. The fuzz corpus holds the same modules:
// HostileHloCorpus() names its files (HloScheduleTest checks they match).
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "testing/proto_writer.h"

namespace profwatch::testing {

// A fusion whose computation (10) holds `width` fusions that call 10 again:
// the fused walk never ends without cycle detection (width^depth without a
// memo). The entry runs one fusion, `loop_add_fusion.1`, calling 10.
inline std::string SelfCallingFusionHlo(std::string_view module = "jit_hostile", int width = 6) {
  std::vector<std::string> fused = {HloInstr(100, "p", "parameter", "")};
  for (int i = 0; i < width; ++i) {
    fused.push_back(HloInstr(101 + i, "f." + std::to_string(i), "fusion", "jit(f)/x", {10}));
  }
  const std::string entry =
      HloComputation(1, {HloInstr(1, "loop_add_fusion.1", "fusion", "jit(f)/add", {10})});
  return HloModule(module, 1, {HloComputation(10, fused), entry}, HloSequence(1, {1}));
}

// `depth` scheduled computations, each calling the next `width` times, the
// last running one fusion: inlined, width^depth launches (12^12 here).
inline std::string NestedCallsHlo(std::string_view module = "jit_hostile", int depth = 12,
                                  int width = 12) {
  std::vector<std::string> comps;
  std::string schedule;
  for (int k = 1; k <= depth; ++k) {
    std::vector<std::string> instrs;
    std::vector<int64_t> ids;
    for (int i = 0; i < width; ++i) {
      const int64_t id = k * 100000 + i;  // distinct for any width below 100,000
      instrs.push_back(HloInstr(id, "call." + std::to_string(id), "call", "", {k + 1}));
      ids.push_back(id);
    }
    comps.push_back(HloComputation(k, instrs));
    schedule += HloSequence(k, ids);
  }
  const int leaf = depth + 1;
  comps.push_back(HloComputation(
      leaf, {HloInstr(leaf * 100000, "loop_add_fusion.1", "fusion", "jit(f)/add", {999})}));
  comps.push_back(HloComputation(999, {HloInstr(99900, "add", "add", "jit(f)/add")}));
  schedule += HloSequence(leaf, {leaf * 100000});
  return HloModule(module, 1, comps, schedule);
}

// Computations 2 and 3 call each other: through scheduled `call`s when
// `calls`, else through fusions (the entry's fusion computes 2).
inline std::string TwoComputationCycleHlo(bool calls, std::string_view module = "jit_hostile") {
  const std::string_view op = calls ? "call" : "fusion";
  const std::string entry =
      HloComputation(1, {HloInstr(1, "loop_add_fusion.1", std::string(op), "jit(f)/a", {2})});
  const std::string two =
      HloComputation(2, {HloInstr(20, "x.2", std::string(op), "jit(f)/b", {3})});
  const std::string three =
      HloComputation(3, {HloInstr(30, "x.3", std::string(op), "jit(f)/c", {2})});
  const std::string schedule =
      HloSequence(1, {1}) + (calls ? HloSequence(2, {20}) + HloSequence(3, {30}) : "");
  return HloModule(module, 1, {two, three, entry}, schedule);
}

// The fuzz_xplane_parser seeds (tests/fuzz/corpus/xplane_parser/<name>):
// the control byte 0x3f (64-byte reads, no host events), then an XSpace
// whose metadata plane holds the module.
inline std::vector<std::pair<std::string, std::string>> HostileHloCorpus() {
  std::vector<std::pair<std::string, std::string>> out = {
      {"hlo_self_calling_fusion", SelfCallingFusionHlo()},
      {"hlo_nested_calls_12x12", NestedCallsHlo()},
      {"hlo_call_cycle", TwoComputationCycleHlo(true)},
      {"hlo_fusion_cycle", TwoComputationCycleHlo(false)}};
  for (auto& [name, bytes] : out) bytes = "\x3f" + MetadataPlane({bytes});
  return out;
}

// Runs `fn` and aborts the test binary when it has not returned within
// `limit`: a test of a bound fails in seconds when the bound regresses,
// instead of hanging until ctest's timeout.
inline void RunWithin(std::chrono::seconds limit, const std::function<void()>& fn) {
  std::packaged_task<void()> task(fn);
  std::future<void> done = task.get_future();
  std::thread worker(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: still running after %lld s: the work is unbounded\n",
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::abort();
  }
  worker.join();
  done.get();
}

}  // namespace profwatch::testing
