// KinetoEvents: see kineto_events.h.
#include "aggregate/kineto_events.h"

#include <string>

#include "aggregate/aggregator.h"
#include "aggregate/bytes.h"
#include "aggregate/collectives.h"
#include "aggregate/flops.h"
#include "aggregate/region.h"

namespace profwatch::aggregate {

namespace {

bool IsKernelCat(std::string_view c) { return c == "kernel" || c == "Kernel"; }
bool IsMemopCat(std::string_view c) {
  return c == "gpu_memcpy" || c == "gpu_memset" || c == "Memcpy" || c == "Memset";
}
// Host operators (2021 schema: Operator) and record_function ranges.
bool IsOperatorCat(std::string_view c) {
  return c == "cpu_op" || c == "Operator" || c == "user_annotation";
}
// A runtime call that launches kernels (cudaLaunchKernel, cuLaunchKernel,
// hipLaunchKernel, hipExtModuleLaunchKernel, cudaGraphLaunch, ...).
bool IsLaunch(const parse::TraceEvent& e) {
  return (e.cat == "cuda_runtime" || e.cat == "cuda_driver" || e.cat == "Runtime") &&
         e.name.find("aunch") != std::string_view::npos;
}

// The element counts of the first two tensor inputs in a Kineto "Input
// Dims" array (entries [] are no tensors: vLLM's all_reduce(handle, inp,
// ...); a TensorList input counts its first tensor), and the first one's
// element size from the same entry of "Input type".
CollectiveOpShapes ShapesOf(parse::OpShapeReader& reader, std::string_view dims,
                            std::string_view types) {
  CollectiveOpShapes s;
  std::vector<int64_t> tensors;
  size_t first_at = 0;
  const std::vector<std::optional<int64_t>> inputs = reader.InputElements(dims);
  for (size_t i = 0; i < inputs.size() && tensors.size() < 2; ++i) {
    if (!inputs[i]) continue;
    if (tensors.empty()) first_at = i;
    tensors.push_back(*inputs[i]);
  }
  if (!tensors.empty()) s.first = tensors[0];
  if (tensors.size() > 1) s.second = tensors[1];
  if (tensors.empty() || types.empty()) return s;
  const std::optional<std::vector<std::string>> t = reader.Strings(types);
  if (t && first_at < t->size()) s.element_bytes = TorchTypeBytes((*t)[first_at]).value_or(-1);
  return s;
}

}  // namespace

int KinetoEvents::DeviceOf(int64_t ordinal) {
  auto it = devices_.find(ordinal);
  if (it != devices_.end()) return it->second;
  const int d = table_.NewDevice("GPU " + std::to_string(ordinal));
  if (d < 0) {
    ++table_.drops["device_limit"];  // past kMaxDevices
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

bool KinetoEvents::MaybeCollective(uint32_t name) {
  if (maybe_collective_.size() <= name) maybe_collective_.resize(table_.names.size(), -1);
  int8_t& m = maybe_collective_[name];
  if (m < 0) {
    const std::string_view n = table_.names[name];
    m = 0;
    for (std::string_view part :
         {"nccl", "rccl", "NCCL", "multimem", "one_shot", "two_shot", "all_reduce", "allreduce",
          "all_gather", "allgather", "reduce_scatter", "reducescatter", "all_to_all", "alltoall",
          "cross_device_reduce", "nvshmem"}) {
      if (n.find(part) != std::string::npos) m = 1;
    }
  }
  return m == 1;
}

// Step markers (ProfilerStep#N) are steps, not model regions.
void KinetoEvents::OnAnnotation(const parse::TraceEvent& e) {
  if (e.name.starts_with("ProfilerStep#")) return;
  const auto ordinal = Ordinal(e);
  if (!ordinal) return;
  int64_t start = 0, end = 0;
  if (!table_.Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
  if (annotation_count_ >= kMaxAnnotations) {
    ++table_.drops["annotation_limit"];
    return;
  }
  const int dev = DeviceOf(*ordinal);
  if (dev < 0) return;
  ++annotation_count_;
  table_.devices[static_cast<size_t>(dev)].annotations.push_back(
      Annotation{start, end, table_.ScopeId(AnnotationRegion(e.name)) - 1});
}

void KinetoEvents::OnHost(const parse::TraceEvent& e) {
  const bool op = IsOperatorCat(e.cat);
  const bool launch = e.args_correlation >= 0 && IsLaunch(e);
  const bool step = e.name.starts_with("ProfilerStep#");
  // record_param_comms: the collective metadata of the kernels it launched.
  if (e.has_args_external_id && !e.args_collective.empty() &&
      !collective_ops_.Add(e.args_external_id, CollectiveCallOf(e))) {
    ++table_.drops["collective_op_limit"];
  }
  if (!op && !launch && !step) return;
  int64_t start = 0, end = 0;
  if (!e.has_ts) return;  // no time: nothing to place (steps count it below)
  if (!table_.Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
  if (step) table_.AddStep(e.name.substr(13), start, end);
  const uint32_t thread = launches_.Thread(e.pid, e.tid);
  if (launch) launches_.AddLaunch(e.args_correlation, thread, start);
  if (op) OnOperator(e, thread, start, end);
}

void KinetoEvents::OnOperator(const parse::TraceEvent& e, uint32_t thread, int64_t start,
                              int64_t end) {
  CollectiveOpCall call;
  if (!e.args_collective.empty()) {
    call =
        KinetoCollectiveOpCall(e.args_collective, e.args_dtype, e.args_in_nelems, e.args_out_nelems,
                               e.args_group_size, e.args_pg_desc, e.args_pg_ranks);
  } else if (CollectiveKindOfOperator(e.name)) {
    call = CollectiveCallOfOperator(e.name,
                                    ShapesOf(op_shapes_, e.args_input_dims, e.args_input_type));
  }
  if (call.kind) {
    launches_.AddRange(LaunchJoin::kCollective, thread, start, end,
                       static_cast<uint32_t>(launchers_.size()));
    launchers_.push_back(std::move(call));
  }
  if (e.cat == "user_annotation" || !e.has_args_external_id) return;
  flops_.AddOperatorName(e.args_external_id, e.name);
  const bool flop_op = TorchOpKind(e.name).has_value();
  // Whether the operator has a bytes model at all, before decoding its
  // shapes: TorchOpBytes answers nullopt without one, shapes or not. An
  // operator without recorded shapes (record_shapes=False) is no bytes
  // operator: the window's bytes are absent with that reason.
  const bool byte_op = !e.args_input_dims.empty() && TorchOpBytes(e.name, {}).has_value();
  if (!flop_op && !byte_op) return;
  const parse::OpShapes shapes = op_shapes_.Read(e.args_input_dims, e.args_concrete_inputs,
                                                 byte_op ? e.args_input_type : std::string_view{});
  if (flop_op) {
    if (auto f = TorchOpFlops(e.name, shapes)) {
      flops_.AddOperator(e.args_external_id, *f, thread, start, end);
    }
  }
  if (byte_op) {
    if (auto b = TorchOpBytes(e.name, shapes)) {
      flops_.AddBytesOperator(e.args_external_id, *b, thread, start, end);
    }
  }
}

void KinetoEvents::OnComplete(const parse::TraceEvent& e) {
  const bool kernel = IsKernelCat(e.cat);
  const bool memop = !kernel && IsMemopCat(e.cat);
  if (e.cat == "gpu_user_annotation") {
    OnAnnotation(e);
    return;
  }
  if (!kernel && !memop) {
    // Meta's MTIA accelerator (Kineto's mtia_runtime, mtia_ccp_events, ...
    // activities): no GPU kernels; counted so the report says what the
    // file holds.
    if (e.cat.starts_with("mtia_")) ++table_.drops["mtia_event"];
    OnHost(e);
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
    table_.AddMemop(dev, start, end, e.args_bytes);
    return;
  }
  OnKernel(e, dev, stream, start, end);
}

void KinetoEvents::OnKernel(const parse::TraceEvent& e, int dev, int64_t stream, int64_t start,
                            int64_t end) {
  const uint32_t name = table_.Intern(e.name);
  // Older Kineto writes the correlation id as the External id: no operator's.
  const bool trusted = e.has_args_external_id &&
                       !(e.args_correlation >= 0 && e.args_external_id == e.args_correlation);
  if (trusted) {
    flops_.AddKernel(e.args_external_id, end - start, name, e.args_correlation);
  } else if (e.args_correlation >= 0) {
    flops_.AddLaunchedKernel(e.args_correlation, end - start, name);
  }
  CollectiveCall call = CollectiveCallOf(e);
  if (!call.kind && trusted) {
    if (const CollectiveCall* op = collective_ops_.Find(e.args_external_id)) call = *op;
  }
  if (!call.kind && e.args_correlation >= 0 && MaybeCollective(name)) {
    if (held_.size() < kMaxHeldKernels) {
      held_.push_back({start, end, stream, e.args_correlation,
                       trusted ? std::optional<int64_t>(e.args_external_id) : std::nullopt, name,
                       dev});
      return;
    }
    ++table_.drops["collective_held_limit"];
  }
  table_.AddKernel(dev, stream, name, start, end, &call);
}

CollectiveCall KinetoEvents::CallOf(const HeldKernel& k) {
  // record_param_comms written after the kernel.
  if (k.external_id) {
    if (const CollectiveCall* op = collective_ops_.Find(*k.external_id)) return *op;
  }
  std::vector<uint32_t> open;
  if (!launches_.Enclosing(LaunchJoin::kCollective, k.correlation, kMaxLaunchers, &open)) {
    return {};
  }
  std::vector<CollectiveOpCall> calls;
  calls.reserve(open.size());
  for (uint32_t i : open) calls.push_back(launchers_[i]);
  return CollectiveCallOfLaunchers(calls);
}

void KinetoEvents::Finish() {
  launches_.Finish();
  for (const HeldKernel& k : held_) {
    const CollectiveCall call = CallOf(k);
    table_.AddKernel(k.dev, k.stream, k.name, k.start, k.end, &call);
  }
  std::vector<HeldKernel>().swap(held_);
}

}  // namespace profwatch::aggregate
