#include <algorithm>
#include <cstdio>
#include <tuple>

#include "aggregate/flops.h"
#include "core/text.h"
#include "expose/report.h"

namespace profwatch::expose {
namespace {

std::string FormatRaw(const char* fmt, auto... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string s(static_cast<size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

// Every text argument is the input's bytes (kernel, file, device and region
// names, notes quoting them) or fixed text: each is printed with control
// characters and invalid UTF-8 escaped (core/text.h), so one row stays one
// line whatever a trace names. Only format strings add line breaks.
inline std::string Held(const char* text) { return EscapeControl(text); }
inline auto Held(auto value) { return value; }
inline const char* Passed(const std::string& held) { return held.c_str(); }
inline auto Passed(auto value) { return value; }

std::string Format(const char* fmt, auto... args) {
  const auto held = std::make_tuple(Held(args)...);
  return std::apply([fmt](const auto&... h) { return FormatRaw(fmt, Passed(h)...); }, held);
}

// Long C++ template names make tables unreadable; the JSON keeps them whole.
std::string Shorten(const std::string& name, size_t max) {
  if (name.size() <= max) return name;
  return name.substr(0, max - 3) + "...";
}

using figures::WindowFigures;

// What runs alone on the main stream: the blocking kernels, else why none,
// and the GEMM/attention/conv time that runs alone as the step's own work.
std::string RenderBlockers(const figures::Diagnosis& dg) {
  std::string o;
  if (dg.blockers.empty()) {
    o += Format(
        "  %-22s none (no kernel outside gemm/attention/conv runs alone for %.0f%% of the step "
        "in calls of %.0f ms or more)\n",
        "main-stream blocker", 100 * figures::kBlockerShareOfStep, figures::kSerialCallMs);
  }
  for (size_t i = 0; i < dg.blockers.size(); ++i) {
    const auto& b = dg.blockers[i];
    o +=
        Format("  %-22s %s (%s): alone %.6f s (%.1f%% of the step), %.6f s per call\n",
               i == 0 ? "main-stream blocker" : "", Shorten(b.kernel, 80).c_str(), b.family.c_str(),
               b.exclusive_seconds_per_gpu_step, 100 * b.share_of_step, b.seconds_per_call);
  }
  if (dg.math_alone_seconds_per_gpu_step > 0) {
    o += Format(
        "  %-22s %.6f s (%.1f%% of the step): GEMM, attention and convolution kernels running "
        "alone are the step's work, not blockers\n",
        "math alone", dg.math_alone_seconds_per_gpu_step, 100 * dg.math_alone_share_of_step);
  }
  return o;
}

// Idle before each step's first kernel, and whether it is a host stall; ""
// with one profiled step (no boundary between steps).
std::string RenderHostStall(const aggregate::WindowStats& s, const figures::Diagnosis& dg) {
  if (!dg.host_stall) return "";
  const auto& h = *dg.host_stall;
  std::string gaps;
  for (double g : h.gaps_seconds) gaps += Format("%s%.6f", gaps.empty() ? "" : ", ", g);
  if (gaps.empty()) gaps = "none";
  std::string o = Format(
      "  %-22s %.6f s per step idle before the steps' first kernels (%.1f%% of the step; "
      "part of the idle above: the %d longest idle gaps of %s over %d steps: %s s)\n",
      h.stalled ? "host/input stall" : "between steps", h.seconds_per_step, 100 * h.share_of_step,
      h.gaps_per_gpu, h.gpu.c_str(), s.profile_steps, gaps.c_str());
  if (h.stalled) {
    o += "  => the GPU waits on the host between steps (data loader, host sync, Python, "
         "checkpointing): look there, not at the kernels\n";
  } else {
    o += Format("  %-22s below the %.0f%% of the step that is called a host stall\n", "",
                100 * figures::kHostStallShareOfStep);
  }
  return o;
}

// Kernel time by source region, the coverage, and what "none" holds for the
// input's schemas (aggregate/region.h says where regions come from).
std::string RenderRegions(const WindowFigures& w) {
  const figures::RegionsFigures& r = w.regions;
  if (!r.has_regions) {
    return Format(
        "  %-22s none: the input carries no scopes (JAX args.name, PyTorch gpu_user_annotation)\n",
        "regions");
  }
  std::string o;
  for (size_t i = 0; i < r.listed.size(); ++i) {
    o += Format("  %-22s %.6f s  %s\n", i == 0 ? "top regions" : "",
                r.listed[i].kernel_seconds_per_gpu_step, Shorten(r.listed[i].region, 80).c_str());
  }
  if (r.other_seconds_per_gpu_step) {
    o += Format("  %-22s %.6f s  other\n", "", *r.other_seconds_per_gpu_step);
  }
  o += Format("  %-22s %.1f%% of kernel time has a region; %.6f s has none\n", "region coverage",
              100 * r.coverage, r.unattributed_seconds_per_gpu_step);
  if (r.unscoped) {
    o += Format(
        "  %-22s %.6f s of kernels carried no scope (as in CUDA graphs); %.6f s of it placed by "
        "the HLO schedule\n",
        "", r.unscoped->kernel_seconds_per_gpu_step, r.unscoped->placed_seconds_per_gpu_step);
    if (!r.unscoped->unplaced_reason.empty()) {
      o +=
          Format("  %-22s not placed: %s\n", "", Shorten(r.unscoped->unplaced_reason, 100).c_str());
    }
  }
  if (r.jax_input) {
    o += Format(
        "  %-22s none: kernels of top-level code (only jit frames) or between calls the "
        "schedule cannot tell apart\n",
        "");
  }
  if (r.torch_input) {
    o += Format("  %-22s none: kernels outside every record_function range of their GPU\n", "");
  }
  return o;
}

// The plain-words answers: what blocks the main stream, whether the host
// holds the GPU back between steps, which GPU straggles (figures/diagnosis.h
// decides; this only words it).
std::string RenderDiagnosis(const WindowFigures& w) {
  const aggregate::WindowStats& s = *w.stats;
  const figures::Diagnosis& dg = w.diagnosis;
  std::string o = Format("\nDiagnosis (per GPU per step; shares of a %.6f s step, from %s)\n",
                         dg.step_seconds, dg.step_basis.c_str());
  o += RenderBlockers(dg);
  o += RenderHostStall(s, dg);
  if (const auto& e = w.exposed_collective) {
    const figures::CollectiveFigures* c = &w.collectives[e->index];
    std::string ranks;
    for (int64_t g : c->group_sizes) ranks += (ranks.empty() ? "" : "/") + std::to_string(g);
    o += Format(
        "  %-22s %s %.6f s exposed (%.1f%% of the step)%s%s, busbw %s%s\n", "exposed collective",
        std::string(aggregate::CollectiveKindName(c->kind)).c_str(),
        c->exposed_seconds_per_gpu_step, 100 * e->share_of_step.value_or(0),
        ranks.empty() ? "" : ", ranks ", ranks.c_str(),
        c->bus_bandwidth ? Format("%.1f GB/s", *c->bus_bandwidth / 1e9).c_str() : "n/a (no sizes)",
        figures::ProcessGroupPhrase(*c).c_str());
  }
  if (const auto& st = w.straggler; st && s.gpus() > 1) {
    o += Format("  %-22s %s %s: compute busy %.6f s, %.3fx the median GPU (%.6f s)\n", "straggler",
                st->host.c_str(), st->device.device.c_str(), st->compute_busy_seconds_per_step,
                st->ratio, st->median_compute_busy_seconds_per_step);
  }
  o += RenderRegions(w);
  return o;
}

// Collectives (aggregate/collectives.h): one row per kind with calls;
// absent figures are "n/a" with the reason below the table.
std::string RenderCollectives(const WindowFigures& w) {
  const std::vector<figures::CollectiveFigures>& rows = w.collectives;
  std::string o = "\nCollectives (per GPU per step; bandwidth over the window)\n";
  if (rows.empty()) {
    o += Format("  %-22s none: no communication kernel ran\n", "collectives");
    return o;
  }
  o += Format("  %-16s %10s %12s %12s %12s %11s %11s %8s\n", "collective", "calls", "kernel_s",
              "exposed_s", "MB", "algbw_GB/s", "busbw_GB/s", "ranks");
  auto num = [](const std::optional<double>& v, double scale) {
    return v ? Format("%.3f", *v / scale) : std::string("n/a");
  };
  std::string notes;
  for (const auto& f : rows) {
    std::string ranks;
    for (int64_t g : f.group_sizes) ranks += (ranks.empty() ? "" : "/") + std::to_string(g);
    if (f.more_group_sizes) ranks += "/...";
    const std::string name(aggregate::CollectiveKindName(f.kind));
    o += Format("  %-16s %10.1f %12.6f %12.6f %12s %11s %11s %8s\n", name.c_str(),
                f.calls_per_gpu_step, f.kernel_seconds_per_gpu_step, f.exposed_seconds_per_gpu_step,
                num(f.bytes_per_gpu_step, 1e6).c_str(), num(f.alg_bandwidth, 1e9).c_str(),
                num(f.bus_bandwidth, 1e9).c_str(), ranks.empty() ? "n/a" : ranks.c_str());
    if (!f.note.empty()) notes += Format("  %-16s n/a: %s\n", name.c_str(), f.note.c_str());
  }
  return o + notes;
}

// FLOPs (aggregate/flops.h): every figure that could not be computed is
// "n/a: why"; the family lines sum to the total.
std::string RenderFlops(const WindowFigures& w) {
  const aggregate::WindowStats& s = *w.stats;
  const figures::FlopFigures& ff = w.flops;
  std::string o = "\nFLOPs (per GPU per step, counted from operator shapes or the HLO)\n";
  if (!ff.total_per_gpu_step) {
    o += Format("  %-22s n/a: %s\n", "counted", ff.note.c_str());
    o += Format("  %-22s n/a: no counted FLOPs\n", "MFU");
  } else {
    // A kind whose kernels ran uncounted is n/a (kind_notes says why).
    auto kind = [&](size_t k) {
      return ff.per_gpu_step[k] ? Format("%.4g", *ff.per_gpu_step[k]) : std::string("n/a");
    };
    o +=
        Format("  %-22s %s matmul + %s attention + %s conv = %.4g FLOP (by FLOP kind)\n", "counted",
               kind(0).c_str(), kind(1).c_str(), kind(2).c_str(), *ff.total_per_gpu_step);
    for (size_t k = 0; k < ff.kind_notes.size(); ++k) {
      if (ff.kind_notes[k].empty()) continue;
      const std::string label =
          std::string(aggregate::FlopKindName(static_cast<aggregate::FlopKind>(k))) + " FLOPs";
      o += Format("  %-22s n/a: %s\n", label.c_str(), ff.kind_notes[k].c_str());
    }
    for (size_t i = 0; i < ff.families.size(); ++i) {
      const auto& f = ff.families[i];
      const std::string rate = f.achieved_per_second
                                   ? Format("%.1f TFLOP/s", *f.achieved_per_second / 1e12)
                                   : std::string("n/a TFLOP/s: its kernels took no time");
      o += Format("  %-22s %.4g FLOP at %s (%s)\n", i == 0 ? "by kernel family" : "",
                  f.per_gpu_step, rate.c_str(), f.family.c_str());
    }
    if (ff.achieved_per_second) {
      o += Format("  %-22s %.1f TFLOP/s over the %.6f s of their kernels\n", "achieved",
                  *ff.achieved_per_second / 1e12, *ff.counted_kernel_seconds_per_gpu_step);
    }
    const char* bound = ff.lower_bound ? ", a lower bound" : "";
    if (ff.model_per_second) {
      o += Format("  %-22s %.1f TFLOP/s (counted FLOPs over the step%s)\n", "model",
                  *ff.model_per_second / 1e12, bound);
    } else {
      o += Format("  %-22s n/a: %s\n", "model", ff.mfu_note.c_str());
    }
    if (ff.mfu) {
      o += Format("  %-22s %.1f%% of %.1f TFLOP/s (%s, %s%s)\n", "MFU", 100 * *ff.mfu,
                  s.flops.peak_per_second / 1e12, s.flops.device_name.c_str(),
                  s.flops.peak_source.c_str(), bound);
    } else {
      o += Format("  %-22s n/a: %s\n", "MFU", ff.mfu_note.c_str());
    }
  }
  if (ff.coverage) {
    o += Format("  %-22s %.1f%% of the %.6f s of math kernels (gemm, attention, conv)\n",
                "coverage", 100 * *ff.coverage, ff.math_kernel_seconds_per_gpu_step);
  }
  if (ff.unknown_kernel_seconds_per_gpu_step > 0) {
    o += Format("  %-22s %.6f s of math kernels", "uncounted",
                ff.unknown_kernel_seconds_per_gpu_step);
    if (ff.unknown_ops > 0) {
      o += Format(" (%lld operators or launches with unusable shapes)",
                  static_cast<long long>(ff.unknown_ops));
    }
    o += "\n";
    for (const figures::FlopFigures::Uncounted& u : ff.uncounted) {
      o += Format("  %-22s %.6f s %s %s\n", "", u.seconds_per_gpu_step,
                  u.op ? "operator" : "kernel", Shorten(u.name, 90).c_str());
    }
  }
  return o;
}

// Bytes moved (aggregate/bytes.h): per family, bandwidth, intensity and
// roofline place; every figure that could not be computed is "n/a: why".
std::string RenderBytes(const WindowFigures& w) {
  const figures::ByteFigures& b = w.bytes;
  std::string o = "\nBytes (per GPU per step, from operator shapes or the HLO)\n";
  if (!b.bytes_per_gpu_step) {
    o += Format("  %-22s n/a: %s\n", "bytes", b.note.c_str());
  } else {
    o += Format("  %-22s %.4g B\n", "bytes", *b.bytes_per_gpu_step);
    for (size_t i = 0; i < b.families.size(); ++i) {
      const figures::FamilyByteFigures& f = b.families[i];
      std::string line =
          Format("%.4g B in %.6f s", f.bytes_per_gpu_step, f.modeled_seconds_per_gpu_step);
      line += f.achieved_bytes_per_second
                  ? Format(" at %.1f GB/s", *f.achieved_bytes_per_second / 1e9)
                  : std::string(" (n/a GB/s: its kernels took no time)");
      if (f.arithmetic_intensity) {
        line += Format(", %.4g FLOP/B", *f.arithmetic_intensity);
      } else {
        line += ", n/a FLOP/B: no counted FLOPs";
      }
      if (f.roofline_bound) {
        line += Format(", %s-bound at %.1f%% of its roof", std::string(*f.roofline_bound).c_str(),
                       100 * *f.roofline_fraction);
      }
      o += Format("  %-22s %s (%s)\n", i == 0 ? "by kernel family" : "", line.c_str(),
                  f.family.c_str());
    }
  }
  if (b.coverage) {
    o += Format("  %-22s %.1f%% of compute kernel time has a bytes model\n", "coverage",
                100 * *b.coverage);
  }
  if (b.unknown_ops > 0) {
    o += Format("  %-22s %lld operators or launches with unusable shapes\n", "unknown",
                static_cast<long long>(b.unknown_ops));
  }
  if (b.memop_bytes_per_gpu_step) {
    o += Format("  %-22s %.4g B in %.6f s (memcpy/memset, their own byte count)\n",
                "memory operations", *b.memop_bytes_per_gpu_step, *b.memop_seconds_per_gpu_step);
  }
  if (b.ridge) {
    o += Format("  %-22s %.1f FLOP/B (peak %.1f GB/s, %s)\n", "ridge", *b.ridge,
                *b.peak_hbm_bytes_per_second / 1e9, b.peak_hbm_source.c_str());
  } else if (b.bytes_per_gpu_step) {
    o += Format("  %-22s n/a: %s\n", "roofline", b.roofline_note.c_str());
  }
  return o;
}

// Where the profile steps came from, as the table says it.
const char* ProfileStepsFrom(aggregate::ProfileStepsSource source) {
  switch (source) {
    case aggregate::ProfileStepsSource::kFlag:
      return "--profile-steps";
    case aggregate::ProfileStepsSource::kTrace:
      return "the trace's ProfilerStep# markers";
    case aggregate::ProfileStepsSource::kLog:
      return "the training log's profiler_steps";
    case aggregate::ProfileStepsSource::kNvtx:
      return "the NVTX step ranges";
    case aggregate::ProfileStepsSource::kDefault:
      break;
  }
  return "the default: no step markers, log or --profile-steps";
}

// The truncation warning, with the remedy only where it applies: a JAX
// trace.json.gz has the uncapped .xplane.pb beside it.
std::string TruncationWarning(const aggregate::WindowStats& s) {
  bool jax_json = false;
  for (const aggregate::FileSummary& f : s.files) {
    const bool cut = f.suspected_truncated || f.partial;
    jax_json = jax_json || (cut && f.schema == parse::TraceSchema::kJaxTraceEvents);
  }
  return std::string(
             "  !!! WARNING: truncated: a trace hit the 1,000,000-event writer cap or "
             "ended early; the last steps are missing") +
         (jax_json ? " (read the .xplane.pb: --source xplane)" : "") + "\n";
}

// The GPU agents seen without a kernel (rocprofv3 outputs only), named as
// far as the window lists them.
std::string IdleGpuAgentsLine(const aggregate::WindowStats& s) {
  std::string o =
      Format("  GPU agents seen without kernels: %lld", static_cast<long long>(*s.idle_gpu_agents));
  if (s.idle_gpu_agent_names.empty()) return o + "\n";
  o += " (";
  for (size_t i = 0; i < s.idle_gpu_agent_names.size(); ++i) {
    o += (i > 0 ? ", " : "") + EscapeControl(s.idle_gpu_agent_names[i]);
  }
  const int64_t more = *s.idle_gpu_agents - static_cast<int64_t>(s.idle_gpu_agent_names.size());
  if (more > 0) o += Format(", and %lld more", static_cast<long long>(more));
  return o + ")\n";
}

// What was read: files, dirs, GPUs (warning when not the expected count),
// launcher mode, steps, events, rule set, truncation and read errors.
std::string RenderHeader(const aggregate::WindowStats& s, const ReportContext& ctx) {
  std::string o;
  o += "profwatch window report";
  if (!ctx.window.empty()) o += ": " + EscapeControl(ctx.window);
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
  if (s.idle_gpu_agents) o += IdleGpuAgentsLine(s);
  o += Format("  launcher mode    %s (%.2f GPUs/file)\n",
              std::string(aggregate::LauncherModeName(s.launcher_mode)).c_str(), s.gpus_per_file);
  o += Format("  profile steps    %d (divisor %lld; from %s)\n", s.profile_steps,
              static_cast<long long>(s.divisor()), ProfileStepsFrom(s.profile_steps_source));
  if (!s.profile_steps_disagreement.empty()) {
    o += "  !!! WARNING: " + s.profile_steps_disagreement + "\n";
  }
  o += Format("  events           %llu\n", static_cast<unsigned long long>(s.events));
  o += Format("  rule set         %s\n", s.rule_set.c_str());
  if (s.truncated) o += TruncationWarning(s);
  for (const auto& e : ctx.errors) {
    o += Format("  !!! ERROR %s: %s\n", e.reason.c_str(), e.message.c_str());
  }
  return o;
}

// Kernel families that launched a kernel, with their share of kernel time
// (a family that ran nothing is left out: its row would be a 0 nothing
// measured; the JSON keeps it, null), then the memory operations, which are
// not kernels (a memory family's names are counted as memory operations, so
// that family never has a row here), then each family's top kernels.
std::string RenderFamilies(const WindowFigures& w) {
  std::string o = "\nKernel families (per GPU per step)\n";
  o += Format("  %-34s %12s %10s %8s\n", "family", "seconds", "launches", "share");
  for (const figures::FamilyFigures& f : w.families) {
    if (!f.ran) continue;
    o += Format("  %-34s %12.6f %10.1f %7.1f%%\n", f.family.c_str(), f.seconds_per_gpu_step,
                f.launches_per_gpu_step, f.share_of_kernel_time * 100.0);
  }
  o += Format("  %-34s %12.6f %10.1f\n", "TOTAL", w.time.total_kernel_seconds, w.time.launches);
  if (w.time.memops > 0) {
    o += Format("  %-34s %12.6f %10.1f  (memcpy/memset: not kernels, not in TOTAL)\n",
                "memory operations", w.time.memop_seconds, w.time.memops);
  }

  o += "\nTop kernels (per GPU per step)\n";
  for (const figures::FamilyFigures& f : w.families) {
    if (f.kernels.empty()) continue;
    o += "  " + EscapeControl(f.family) + "\n";
    for (const figures::KernelFigures& k : f.kernels) {
      o += Format("    %12.6f s %10.1f launches  %s\n", k.seconds_per_gpu_step,
                  k.launches_per_gpu_step, Shorten(k.kernel.name, 100).c_str());
    }
  }
  return o;
}

// Kernel sum, busy union, idle, overlap, exposed communication, and the
// step time the trace shows.
std::string RenderDecomposition(const WindowFigures& w) {
  std::string o = "\nMeasured decomposition (per GPU per step)\n";
  o += Format("  %-34s %12.6f\n", "total kernel (sum)", w.time.total_kernel_seconds);
  o += Format("  %-34s %12.6f\n", "busy (union of kernels)", w.time.busy_seconds);
  o += Format("  %-34s %12.6f\n", "idle (span - busy)", w.time.idle_seconds);
  o += Format("  %-34s %12.6f\n", "overlap (sum - busy)", w.time.overlap_seconds);
  o += Format("  %-34s %12.6f\n", "exposed communication", w.time.exposed_comm_seconds);
  if (w.trace_step_seconds) {
    o += Format("  %-34s %12.6f\n", "step time in trace (median)", *w.trace_step_seconds);
  }
  return o;
}

// The step time against kernel time, or how to give a step time.
std::string RenderStepComposition(const WindowFigures& w) {
  const auto& gap = w.step_gap;
  if (!gap) {
    return "\nStep time composition\n"
           "  no step time: the input has no step markers and none was given; pass the training "
           "log (--log FILE) or --step-time SECONDS for step - total kernel\n";
  }
  std::string o = Format("\nStep time composition (source: %s)\n", w.step.source.c_str());
  o += Format("  %-34s %12.6f\n", "step", gap->step_seconds);
  o += Format("  %-34s %12.6f\n", "total kernel", gap->total_kernel_seconds);
  o += Format("  %-34s %+12.6f (%+.1f%% of step)\n", "step - total kernel",
              gap->minus_kernel_seconds, gap->ratio * 100.0);
  if (w.top_family) {
    const figures::FamilyFigures& top = w.families[*w.top_family];
    o +=
        Format("  %-34s %s (%.6f s)\n", "top family", top.family.c_str(), top.seconds_per_gpu_step);
    if (!top.kernels.empty()) {
      o += Format("  %-34s %s\n", "top kernel", Shorten(top.kernels[0].kernel.name, 80).c_str());
    }
  }
  if (gap->minus_kernel_seconds > 0) {
    o += "  => positive gap: the GPU idles for part of each step (the Diagnosis below says "
         "whether between steps, a host/input stall)\n";
  } else {
    o += "  => negative or zero gap: kernels fill the step (streams overlap when negative)\n";
  }
  return o;
}

// One row per device: file base name, device (with rank where known), times.
std::string RenderDevices(const WindowFigures& w) {
  std::string o = "\nDevices\n";
  o += Format("  %-40s %-16s %9s %12s %12s %12s %7s\n", "file", "device", "kernels", "kernel_s",
              "busy_s", "span_s", "streams");
  for (const figures::DeviceFigures& df : w.devices) {
    const aggregate::DeviceSummary& d = df.device;
    std::string file = d.file;
    if (auto slash = file.find_last_of('/'); slash != std::string::npos)
      file = file.substr(slash + 1);
    const std::string device = d.rank ? d.device + " rank " + std::to_string(*d.rank) : d.device;
    o += Format("  %-40s %-16s %9lld %12.6f %12.6f %12.6f %7d\n", Shorten(file, 40).c_str(),
                device.c_str(), static_cast<long long>(d.kernels), df.kernel_seconds,
                df.busy_seconds, df.span_seconds, d.streams);
  }
  return o;
}

}  // namespace

std::string RenderTable(const WindowFigures& w, const ReportContext& ctx) {
  std::string o = RenderHeader(*w.stats, ctx);
  if (w.stats->divisor() == 0) {
    o += "\nNo GPU kernels found in this window.\n";
    if (auto mtia = w.dropped_events.find("mtia_event"); mtia != w.dropped_events.end()) {
      o += Format(
          "Its %llu events are of Meta's MTIA accelerator (Kineto's mtia_* activities): "
          "profwatch analyses GPU kernels only.\n",
          static_cast<unsigned long long>(mtia->second));
    }
    return o;
  }
  o += RenderFamilies(w);
  o += RenderDecomposition(w);
  o += RenderStepComposition(w);
  o += RenderDiagnosis(w);
  o += RenderFlops(w);
  o += RenderBytes(w);
  o += RenderCollectives(w);
  o += RenderDevices(w);
  return o;
}

}  // namespace profwatch::expose
