#include "figures/collective_figures.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "aggregate/limits.h"
#include "aggregate/window_stats.h"

namespace profwatch::figures {

using aggregate::CollectiveKind;
using aggregate::CollectiveSums;
using aggregate::kCollectiveKinds;
using aggregate::PsToSeconds;

namespace {

// Where sizes come from, for the formats the calls came from only.
std::string SizeSources(uint8_t sources) {
  std::string o;
  auto add = [&](const char* text) { o += (o.empty() ? "" : "; ") + std::string(text); };
  if (sources & aggregate::kSourceKineto) {
    add("Kineto: the kernel's In/Out msg nelems and dtype (PyTorch 2.1 and later), or the "
        "launching operator's Input Dims and Input type (record_shapes=True)");
  }
  if (sources & aggregate::kSourceJax) add("JAX: its HLO instruction in the sibling .xplane.pb");
  if (sources & aggregate::kSourceNsys) add("an Nsight Systems export records no collective sizes");
  if (sources & aggregate::kSourceRocprof)
    add("rocprofv3's JSON output records no collective sizes");
  return o.empty() ? "the trace records no sizes" : o;
}

// Why `other` calls have no bytes or bus factor: what the calls were.
std::string OtherNote(const CollectiveSums& s) {
  const std::string tail = " have no byte count or bus factor";
  if (s.generic_kernels) {
    return "RCCL's generic kernels (ncclDevKernel_Generic) whose trace names no collective, or "
           "collectives outside the known kinds," +
           tail;
  }
  return "collectives outside the known kinds (gather, scatter, barrier, or a kernel nothing "
         "names the collective of)" +
         tail;
}

}  // namespace

std::vector<CollectiveFigures> ComputeCollectiveFigures(const aggregate::CollectiveStats& stats,
                                                        int64_t divisor) {
  std::vector<CollectiveFigures> out;
  if (divisor <= 0) return out;
  const double d = static_cast<double>(divisor);
  for (size_t k = 0; k < kCollectiveKinds; ++k) {
    const CollectiveSums& s = stats.kinds[k];
    if (s.calls == 0) continue;
    CollectiveFigures f;
    f.kind = static_cast<CollectiveKind>(k);
    f.calls = s.calls;
    f.sized_calls = s.sized_calls;
    f.calls_per_gpu_step = static_cast<double>(s.calls) / d;
    f.kernel_seconds_per_gpu_step = static_cast<double>(s.kernel_ps) * 1e-12 / d;
    f.exposed_seconds_per_gpu_step = static_cast<double>(s.exposed_ps) * 1e-12 / d;
    if (s.sized_calls > 0) f.bytes_per_gpu_step = s.bytes / d;
    f.alg_bandwidth = s.AlgBandwidth();
    f.bus_bandwidth = s.BusBandwidth();
    f.group_sizes = s.group_sizes;
    f.more_group_sizes = s.more_group_sizes;
    f.process_groups = s.process_groups;
    f.more_process_groups = s.more_process_groups;
    // Rates no GPU reaches: the sizes are not believed
    // (aggregate::kMaxCollectiveBandwidth).
    const double fastest = std::max(f.alg_bandwidth.value_or(0), f.bus_bandwidth.value_or(0));
    const std::string oversized =
        s.oversized_calls > 0 ? std::to_string(s.oversized_calls) +
                                    " calls claimed more than 1 TiB each, more than any GPU "
                                    "holds: impossible sizes, not counted"
                              : "";
    if (!(fastest <= aggregate::kMaxCollectiveBandwidth)) {
      f.bytes_per_gpu_step.reset();
      f.alg_bandwidth.reset();
      f.bus_bandwidth.reset();
      char rate[32];
      std::snprintf(rate, sizeof rate, "%.3g", fastest);
      f.note = std::string("impossible sizes: the sized calls claim ") + rate +
               " B/s over their kernels, above the 1e13 B/s no GPU's memory reaches (a "
               "collective's bytes cross it at least once): bytes and bandwidth unknown";
    } else if (f.kind == CollectiveKind::kOther) {
      f.note = OtherNote(s);
    } else if (s.sized_calls == 0 && !oversized.empty()) {
      f.note = oversized;
    } else if (s.sized_calls == 0) {
      f.note = "no call carried its size (" + SizeSources(s.sources) + ")";
    } else if (!f.alg_bandwidth) {
      f.note = "the calls with a size took no time";
    } else if (!f.bus_bandwidth) {
      f.note = "no call with a size carried its group size";
    } else if (s.sized_calls < s.calls) {
      f.note = "bytes and bandwidth over the " + std::to_string(s.sized_calls) + " of " +
               std::to_string(s.calls) + " calls that carried their size";
      if (!oversized.empty()) f.note += " (" + oversized + ")";
    }
    f.raw_kernel_seconds = PsToSeconds(s.kernel_ps);
    f.raw_exposed_seconds = PsToSeconds(s.exposed_ps);
    if (f.alg_bandwidth) {
      f.raw_sized_bytes = s.bytes;
      f.raw_sized_seconds = PsToSeconds(s.sized_ps);
    }
    if (f.bus_bandwidth) {
      f.raw_bus_bytes = s.bus_bytes;
      f.raw_bus_seconds = PsToSeconds(s.bus_ps);
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::optional<size_t> DominantExposedCollective(const std::vector<CollectiveFigures>& figures) {
  std::optional<size_t> best;
  for (size_t i = 0; i < figures.size(); ++i) {
    const CollectiveFigures& f = figures[i];
    if (f.exposed_seconds_per_gpu_step <= 0) continue;
    if (!best || f.exposed_seconds_per_gpu_step > figures[*best].exposed_seconds_per_gpu_step) {
      best = i;
    }
  }
  return best;
}

std::string ProcessGroupPhrase(const CollectiveFigures& f) {
  if (f.process_groups.empty()) return "";
  std::string o = f.process_groups.size() > 1 ? ", process groups " : ", process group ";
  for (size_t i = 0; i < f.process_groups.size(); ++i) {
    o += (i == 0 ? "'" : ", '") + f.process_groups[i].description + "'";
  }
  if (f.more_process_groups) o += ", ...";
  return o;
}

}  // namespace profwatch::figures
