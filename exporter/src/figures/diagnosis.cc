#include "figures/diagnosis.h"

#include <algorithm>

#include "figures/kernel_label.h"

namespace profwatch::figures {

using aggregate::DeviceSummary;
using aggregate::FamilySummary;
using aggregate::PsToSeconds;
using aggregate::SerialKernel;

Diagnosis Diagnose(const aggregate::WindowStats& s, const StepTime& step_time) {
  Diagnosis d;
  const DiagnosisStep basis = DiagnosisStepOf(s, step_time);
  d.step_seconds = basis.seconds;
  d.step_basis = basis.basis;
  const double step = d.step_seconds;
  auto share = [step](double seconds) { return step > 0 ? seconds / step : 0.0; };

  for (const SerialKernel& k : s.serial_kernels) {
    const double alone = s.PerGpuStepSeconds(k.exclusive_ps);
    if (step <= 0 || alone < kBlockerShareOfStep * step) continue;
    d.blockers.push_back({k.name, ShortKernelName(k.name), k.family, alone, share(alone),
                          PsToSeconds(k.exclusive_ps) / static_cast<double>(k.launches)});
    d.blockers_seconds_per_gpu_step += alone;
  }

  for (const FamilySummary& f : s.families) {
    if (f.kind == classify::FamilyKind::kMath)
      d.math_alone_seconds_per_gpu_step += s.PerGpuStepSeconds(f.exclusive_ps);
  }
  d.math_alone_share_of_step = share(d.math_alone_seconds_per_gpu_step);

  const int gaps = s.profile_steps - 1;
  if (gaps >= 1 && !s.devices.empty()) {
    HostStall h;
    h.gaps_per_gpu = gaps;
    double sum_of_means = 0, worst = -1;
    for (const DeviceSummary& dev : s.devices) {
      const size_t n = std::min(static_cast<size_t>(gaps), dev.largest_gaps_ps.size());
      int64_t total = 0;
      for (size_t i = 0; i < n; ++i) total += dev.largest_gaps_ps[i];
      // Per step as every per-step figure (idle = (span - busy) / steps):
      // the boundaries' idle over the profiled steps, so the stall, part of
      // the idle, is never larger per step. A GPU with fewer idle gaps than
      // boundaries waited 0 at the others.
      const double mean = PsToSeconds(total) / s.profile_steps;
      sum_of_means += mean;
      if (mean > worst) {
        worst = mean;
        h.gaps_seconds.clear();
        for (size_t i = 0; i < n; ++i)
          h.gaps_seconds.push_back(PsToSeconds(dev.largest_gaps_ps[i]));
        std::string file = dev.file;
        if (auto slash = file.find_last_of('/'); slash != std::string::npos)
          file = file.substr(slash + 1);
        h.gpu = file + " " + dev.device;
      }
    }
    h.seconds_per_step = sum_of_means / static_cast<double>(s.devices.size());
    h.share_of_step = share(h.seconds_per_step);
    h.stalled = step > 0 && h.share_of_step >= kHostStallShareOfStep;
    d.host_stall = std::move(h);
  }
  return d;
}

}  // namespace profwatch::figures
