#include <algorithm>
#include <cstdio>

#include "expose/report.h"

namespace profwatch::expose {
namespace {

std::string Format(const char* fmt, auto... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string s(static_cast<size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

// Long C++ template names make tables unreadable; the JSON keeps them whole.
std::string Shorten(const std::string& name, size_t max) {
  if (name.size() <= max) return name;
  return name.substr(0, max - 3) + "...";
}

}  // namespace

std::optional<StepGap> ComputeStepGap(const aggregate::WindowStats& stats,
                                      std::optional<double> step_seconds) {
  if (!step_seconds || *step_seconds <= 0 || stats.divisor() == 0) return std::nullopt;
  StepGap g;
  g.total_kernel_seconds = stats.PerGpuStepSeconds(stats.total_kernel_ps);
  g.step_seconds = *step_seconds;
  g.minus_kernel_seconds = g.step_seconds - g.total_kernel_seconds;
  g.ratio = g.minus_kernel_seconds / g.step_seconds;
  return g;
}

namespace {

// The plain-words answers of issue #22: what blocks the main stream, what the
// GPU waits for, which GPU straggles.
std::string RenderDiagnosis(const aggregate::WindowStats& s, const ReportContext& ctx) {
  // The step the 5% rule refers to: the given step time, else the trace's,
  // else the kernel span per GPU per step.
  double step = ctx.step_seconds.value_or(0.0);
  if (step <= 0) step = s.TraceStepSeconds();
  if (step <= 0) step = s.PerGpuStepSeconds(s.SumSpanPs());
  std::string o = "\nDiagnosis (per GPU per step)\n";
  const aggregate::FamilySummary* blocker = nullptr;
  for (const auto& f : s.families) {
    const double alone = s.PerGpuStepSeconds(f.exclusive_ps);
    if (f.total_ps > 0 && 4 * f.exclusive_ps > f.total_ps && alone > 0.05 * step &&
        (!blocker || f.exclusive_ps > blocker->exclusive_ps)) {
      blocker = &f;
    }
  }
  if (blocker) {
    o += Format(
        "  %-22s %s runs alone %.6f s (%.0f%% of its kernel time, %.1f%% of the step)\n",
        "main-stream blocker", blocker->family.c_str(), s.PerGpuStepSeconds(blocker->exclusive_ps),
        100.0 * static_cast<double>(blocker->exclusive_ps) / static_cast<double>(blocker->total_ps),
        100.0 * s.PerGpuStepSeconds(blocker->exclusive_ps) / step);
    for (const auto& k : s.top_exclusive) {
      if (k.family != blocker->family) continue;
      o += Format("  %-22s %s (%.6f s alone)\n", "", Shorten(k.name, 80).c_str(),
                  s.PerGpuStepSeconds(k.ps));
      break;
    }
  } else {
    o += Format("  %-22s none (no family runs alone over 25%% of its time and 5%% of the step)\n",
                "main-stream blocker");
  }
  if (!s.top_idle_before.empty()) {
    const auto& k = s.top_idle_before.front();
    o += Format("  %-22s %.6f s idle before %s (%s): the GPU waited for it\n", "biggest wait",
                s.PerGpuStepSeconds(k.ps), Shorten(k.name, 60).c_str(), k.family.c_str());
  }
  if (auto st = s.FindStraggler(); st && s.gpus() > 1) {
    const auto& d = s.devices[st->device];
    o += Format("  %-22s %s %s: compute busy %.6f s, %.3fx the median GPU (%.6f s)\n", "straggler",
                st->host.c_str(), d.device.c_str(),
                s.PerStepSeconds(static_cast<double>(st->compute_busy_ps)), st->ratio,
                s.PerStepSeconds(st->median_compute_busy_ps));
  }
  if (!s.has_regions) {
    o += Format(
        "  %-22s none: the input carries no scopes (JAX args.name, PyTorch gpu_user_annotation)\n",
        "regions");
  } else {
    for (size_t i = 0; i < s.regions.size(); ++i) {
      o += Format("  %-22s %.6f s  %s\n", i == 0 ? "top regions" : "",
                  s.PerGpuStepSeconds(s.regions[i].kernel_ps),
                  Shorten(s.regions[i].region, 80).c_str());
    }
    if (s.regions_other_ps > 0) {
      o += Format("  %-22s %.6f s  other\n", "", s.PerGpuStepSeconds(s.regions_other_ps));
    }
  }
  return o;
}

}  // namespace

std::string RenderTable(const aggregate::WindowStats& s, const ReportContext& ctx) {
  using aggregate::PsToSeconds;
  std::string o;
  o += "profwatch window report";
  if (!ctx.window.empty()) o += ": " + ctx.window;
  o += "\n";
  o += Format("  trace files      %zu (%s)\n", s.files.size(), ctx.format.c_str());
  o += Format("  timestamp dirs   %zu\n", s.timestamp_dirs.size());
  o += Format("  GPUs detected    %d", s.gpus());
  if (ctx.expected_gpus > 0) {
    o += Format(" (expected %d)", ctx.expected_gpus);
  }
  o += "\n";
  if (ctx.expected_gpus > 0 && ctx.expected_gpus != s.gpus()) {
    o += Format(
        "  !!! WARNING: %d GPUs detected but %d expected: files missing, a window split over "
        "more <ts> dirs, or a stale window mixed in\n",
        s.gpus(), ctx.expected_gpus);
  }
  o += Format("  launcher mode    %s (%.2f GPUs/file)\n",
              std::string(aggregate::LauncherModeName(s.launcher_mode)).c_str(), s.gpus_per_file);
  o += Format("  profile steps    %d (divisor %lld)\n", s.profile_steps,
              static_cast<long long>(s.divisor()));
  o += Format("  events           %llu\n", static_cast<unsigned long long>(s.events));
  o += Format("  rule set         %s\n", s.rule_set.c_str());
  if (s.truncated) {
    o += "  !!! WARNING: truncated: a trace hit the 1,000,000-event writer cap or ended early; "
         "the last steps are missing (read the .xplane.pb: --source xplane)\n";
  }
  for (const auto& e : ctx.errors) {
    o += Format("  !!! ERROR %s: %s\n", e.reason.c_str(), e.message.c_str());
  }
  if (s.divisor() == 0) {
    o += "\nNo GPU kernels found in this window.\n";
    return o;
  }

  o += "\nKernel families (per GPU per step)\n";
  o += Format("  %-34s %12s %10s %8s\n", "family", "seconds", "launches", "share");
  for (const auto& f : s.families) {
    double share = s.total_kernel_ps > 0
                       ? static_cast<double>(f.total_ps) / static_cast<double>(s.total_kernel_ps)
                       : 0.0;
    o += Format("  %-34s %12.6f %10.1f %7.1f%%\n", f.family.c_str(),
                s.PerGpuStepSeconds(f.total_ps), s.PerGpuStepCount(f.launches), share * 100.0);
  }
  o += Format("  %-34s %12.6f %10.1f\n", "TOTAL", s.PerGpuStepSeconds(s.total_kernel_ps),
              s.PerGpuStepCount(s.total_launches));

  o += "\nTop kernels (per GPU per step)\n";
  for (const auto& f : s.families) {
    if (f.top_kernels.empty()) continue;
    o += "  " + f.family + "\n";
    for (const auto& k : f.top_kernels) {
      o += Format("    %12.6f s %10.1f launches  %s\n", s.PerGpuStepSeconds(k.total_ps),
                  s.PerGpuStepCount(k.launches), Shorten(k.name, 100).c_str());
    }
  }

  const int64_t busy = s.SumBusyPs(), span = s.SumSpanPs();
  o += "\nMeasured decomposition (per GPU per step)\n";
  o += Format("  %-34s %12.6f\n", "total kernel (sum)", s.PerGpuStepSeconds(s.total_kernel_ps));
  o += Format("  %-34s %12.6f\n", "busy (union of kernels)", s.PerGpuStepSeconds(busy));
  o += Format("  %-34s %12.6f\n", "idle (span - busy)", s.PerGpuStepSeconds(span - busy));
  o += Format("  %-34s %12.6f\n", "overlap (sum - busy)",
              s.PerGpuStepSeconds(s.total_kernel_ps - busy));
  o += Format("  %-34s %12.6f\n", "exposed communication",
              s.PerGpuStepSeconds(s.SumExposedCommPs()));
  if (double ts = s.TraceStepSeconds(); ts > 0) {
    o += Format("  %-34s %12.6f\n", "step time in trace (median)", ts);
  }

  if (auto gap = ComputeStepGap(s, ctx.step_seconds)) {
    const aggregate::FamilySummary* top_family = nullptr;
    for (const auto& f : s.families) {
      if (!top_family || f.total_ps > top_family->total_ps) top_family = &f;
    }
    o += Format("\nStep time composition (source: %s)\n", ctx.step_source.c_str());
    o += Format("  %-34s %12.6f\n", "step", gap->step_seconds);
    o += Format("  %-34s %12.6f\n", "total kernel", gap->total_kernel_seconds);
    o += Format("  %-34s %+12.6f (%+.1f%% of step)\n", "step - total kernel",
                gap->minus_kernel_seconds, gap->ratio * 100.0);
    if (top_family && top_family->total_ps > 0) {
      o += Format("  %-34s %s (%.6f s)\n", "top family", top_family->family.c_str(),
                  s.PerGpuStepSeconds(top_family->total_ps));
      if (!top_family->top_kernels.empty()) {
        o += Format("  %-34s %s\n", "top kernel",
                    Shorten(top_family->top_kernels[0].name, 80).c_str());
      }
    }
    if (gap->minus_kernel_seconds > 0) {
      o += "  => positive gap: the GPU waits on something outside kernels (a main-stream blocker, "
           "host or input stall)\n";
    } else {
      o += "  => negative or zero gap: kernels fill the step (streams overlap when negative)\n";
    }
  }

  o += RenderDiagnosis(s, ctx);

  o += "\nDevices\n";
  o += Format("  %-40s %-16s %9s %12s %12s %12s %7s\n", "file", "device", "kernels", "kernel_s",
              "busy_s", "span_s", "streams");
  for (const auto& d : s.devices) {
    std::string file = d.file;
    if (auto slash = file.find_last_of('/'); slash != std::string::npos)
      file = file.substr(slash + 1);
    const std::string device = d.rank ? d.device + " rank " + std::to_string(*d.rank) : d.device;
    o += Format("  %-40s %-16s %9lld %12.6f %12.6f %12.6f %7d\n", Shorten(file, 40).c_str(),
                device.c_str(), static_cast<long long>(d.kernels), PsToSeconds(d.kernel_ps),
                PsToSeconds(d.busy_ps), PsToSeconds(d.span_ps), d.streams);
  }
  return o;
}

}  // namespace profwatch::expose
