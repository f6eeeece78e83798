#include "aggregate/collectives.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace profwatch::aggregate {

namespace {

// Lower case letters and digits of `name` up to its instance suffix (".3" of
// "all-gather-start.3"); '-', '_' and the like dropped; written to `buf`
// (no allocation: this runs for every JAX kernel with an hlo_op). Names
// longer than the buffer are cut (no collective name needs more).
struct Normalized {
  std::array<char, 64> buf;
  size_t size = 0;
  explicit Normalized(std::string_view name) {
    for (char c : name) {
      if (c == '.' || c == '(' || size >= buf.size()) break;
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) buf[size++] = c;
    }
  }
  std::string_view view() const { return {buf.data(), size}; }
};

bool Starts(std::string_view s, std::string_view p) { return s.starts_with(p); }

// Printable ASCII of `text`, cut at kMaxProcessGroupText characters.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= kMaxProcessGroupText) break;
    if (c >= 0x20 && c < 0x7f) out += c;
  }
  return out;
}

}  // namespace

std::string_view CollectiveKindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kSendRecv:
      return "send_recv";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kOther:
      break;
  }
  return "other";
}

std::optional<CollectiveKind> CollectiveKindOfName(std::string_view name) {
  // A leading "_" (Kineto's _allgather_base) and "nccl:" (annotations) say nothing.
  if (name.starts_with("nccl:")) name.remove_prefix(5);
  const Normalized normalized(name);
  std::string_view n = normalized.view();
  // NCCL's API names, as its NVTX ranges show them: ncclAllReduce, ncclSend.
  if (n.starts_with("nccl")) n.remove_prefix(4);
  if (Starts(n, "allreduce")) return CollectiveKind::kAllReduce;
  if (Starts(n, "allgather")) return CollectiveKind::kAllGather;
  if (Starts(n, "reducescatter")) return CollectiveKind::kReduceScatter;
  if (Starts(n, "alltoall") || Starts(n, "raggedalltoall")) return CollectiveKind::kAllToAll;
  if (Starts(n, "send") || Starts(n, "recv") || Starts(n, "collectivepermute") ||
      Starts(n, "batchisendirecv")) {
    return CollectiveKind::kSendRecv;
  }
  if (Starts(n, "broadcast") || Starts(n, "collectivebroadcast")) {
    return CollectiveKind::kBroadcast;
  }
  if (n == "reduce" || n == "reducecoalesced") return CollectiveKind::kReduce;
  if (n == "gather" || n == "scatter" || n == "barrier" || Starts(n, "allgathercoalesced")) {
    return CollectiveKind::kOther;
  }
  return std::nullopt;
}

