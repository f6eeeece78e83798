// A window's collectives as every output shows them: per kind that ran,
// per GPU per step, bandwidths over the window and the raw sums, from
// aggregate's CollectiveStats (aggregate/collectives.h holds the kinds, byte
// counts and bus factors). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "aggregate/collectives.h"

namespace profwatch::figures {

// One kind's figures as every output shows them: per GPU per step over
// `divisor` (GPUs x profiled steps), bandwidths over the window. Absent
// (nullopt) where not computable; `note` says why.
struct CollectiveFigures {
  aggregate::CollectiveKind kind = aggregate::CollectiveKind::kOther;
  int64_t calls = 0;
  int64_t sized_calls = 0;
  double calls_per_gpu_step = 0;
  double kernel_seconds_per_gpu_step = 0;
  double exposed_seconds_per_gpu_step = 0;
  std::optional<double> bytes_per_gpu_step;  // of the sized calls
  std::optional<double> alg_bandwidth;       // bytes per second
  std::optional<double> bus_bandwidth;
  std::vector<int64_t> group_sizes;
  bool more_group_sizes = false;
  std::vector<aggregate::ProcessGroup> process_groups;  // as CollectiveSums::process_groups
  bool more_process_groups = false;
  std::string note;  // why a figure is absent, or that some calls had no size
  // The additive sums over the window's GPUs and steps (the raw series the
  // recording rules divide across sidecars): kernel and exposed seconds,
  // bytes and seconds of the sized calls (set with alg_bandwidth), bytes x
  // bus factor and seconds of those with a group size (set with
  // bus_bandwidth).
  double raw_kernel_seconds = 0;
  double raw_exposed_seconds = 0;
  std::optional<double> raw_sized_bytes, raw_sized_seconds;
  std::optional<double> raw_bus_bytes, raw_bus_seconds;
};
// The kinds with calls, in CollectiveKind order; empty when divisor <= 0.
std::vector<CollectiveFigures> ComputeCollectiveFigures(const aggregate::CollectiveStats& stats,
                                                        int64_t divisor);
// Index in `figures` of the kind with the most exposed time (the first of
// equals); nullopt when no collective time is exposed.
std::optional<size_t> DominantExposedCollective(const std::vector<CollectiveFigures>& figures);

// ", process group 'fsdp'" (", process groups 'fsdp', 'tp'") for the
// diagnosis line when the trace names the kind's groups; "" otherwise.
std::string ProcessGroupPhrase(const CollectiveFigures& f);

}  // namespace profwatch::figures
