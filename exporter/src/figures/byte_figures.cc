#include "figures/byte_figures.h"

#include <string>

namespace profwatch::figures {

using aggregate::ByteStats;
using aggregate::PsToSeconds;
using aggregate::WindowStats;

ByteFigures ComputeByteFigures(const WindowStats& s, const FlopFigures& flops) {
  const ByteStats& b = s.bytes;
  ByteFigures out;
  out.unknown_ops = b.unknown_ops;
  if (b.peak_hbm_bytes_per_second > 0) {
    out.peak_hbm_bytes_per_second = b.peak_hbm_bytes_per_second;
    out.peak_hbm_source = b.peak_hbm_source;
  }
  if (out.peak_hbm_bytes_per_second && flops.peak_per_second) {
    out.ridge = *flops.peak_per_second / *out.peak_hbm_bytes_per_second;
  }
  if (s.divisor() == 0) {
    out.note = "no GPU kernels in the window";
    return out;
  }
  const double divisor = static_cast<double>(s.divisor());
  if (b.memops > 0) {
    out.memop_bytes_per_gpu_step = b.memop_bytes / divisor;
    out.memop_seconds_per_gpu_step = s.PerGpuStepSeconds(b.memop_ps);
  }
  if (b.families.empty()) {
    out.note = !b.absent.empty() ? b.absent
               : b.unknown_ops > 0
                   ? std::to_string(b.unknown_ops) +
                         " operators or launches with a bytes model had unusable shapes"
                   : "no kernel with a bytes model";
    return out;
  }
  int64_t compute_ps = 0;
  for (const aggregate::FamilySummary& f : s.families) {
    if (f.kind != classify::FamilyKind::kComm && f.kind != classify::FamilyKind::kMemory) {
      compute_ps += f.total_ps;
    }
  }
  if (compute_ps > 0) {
    out.coverage = static_cast<double>(b.ModeledPs()) / static_cast<double>(compute_ps);
  }
  out.bytes_per_gpu_step = b.Bytes() / divisor;
  const bool peaks = flops.peak_per_second && out.peak_hbm_bytes_per_second;
  // Families in the aggregate's order (the classifier's).
  for (const aggregate::FamilySummary& summary : s.families) {
    for (const ByteStats::Family& fam : b.families) {
      if (fam.family != summary.family || !(fam.bytes > 0)) continue;
      FamilyByteFigures f;
      f.family = fam.family;
      f.bytes_per_gpu_step = fam.bytes / divisor;
      f.modeled_seconds_per_gpu_step = s.PerGpuStepSeconds(fam.kernel_ps);
      f.raw_bytes = fam.bytes;
      f.raw_modeled_seconds = PsToSeconds(fam.kernel_ps);
      if (fam.kernel_ps > 0) f.achieved_bytes_per_second = fam.bytes / PsToSeconds(fam.kernel_ps);
      bool counted = false;
      for (const FamilyFlopFigures& ff : flops.families) {
        if (ff.family != fam.family || !(ff.per_gpu_step > 0)) continue;
        counted = true;
        f.arithmetic_intensity = ff.per_gpu_step / f.bytes_per_gpu_step;
        if (!peaks || !f.achieved_bytes_per_second) break;
        if (*f.arithmetic_intensity < *out.ridge) {
          f.roofline_bound = "memory";
          f.roofline_fraction = *f.achieved_bytes_per_second / *out.peak_hbm_bytes_per_second;
        } else if (ff.achieved_per_second) {
          f.roofline_bound = "compute";
          f.roofline_fraction = *ff.achieved_per_second / *flops.peak_per_second;
        }
        break;
      }
      // No FLOPs: on the memory roof when every modeled kernel of the
      // family is of a memory-bound kind (ByteStats::Family::memory_bound_ps),
      // the intensity unknown (absent).
      if (!counted && out.peak_hbm_bytes_per_second && f.achieved_bytes_per_second &&
          fam.kernel_ps > 0 && fam.memory_bound_ps == fam.kernel_ps) {
        f.roofline_bound = "memory";
        f.roofline_fraction = *f.achieved_bytes_per_second / *out.peak_hbm_bytes_per_second;
      }
      out.families.push_back(std::move(f));
    }
  }
  if (!peaks) {
    out.roofline_note = !flops.peak_per_second
                            ? "no known peak FLOP rate (give --peak-flops)"
                            : "no known peak HBM bandwidth for device '" + s.flops.device_name +
                                  "' (give --peak-hbm-bandwidth)";
  }
  return out;
}

}  // namespace profwatch::figures
