#include "figures/step_basis.h"

namespace profwatch::figures {
namespace {

bool Positive(const std::optional<double>& v) { return v && *v > 0; }

}  // namespace

StepTime ChooseStepTime(const StepSources& s, const aggregate::WindowStats* window) {
  if (Positive(s.given)) return {s.given, "config"};
  if (s.recorded && Positive(s.recorded->seconds)) return *s.recorded;
  if (Positive(s.log_window)) return {s.log_window, "log"};
  if (Positive(s.log_steady)) return {s.log_steady, "log"};
  if (window != nullptr) {
    if (const double t = window->TraceStepSeconds(); t > 0) return {t, "trace"};
  }
  if (Positive(s.config)) return {s.config, "config"};
  return {};
}

DiagnosisStep DiagnosisStepOf(const aggregate::WindowStats& s, const StepTime& step) {
  if (Positive(step.seconds)) return {*step.seconds, step.source, true};
  if (const double t = s.TraceStepSeconds(); t > 0) return {t, "trace", true};
  return {s.PerGpuStepSeconds(s.SumSpanPs()), "kernel span", false};
}

}  // namespace profwatch::figures
