#include "figures/flop_figures.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

#include "aggregate/flops.h"

namespace profwatch::figures {

using aggregate::FileSummary;
using aggregate::FlopStats;
using aggregate::PlausibleFlopsBound;
using aggregate::PsToSeconds;
using aggregate::WindowStats;

namespace {

std::string Tera(double flops_per_second) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", flops_per_second / 1e12);
  return buf;
}

// Why a window with GPUs counted no FLOP, and how to get them, by what the
// input is.
std::string NothingCountedNote(const WindowStats& s) {
  bool torch = false, jax = false, nsys = false, rocprof = false;
  for (const FileSummary& f : s.files) {
    torch = torch || f.schema == parse::TraceSchema::kKineto;
    jax = jax || f.schema == parse::TraceSchema::kJaxTraceEvents ||
          f.schema == parse::TraceSchema::kXPlane;
    nsys = nsys || f.schema == parse::TraceSchema::kNsys;
    rocprof = rocprof || f.schema == parse::TraceSchema::kRocprof;
  }
  const std::string unknown = std::to_string(s.flops.unknown_ops);
  if (torch) {
    if (s.flops.unknown_ops > 0) {
      return "no operator shapes: " + unknown +
             " matmul, attention or convolution operators without usable Input Dims (profile "
             "with record_shapes=True)";
    }
    return "no operator shapes (profile with record_shapes=True)";
  }
  if (jax) {
    if (s.flops.unknown_ops > 0) {
      return "no usable HLO shapes: " + unknown + " launches of counted kinds could not be counted";
    }
    if (!s.graph.unplaced.empty()) return "no HLO modules: " + s.graph.unplaced;
    return "no HLO FLOPs: no .xplane.pb of the process beside the trace (it holds the HLO "
           "modules), or no dot, cuBLAS GEMM or cuDNN attention launch in them";
  }
  if (nsys) return "an Nsight Systems export records no operator shapes";
  if (rocprof) return "rocprofv3's JSON output records no operator shapes";
  return "no operator shapes or HLO modules in the input";
}

// The built-in math family whose kernels do a kind's FLOPs.
std::string_view KindFamily(aggregate::FlopKind k) {
  switch (k) {
    case aggregate::FlopKind::kMatmul:
      return "gemm";
    case aggregate::FlopKind::kAttention:
      return "attention";
    case aggregate::FlopKind::kConv:
      return "conv";
  }
  return "";
}

// What the count is compared with: the device's peak, or the most any GPU
// can do when no peak is known.
std::string BoundName(const FlopStats& f, double bound) {
  return f.peak_per_second > 0
             ? "the " + Tera(bound) + " TFLOP/s peak of " +
                   (f.device_name.empty() ? std::string("the device") : f.device_name) + " (" +
                   f.peak_source + ")"
             : "the " + Tera(bound) + " TFLOP/s any GPU can do (no known peak)";
}

// A count is physical only if the kernels that did it could have: over all
// of them and per family, at most the bound (no kernel time at all: an
// infinite rate). The note when it is not; empty when it is.
std::string ImpossibleCountNote(const FlopStats& f, double bound, const std::string& bound_name) {
  auto rate = [](double flops, int64_t ps) {
    return ps > 0 ? flops / PsToSeconds(ps) : std::numeric_limits<double>::infinity();
  };
  double worst = rate(f.Total(), f.TotalKernelPs());
  std::string where = "their kernels";
  for (const FlopStats::Family& fam : f.families) {
    if (fam.flops <= 0) continue;
    if (const double r = rate(fam.flops, fam.kernel_ps); r > worst) {
      worst = r;
      where = "the " + fam.family + " kernels";
    }
  }
  if (worst <= bound) return "";
  return "impossible count: the recorded shapes imply " +
         (std::isinf(worst) ? std::string("FLOPs in no kernel time") : Tera(worst) + " TFLOP/s") +
         " on " + where + ", above " + bound_name +
         " (FP8 or sparse kernels: give their peak with --peak-flops)";
}

// FLOPs per GPU step of each kind; a kind with none is zero only if no
// kernel of its family ran or that family's FLOPs were counted (as another
// kind), else unset with a note.
void AddKindFigures(const WindowStats& s, FlopFigures& out) {
  const FlopStats& f = s.flops;
  const double divisor = static_cast<double>(s.divisor());
  for (size_t k = 0; k < out.per_gpu_step.size(); ++k) {
    if (f.flops[k] > 0) {
      out.per_gpu_step[k] = f.flops[k] / divisor;
      continue;
    }
    const std::string_view family = KindFamily(static_cast<aggregate::FlopKind>(k));
    int64_t ran_ps = 0;
    for (const aggregate::FamilySummary& fam : s.families) {
      if (fam.family == family) ran_ps += fam.total_ps;
    }
    bool counted = false;
    for (const FlopStats::Family& fam : f.families)
      counted = counted || (fam.family == family && fam.flops > 0);
    if (ran_ps > 0 && !counted) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.6g", s.PerGpuStepSeconds(ran_ps));
      out.kind_notes[k] = std::string(family) + " kernels ran (" + seconds +
                          " s per GPU step) and none of their FLOPs were counted: their "
                          "operators have no FLOP formula or no usable shapes (see uncounted)";
    } else {
      out.per_gpu_step[k] = 0.0;
    }
  }
}

