// KinetoEvents: see kineto_events.h.
#include "aggregate/kineto_events.h"

#include <string>

#include "aggregate/aggregator.h"
#include "aggregate/collectives.h"
#include "aggregate/flops.h"
#include "aggregate/region.h"

namespace profwatch::aggregate {

namespace {

bool IsKernelCat(std::string_view c) { return c == "kernel" || c == "Kernel"; }
bool IsMemopCat(std::string_view c) {
  return c == "gpu_memcpy" || c == "gpu_memset" || c == "Memcpy" || c == "Memset";
}

}  // namespace

int KinetoEvents::DeviceOf(int64_t ordinal) {
  auto it = devices_.find(ordinal);
  if (it != devices_.end()) return it->second;
  const int d = table_.NewDevice("GPU " + std::to_string(ordinal));
  if (d < 0) {
    ++table_.drops["device_limit"];  // past KernelTable::kMaxDevices
    return d;
  }
  devices_.emplace(ordinal, d);
  return d;
}

std::optional<int64_t> KinetoEvents::Ordinal(const parse::TraceEvent& e) {
  if (e.has_args_device) return e.args_device;
  if (e.pid.kind == parse::IdKind::kInt) return e.pid.num;
  ++table_.drops["no_device"];
  return std::nullopt;
}

// Step markers (ProfilerStep#N) are steps, not model regions.
void KinetoEvents::OnAnnotation(const parse::TraceEvent& e) {
  if (e.name.starts_with("ProfilerStep#")) return;
  const auto ordinal = Ordinal(e);
  if (!ordinal) return;
  int64_t start = 0, end = 0;
  if (!table_.Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
  if (annotation_count_ >= FileAggregator::kMaxAnnotations) {
    ++table_.drops["annotation_limit"];
    return;
  }
  const int dev = DeviceOf(*ordinal);
  if (dev < 0) return;
  ++annotation_count_;
  table_.devices[static_cast<size_t>(dev)].annotations.push_back(
      Annotation{start, end, table_.ScopeId(AnnotationRegion(e.name)) - 1});
}

void KinetoEvents::OnComplete(const parse::TraceEvent& e) {
  const bool kernel = IsKernelCat(e.cat);
  const bool memop = !kernel && IsMemopCat(e.cat);
  if (e.cat == "gpu_user_annotation") {
    OnAnnotation(e);
    return;
  }
  if (!kernel && !memop) {
    if (e.has_args_external_id && e.cat == "cpu_op") OnOperator(e);
    // record_param_comms: the collective metadata of the kernels it launched.
    if (e.has_args_external_id && !e.args_collective.empty() &&
        !collective_ops_.Add(e.args_external_id, CollectiveCallOf(e))) {
      ++table_.drops["collective_op_limit"];
    }
    if (e.name.starts_with("ProfilerStep#")) {
      int64_t start = 0, end = 0;
      if (!table_.Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
      table_.AddStep(e.name.substr(13), start, end);
    }
    return;
  }
  const auto ordinal = Ordinal(e);
  if (!ordinal) return;
  int64_t stream = -1;
  if (e.has_args_stream) {
    stream = e.args_stream;
  } else if (e.tid.kind == parse::IdKind::kInt) {
    stream = e.tid.num;
  } else if (e.tid.kind == parse::IdKind::kString && e.tid.str.starts_with("stream ")) {
    stream = ParseInt(e.tid.str.substr(7)).value_or(-1);
  }
  int64_t start = 0, end = 0;
  if (!table_.Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
  const int dev = DeviceOf(*ordinal);
  if (dev < 0) return;
  if (memop) {
    table_.AddMemop(dev, start, end);
    return;
  }
  const uint32_t name = table_.Intern(e.name);
  CollectiveCall call = CollectiveCallOf(e);
  if (!call.kind && e.has_args_external_id) {
    if (const CollectiveCall* op = collective_ops_.Find(e.args_external_id)) call = *op;
  }
  table_.AddKernel(dev, stream, name, start, end, &call);
  if (e.has_args_external_id) flops_.AddKernel(e.args_external_id, end - start, name);
}

void KinetoEvents::OnOperator(const parse::TraceEvent& e) {
  if (!TorchOpKind(e.name)) return;
  auto f = TorchOpFlops(e.name, op_shapes_.Read(e.args_input_dims, e.args_concrete_inputs));
  if (!f) return;
  flops_.AddOperator(e.args_external_id, *f);
}

}  // namespace profwatch::aggregate