std::optional<CollectiveKind> CollectiveKindOfHloOp(std::string_view op) {
  if (op.empty()) return std::nullopt;
  switch (op[0]) {
    case 'a':
      if (op.starts_with("all-reduce")) return CollectiveKind::kAllReduce;
      if (op.starts_with("all-gather")) return CollectiveKind::kAllGather;
      if (op.starts_with("all-to-all")) return CollectiveKind::kAllToAll;
      break;
    case 'r':
      if (op.starts_with("reduce-scatter")) return CollectiveKind::kReduceScatter;
      if (op.starts_with("ragged-all-to-all")) return CollectiveKind::kAllToAll;
      if (op.starts_with("recv")) return CollectiveKind::kSendRecv;
      break;
    case 'c':
      if (op.starts_with("collective-permute")) return CollectiveKind::kSendRecv;
      if (op.starts_with("collective-broadcast")) return CollectiveKind::kBroadcast;
      break;
    case 's':
      if (op.starts_with("send")) return CollectiveKind::kSendRecv;
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::optional<CollectiveKind> CollectiveKindOfKernel(std::string_view kernel) {
  auto has = [&](std::string_view part) { return kernel.find(part) != std::string_view::npos; };
  if (has("RaggedAllToAll")) return CollectiveKind::kAllToAll;
  // Symmetric memory's and vLLM's custom all-reduce kernels.
  if (has("multimem_all_reduce") || has("one_shot_all_reduce") || has("two_shot_all_reduce") ||
      has("cross_device_reduce")) {
    return CollectiveKind::kAllReduce;
  }
  if (has("multimem_all_gather")) return CollectiveKind::kAllGather;
  // Expert-parallel token exchange (DeepEP and DeepSeek's build of it,
  // pplx-kernels): dispatch and combine send each token to the GPUs of its
  // experts and back; the library's other kernels (notify, layout) are
  // communication of no modelled kind.
  if (has("deep_ep::") || has("dpsk::ep::") || has("pplx::")) {
    return has("dispatch") || has("combine") ? CollectiveKind::kAllToAll : CollectiveKind::kOther;
  }
  size_t at = kernel.find("ncclDevKernel_");
  size_t skip = 14;
  if (at == std::string_view::npos) {
    at = kernel.find("ncclKernel_");
    skip = 11;
  }
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view op = kernel.substr(at + skip);
  op = op.substr(0, op.find_first_of("_(<"));
  if (op == "AllReduce") return CollectiveKind::kAllReduce;
  if (op == "AllGather") return CollectiveKind::kAllGather;
  if (op == "ReduceScatter") return CollectiveKind::kReduceScatter;
  if (op.starts_with("AllToAll")) return CollectiveKind::kAllToAll;
  if (op == "SendRecv" || op == "Send" || op == "Recv") return CollectiveKind::kSendRecv;
  if (op == "Broadcast") return CollectiveKind::kBroadcast;
  if (op == "Reduce") return CollectiveKind::kReduce;
  return std::nullopt;  // Generic_N (RCCL) and anything else: the name does not say
}

std::optional<CollectiveKind> CollectiveKindOfOperator(std::string_view op) {
  static constexpr std::string_view kNamespaces[] = {
      "nccl:", "c10d::", "c10d_functional::", "_c10d_functional::", "symm_mem::", "_C_custom_ar::"};
  bool launcher = false;
  for (std::string_view ns : kNamespaces) {
    if (op.starts_with(ns)) {
      op.remove_prefix(ns.size());
      launcher = true;
      break;
    }
  }
  if (!launcher) return std::nullopt;
  // symm_mem::multimem_all_reduce_, one_shot_all_reduce, two_shot_all_reduce_.
  for (std::string_view algorithm : {"multimem_", "one_shot_", "two_shot_"}) {
    if (op.starts_with(algorithm)) op.remove_prefix(algorithm.size());
  }
  return CollectiveKindOfName(op);
}

std::optional<int64_t> TorchTypeBytes(std::string_view t) {
  struct Size {
    std::string_view name;
    int64_t bytes;
  };
  static constexpr Size kSizes[] = {{"float", 4},
                                    {"double", 8},
                                    {"c10::Half", 2},
                                    {"c10::BFloat16", 2},
                                    {"int", 4},
                                    {"long int", 8},
                                    {"long", 8},
                                    {"short int", 2},
                                    {"short", 2},
                                    {"signed char", 1},
                                    {"unsigned char", 1},
                                    {"bool", 1},
                                    {"c10::Float8_e4m3fn", 1},
                                    {"c10::Float8_e5m2", 1},
                                    {"c10::Float8_e4m3fnuz", 1},
                                    {"c10::Float8_e5m2fnuz", 1},
                                    {"c10::complex<float>", 8},
                                    {"c10::complex<double>", 16},
                                    {"c10::complex<c10::Half>", 4}};
  for (const Size& s : kSizes) {
    if (s.name == t) return s.bytes;
  }
  return std::nullopt;
}

CollectiveOpCall CollectiveCallOfOperator(std::string_view op, const CollectiveOpShapes& shapes) {
  CollectiveOpCall c;
  c.kind = CollectiveKindOfOperator(op);
  if (!c.kind) return c;
  c.element_bytes = shapes.element_bytes;
  // c10d's base operators: (output, input, ...); NCCL's ranges: the input.
  const bool base = op.find("_base") != std::string_view::npos && op.starts_with("c10d::");
  if (base && shapes.second >= 0) {
    c.out_elements = shapes.first;
    c.in_elements = shapes.second;
    const int64_t big = *c.kind == CollectiveKind::kAllGather ? c.out_elements : c.in_elements;
    const int64_t small = *c.kind == CollectiveKind::kAllGather ? c.in_elements : c.out_elements;
    if ((*c.kind == CollectiveKind::kAllGather || *c.kind == CollectiveKind::kReduceScatter) &&
        small > 0 && big % small == 0) {
      c.ranks = big / small;
    }
  } else if (!base) {
    c.in_elements = shapes.first;
  }
  return c;
}

CollectiveCall CollectiveCallOfLaunchers(const std::vector<CollectiveOpCall>& innermost_first) {
  CollectiveCall call;
  const CollectiveOpCall* named = nullptr;
  for (const CollectiveOpCall& c : innermost_first) {
    if (c.kind) {
      named = &c;
      break;
    }
  }
  if (named == nullptr) return call;
  const CollectiveKind kind = *named->kind;
  call.kind = kind;
  int64_t in = -1, out = -1, element = -1, ranks = -1;
  for (const CollectiveOpCall& c : innermost_first) {
    if (c.kind != kind) continue;
    if (in < 0) in = c.in_elements;
    if (out < 0) out = c.out_elements;
    if (element < 0) element = c.element_bytes;
    if (ranks < 0) ranks = c.ranks;
    if (call.group.description.empty()) call.group = c.group;
  }
  if (ranks >= 1) call.ranks = ranks;
  // An all-gather that lists its input alone moves the input of every rank.
  if (kind == CollectiveKind::kAllGather && out < 0 && in >= 0 && ranks >= 1) {
    int64_t all = 0;
    if (!__builtin_mul_overflow(in, ranks, &all)) out = all;
  }
  if (element >= 1) call.bytes = CollectiveBytes(kind, element, in, out);
  return call;
}

std::optional<int64_t> DtypeBytes(std::string_view d) {
  struct Size {
    std::string_view name;
    int64_t bytes;
  };
  static constexpr Size kSizes[] = {// Kineto (c10::ScalarType names)
                                    {"Float", 4},
                                    {"Double", 8},
                                    {"Half", 2},
                                    {"BFloat16", 2},
                                    {"Int", 4},
                                    {"Long", 8},
                                    {"Short", 2},
                                    {"Char", 1},
                                    {"Byte", 1},
                                    {"Bool", 1},
                                    {"ComplexHalf", 4},
                                    {"ComplexFloat", 8},
                                    {"ComplexDouble", 16},
                                    {"Float8_e4m3fn", 1},
                                    {"Float8_e5m2", 1},
                                    {"Float8_e4m3fnuz", 1},
                                    {"Float8_e5m2fnuz", 1},
                                    {"UInt16", 2},
                                    {"UInt32", 4},
                                    {"UInt64", 8},
                                    // HLO element types
                                    {"pred", 1},
                                    {"s8", 1},
                                    {"u8", 1},
                                    {"s16", 2},
                                    {"u16", 2},
                                    {"f16", 2},
                                    {"bf16", 2},
                                    {"s32", 4},
                                    {"u32", 4},
                                    {"f32", 4},
                                    {"s64", 8},
                                    {"u64", 8},
                                    {"f64", 8},
                                    {"c64", 8},
                                    {"c128", 16},
                                    {"f8e4m3fn", 1},
                                    {"f8e5m2", 1},
                                    {"f8e4m3fnuz", 1},
                                    {"f8e5m2fnuz", 1},
                                    {"f8e4m3b11fnuz", 1}};
  for (const Size& s : kSizes) {
    if (s.name == d) return s.bytes;
  }
  return std::nullopt;
}

std::optional<int64_t> CollectiveBytes(CollectiveKind kind, int64_t element_bytes,
                                       int64_t in_elements, int64_t out_elements) {
  if (kind == CollectiveKind::kOther || element_bytes <= 0) return std::nullopt;
  const int64_t elements = kind == CollectiveKind::kAllGather ? out_elements : in_elements;
  if (elements < 0) return std::nullopt;
  int64_t bytes = 0;
  if (__builtin_mul_overflow(elements, element_bytes, &bytes)) return std::nullopt;
  return bytes;
}

std::optional<double> BusBandwidthFactor(CollectiveKind kind, int64_t ranks) {
  if (ranks < 1) return std::nullopt;
  const double n = static_cast<double>(ranks);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return (n - 1) / n;
    case CollectiveKind::kSendRecv:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      return 1.0;
    case CollectiveKind::kOther:
      break;
  }
  return std::nullopt;
}

void CollectiveSums::AddGroupSize(int64_t ranks) {
  auto at = std::lower_bound(group_sizes.begin(), group_sizes.end(), ranks);
  if (at != group_sizes.end() && *at == ranks) return;
  if (group_sizes.size() >= kMaxGroupSizes) {
    more_group_sizes = true;
    return;
  }
  group_sizes.insert(at, ranks);
}

void CollectiveSums::AddSized(CollectiveKind kind, std::optional<int64_t> call_bytes,
                              std::optional<int64_t> ranks, int64_t ps, int64_t calls) {
  if (ranks && *ranks >= 1) AddGroupSize(*ranks);
  if (!call_bytes) return;
  if (static_cast<double>(*call_bytes) > kMaxCollectiveCallBytes) {
    oversized_calls += calls;
    return;
  }
  sized_calls += calls;
  sized_ps += ps;
  const double all = static_cast<double>(*call_bytes) * static_cast<double>(calls);
  bytes += all;
  const auto factor = BusBandwidthFactor(kind, ranks.value_or(0));
  if (!factor) return;
  bus_ps += ps;
  bus_bytes += all * *factor;
}

ProcessGroup MakeProcessGroup(std::string_view description, std::string_view ranks) {
  return ProcessGroup{Printable(description), Printable(ranks)};
}

void CollectiveSums::AddProcessGroup(const ProcessGroup& group) {
  if (group.description.empty()) return;
  if (std::find(process_groups.begin(), process_groups.end(), group) != process_groups.end()) {
    return;
  }
  if (process_groups.size() >= kMaxProcessGroups) {
    more_process_groups = true;
    return;
  }
  process_groups.push_back(group);
}

void CollectiveSums::AddCall(CollectiveKind kind, const CollectiveCall& call, int64_t ps) {
  AddSized(kind, call.bytes, call.ranks, ps);
  AddProcessGroup(call.group);
}

void CollectiveSums::Merge(const CollectiveSums& o) {
  calls += o.calls;
  kernel_ps += o.kernel_ps;
  exposed_ps += o.exposed_ps;
  sized_calls += o.sized_calls;
  oversized_calls += o.oversized_calls;
  sized_ps += o.sized_ps;
  bytes += o.bytes;
  bus_ps += o.bus_ps;
  bus_bytes += o.bus_bytes;
  for (int64_t g : o.group_sizes) AddGroupSize(g);
  more_group_sizes = more_group_sizes || o.more_group_sizes;
  for (const ProcessGroup& g : o.process_groups) AddProcessGroup(g);
  more_process_groups = more_process_groups || o.more_process_groups;
  sources |= o.sources;
  generic_kernels = generic_kernels || o.generic_kernels;
}

std::optional<double> CollectiveSums::AlgBandwidth() const {
  if (sized_calls == 0 || sized_ps <= 0) return std::nullopt;
  return bytes / (static_cast<double>(sized_ps) * 1e-12);
}

std::optional<double> CollectiveSums::BusBandwidth() const {
  if (bus_ps <= 0) return std::nullopt;
  return bus_bytes / (static_cast<double>(bus_ps) * 1e-12);
}

bool CollectiveStats::Any() const {
  return std::any_of(kinds.begin(), kinds.end(),
                     [](const CollectiveSums& s) { return s.calls > 0; });
}

void CollectiveStats::Merge(const CollectiveStats& o) {
  for (size_t k = 0; k < kCollectiveKinds; ++k) kinds[k].Merge(o.kinds[k]);
}

CollectiveOpCall KinetoCollectiveOpCall(std::string_view collective, std::string_view dtype,
                                        int64_t in_elements, int64_t out_elements,
                                        int64_t group_size, std::string_view pg_desc,
                                        std::string_view pg_ranks) {
  const CollectiveCall full = KinetoCollectiveCall(collective, dtype, in_elements, out_elements,
                                                   group_size, pg_desc, pg_ranks);
  CollectiveOpCall c;
  c.kind = full.kind;
  c.in_elements = in_elements;
  c.out_elements = out_elements;
  c.element_bytes = DtypeBytes(dtype).value_or(-1);
  c.ranks = group_size >= 1 ? group_size : -1;
  c.group = full.group;
  return c;
}

CollectiveCall KinetoCollectiveCall(std::string_view collective, std::string_view dtype,
                                    int64_t in_elements, int64_t out_elements, int64_t group_size,
                                    std::string_view pg_desc, std::string_view pg_ranks) {
  CollectiveCall call;
  if (collective.empty()) return call;
  call.kind = CollectiveKindOfName(collective);
  if (group_size >= 1) call.ranks = group_size;
  // torch writes "undefined" for a group created without a description.
  if (pg_desc != "undefined") call.group.description = Printable(pg_desc);
  if (!call.group.description.empty()) call.group.ranks = Printable(pg_ranks);
  const auto element = DtypeBytes(dtype);
  if (call.kind && element) {
    call.bytes = CollectiveBytes(*call.kind, *element, in_elements, out_elements);
  }
  return call;
}

bool CollectiveOps::Add(int64_t external_id, CollectiveCall call) {
  if (!call.kind) return true;  // nothing a kernel could use
  if (by_id_.size() >= kMaxOps && !by_id_.contains(external_id)) return false;
  by_id_[external_id] = std::move(call);
  return true;
}

const CollectiveCall* CollectiveOps::Find(int64_t external_id) const {
  if (by_id_.empty()) return nullptr;
  auto it = by_id_.find(external_id);
  return it == by_id_.end() ? nullptr : &it->second;
}

}  // namespace profwatch::aggregate