// The model FLOP/s over the step and the MFU, or why not (mfu_note).
// REQUIRES: out.total_per_gpu_step is set.
void AddMfu(const WindowStats& s, const StepTime& step_time, double bound,
            const std::string& bound_name, FlopFigures& out) {
  const FlopStats& f = s.flops;
  const DiagnosisStep measured = DiagnosisStepOf(s, step_time);
  if (!measured.measured) {
    out.mfu_note = "no step time (give --log or --step-time)";
    return;
  }
  const double step = measured.seconds;
  const double model = *out.total_per_gpu_step / step;
  if (!(model <= bound)) {
    out.mfu_note = "the counted FLOPs over the " + std::to_string(step) + " s step are " +
                   Tera(model) + " TFLOP/s, above " + bound_name +
                   ": the step time is shorter than the work in it";
    return;
  }
  out.model_per_second = model;
  if (f.peak_per_second <= 0) {
    out.mfu_note = f.device_name.empty()
                       ? "no file of the window names its device (give --peak-flops)"
                       : "no known peak for device '" + f.device_name + "' (give --peak-flops)";
  } else {
    out.mfu = model / f.peak_per_second;
  }
  if (out.coverage && *out.coverage < kMinFlopCoverage) {
    out.lower_bound = true;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%", 100 * *out.coverage);
    const std::string why = std::string("a lower bound: FLOPs counted for ") + pct +
                            " of the math kernels' time (the rest did FLOPs no one counted)";
    out.mfu_note = out.mfu_note.empty() ? why : out.mfu_note + "; " + why;
  }
}

}  // namespace

FlopFigures ComputeFlopFigures(const aggregate::WindowStats& s, const StepTime& step_time) {
  const FlopStats& f = s.flops;
  FlopFigures out;
  out.attempted = f.Counted();
  out.unknown_ops = f.unknown_ops;
  out.math_kernel_seconds_per_gpu_step = s.PerGpuStepSeconds(f.math_ps);
  out.unknown_kernel_seconds_per_gpu_step = s.PerGpuStepSeconds(f.unknown_kernel_ps);
  for (const FlopStats::Uncounted& u : f.uncounted) {
    out.uncounted.push_back({u.name, u.op, s.PerGpuStepSeconds(u.ps)});
  }
  out.coverage = f.Coverage();
  if (f.peak_per_second > 0) out.peak_per_second = f.peak_per_second;
  if (s.divisor() == 0) {
    out.note = "no GPU kernels in the window";
    out.mfu_note = out.note;
    return out;
  }
  if (!(f.Total() > 0)) {  // NaN too
    out.note = NothingCountedNote(s);
    out.mfu_note = "no counted FLOPs: " + out.note;
    return out;
  }
  const double bound = PlausibleFlopsBound(f);
  const std::string bound_name = BoundName(f, bound);
  if (std::string impossible = ImpossibleCountNote(f, bound, bound_name); !impossible.empty()) {
    out.note = std::move(impossible);
    out.mfu_note = "no counted FLOPs: " + out.note;
    return out;
  }
  AddKindFigures(s, out);
  const double divisor = static_cast<double>(s.divisor());
  out.total_per_gpu_step = f.Total() / divisor;
  out.counted_kernel_seconds_per_gpu_step = s.PerGpuStepSeconds(f.TotalKernelPs());
  if (f.TotalKernelPs() > 0) out.achieved_per_second = f.Total() / PsToSeconds(f.TotalKernelPs());
  for (const FlopStats::Family& fam : f.families) {
    FamilyFlopFigures ff{fam.family, fam.flops / divisor, std::nullopt};
    if (fam.kernel_ps > 0) ff.achieved_per_second = fam.flops / PsToSeconds(fam.kernel_ps);
    out.families.push_back(std::move(ff));
  }
  AddMfu(s, step_time, bound, bound_name, out);
  return out;
}

}  // namespace profwatch::figures
