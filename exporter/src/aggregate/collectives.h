// Collectives: which collective a communication kernel ran, how many bytes a
// call moved, and the bandwidth formulas of nccl-tests' PERFORMANCE.md. The
// one place these are defined; every output reads the CollectiveStats built
// here.
//
// Kind: from the trace's own metadata first (Kineto's args["Collective
// name"], a JAX kernel's hlo_op), from the kernel name second (NCCL/RCCL
// nccl[Dev]Kernel_<Op>_..., XLA's RaggedAllToAll...), `other` otherwise;
// never guessed. The kinds are a fixed set (bounded metric cardinality).
//
// Bytes of one call (elements x element size, from the metadata only): the
// whole output for all_gather, the whole input for everything else
// (all_reduce, reduce_scatter, all_to_all, broadcast, reduce, send/recv).
// algbw = bytes / kernel time; busbw = bytes x factor(n) / kernel time with
// factor 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and
// all_to_all, 1 for broadcast, reduce and send_recv; none for `other`.
// A call without a usable size (no metadata, unknown dtype, negative or
// overflowing counts, or a size no GPU could hold: kMaxCollectiveCallBytes)
// adds no bytes and none of its time to the bandwidth denominators:
// bandwidth is absent when no call had a size, never 0 or infinite. A
// kind whose sized calls claim a rate no GPU reaches
// (kMaxCollectiveBandwidth) has its bytes and bandwidths absent too.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aggregate/limits.h"

namespace profwatch::aggregate {

enum class CollectiveKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv,  // send, recv and XLA's collective-permute
  kBroadcast,
  kReduce,
  kOther,
};
inline constexpr size_t kCollectiveKinds = 8;

// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv",
// "broadcast", "reduce", "other": the label values everywhere.
std::string_view CollectiveKindName(CollectiveKind k);

// The kind a collective's own name says: Kineto's "Collective name"
// (allreduce, _allgather_base, reduce_scatter_tensor_coalesced, all_to_allv,
// send, recv, ...) or an HLO instruction or opcode (all-gather-start.3,
// reduce-scatter.1, collective-permute-done, all-to-all), or NCCL's API name
// as its NVTX ranges show it (ncclAllGather, ncclSend). kOther for a
// name that is a collective of no modelled kind (gather, scatter, barrier);
// nullopt when the name is not a collective's at all (a fusion's hlo_op).
std::optional<CollectiveKind> CollectiveKindOfName(std::string_view name);

// The kind an HLO instruction name says, matched on its raw text (the
// trace's hlo_op: all-reduce-start.2, all-gather.1, reduce-scatter.4,
// all-to-all.2, ragged-all-to-all.1, collective-permute-start.1,
// collective-broadcast, send.3, recv-done.1); nullopt for every other
// instruction, the compute ops broadcast, reduce, gather and scatter
// included. Cheap: it runs for every JAX kernel.
std::optional<CollectiveKind> CollectiveKindOfHloOp(std::string_view op);

// The kind a kernel name says: NCCL/RCCL's nccl[Dev]Kernel_<Op>_... with
// <Op> AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv (and
// AllToAll), XLA's RaggedAllToAll..., the all-reduces of PyTorch's symmetric
// memory (multimem_all_reduce_kernel, one_shot_all_reduce_kernel,
// two_shot_all_reduce_kernel), multimem_all_gather, vLLM's custom
// all-reduce (cross_device_reduce_*), expert-parallel dispatch and combine
// (DeepEP's deep_ep::, dpsk::ep::, pplx::: all-to-all; their other kernels:
// kOther); nullopt when the name does not say
// (RCCL's ncclDevKernel_Generic_N, anything else). Older NCCL names every
// collective ncclKernel_SendRecv_*: the name is the last resort, after what
// launched the kernel (CollectiveKindOfOperator).
std::optional<CollectiveKind> CollectiveKindOfKernel(std::string_view kernel);

// Bytes of one element of a Kineto dtype ("Float" 4, "BFloat16" 2, "Half" 2,
// "Double" 8, "Byte" 1, ...) or an HLO element type ("f32", "bf16", "s8",
// ...); nullopt when unknown.
std::optional<int64_t> DtypeBytes(std::string_view dtype);

// Bytes one call counts (see the file comment); nullopt when a needed count is
// missing (< 0) or the product overflows.
std::optional<int64_t> CollectiveBytes(CollectiveKind kind, int64_t element_bytes,
                                       int64_t in_elements, int64_t out_elements);

// busbw / algbw for a group of `ranks`; nullopt for kOther or ranks < 1.
std::optional<double> BusBandwidthFactor(CollectiveKind kind, int64_t ranks);

// A process group the trace names for a call (Kineto's "Process Group
// Description" and "Process Group Ranks"): printable ASCII only, each cut
// at kMaxProcessGroupText characters (bounded, safe to print).
struct ProcessGroup {
  std::string description;  // "fsdp", "tp", "default_pg", ...
  std::string ranks;        // the trace's text, "[0, 1, 2, 3]"; empty when absent
  bool operator==(const ProcessGroup&) const = default;
};
// `description` and `ranks` as a ProcessGroup keeps them: printable ASCII,
// each cut at kMaxProcessGroupText characters.
ProcessGroup MakeProcessGroup(std::string_view description, std::string_view ranks);

// The collective metadata of one kernel call, from the trace: its kind from
// the metadata (nullopt: none), bytes and group size (nullopt when unknown),
// and the process group when the trace names one (empty description:
// none; torch's "undefined" counts as none).
struct CollectiveCall {
  std::optional<CollectiveKind> kind;
  std::optional<int64_t> bytes;
  std::optional<int64_t> ranks;
  ProcessGroup group;
};

// The kind a host operator that launches collectives names: NCCL's
// profiling ranges (`nccl:all_reduce`, `nccl:_all_gather_base`,
// `nccl:_reduce_scatter_base`, `nccl:all_to_all`, `nccl:send`, ...), c10d's
// and the functional collectives' operators (`c10d::allreduce_`,
// `c10d::_allgather_base_`, `_c10d_functional::all_gather_into_tensor`),
// symmetric memory's (`symm_mem::multimem_all_reduce_`,
// `symm_mem::one_shot_all_reduce`) and vLLM's custom all-reduce
// (`_C_custom_ar::all_reduce`); nullopt for every other name (aten::gather
// is no collective).
std::optional<CollectiveKind> CollectiveKindOfOperator(std::string_view op);

// What a collective operator's recorded shapes say (Kineto `Input Dims` and
// `Input type` of the operator above): the elements of its first two tensor
// inputs and the element size of the first. "Base" operators
// (`c10d::_allgather_base_`, `c10d::_reduce_scatter_base_`) list the output
// then the input; NCCL's ranges list the input alone. -1: unknown.
struct CollectiveOpShapes {
  int64_t first = -1, second = -1;
  int64_t element_bytes = -1;
};
// The call one operator describes on its own: kind, bytes when its shapes
// give them, group size where a base operator lists both tensors
// (output/input for all-gather, input/output for reduce-scatter).
struct CollectiveOpCall {
  std::optional<CollectiveKind> kind;
  int64_t in_elements = -1, out_elements = -1, element_bytes = -1, ranks = -1;
  ProcessGroup group;  // record_param_comms' process group, when named
};
CollectiveOpCall CollectiveCallOfOperator(std::string_view op, const CollectiveOpShapes& shapes);
// The call of a kernel from the operators enclosing its launch, innermost
// first (each with its own CollectiveOpCall, or a full CollectiveCall from
// record_param_comms' args): the kind of the innermost that names one;
// element counts, element size and group size from the innermost of that
// kind that has each; bytes by the nccl-tests rules (all-gather: the whole
// output, which an input-only all-gather gives with the group size; every
// other kind the input). No kind: an empty call.
CollectiveCall CollectiveCallOfLaunchers(const std::vector<CollectiveOpCall>& innermost_first);

// Bytes of an element of a tensor as Kineto's `Input type` names it (C++
// type names: "float" 4, "c10::BFloat16" 2, "c10::Half" 2, "double" 8,
// "long int" 8, "int" 4, "signed char" 1, "unsigned char" 1, "bool" 1,
// "c10::Float8_e4m3fn" 1, ...); nullopt when unknown.
std::optional<int64_t> TorchTypeBytes(std::string_view type);

// One collective kind's figures, summed over calls (and devices).
struct CollectiveSums {
  int64_t calls = 0;
  int64_t kernel_ps = 0;
  int64_t exposed_ps = 0;   // it runs and no compute kernel does, same GPU
  int64_t sized_calls = 0;  // calls with a byte count
  int64_t sized_ps = 0;     // their kernel time
  double bytes = 0;         // their bytes
  int64_t bus_ps = 0;       // kernel time of sized calls with a bus factor
  double bus_bytes = 0;     // their bytes x factor
  // Calls whose byte count was above kMaxCollectiveCallBytes (not sized).
  int64_t oversized_calls = 0;
  std::vector<int64_t> group_sizes;
  bool more_group_sizes = false;
  std::vector<ProcessGroup> process_groups;
  bool more_process_groups = false;
  // Which trace formats the calls came from (kSource* bits), and whether
  // some `other` call was RCCL's generic kernel: what the notes may name.
  uint8_t sources = 0;
  bool generic_kernels = false;

  // `calls` calls of one size: bytes and group size each (either may be
  // unknown; bytes above kMaxCollectiveCallBytes count as oversized and
  // unknown), `ps` their kernel time together.
  void AddSized(CollectiveKind kind, std::optional<int64_t> bytes, std::optional<int64_t> ranks,
                int64_t ps, int64_t calls = 1);
  // AddSized and the call's process group.
  void AddCall(CollectiveKind kind, const CollectiveCall& call, int64_t ps);
  void AddGroupSize(int64_t ranks);
  void AddProcessGroup(const ProcessGroup& group);  // none when its description is empty
  void Merge(const CollectiveSums& o);
  // Bytes per second over the sized calls; nullopt when none (or no time).
  std::optional<double> AlgBandwidth() const;
  std::optional<double> BusBandwidth() const;
};

// CollectiveSums::sources bits.
inline constexpr uint8_t kSourceKineto = 1, kSourceJax = 2, kSourceNsys = 4, kSourceRocprof = 8;

struct CollectiveStats {
  std::array<CollectiveSums, kCollectiveKinds> kinds{};
  const CollectiveSums& operator[](CollectiveKind k) const { return kinds[static_cast<size_t>(k)]; }
  CollectiveSums& operator[](CollectiveKind k) { return kinds[static_cast<size_t>(k)]; }
  bool Any() const;  // some collective kernel ran
  void Merge(const CollectiveStats& o);
};

// From Kineto's kernel args (-1: a count missing or not a non-negative
// integer); no kind when `collective` is empty. `pg_desc`/`pg_ranks`: the
// process group's description and ranks text (see ProcessGroup).
CollectiveCall KinetoCollectiveCall(std::string_view collective, std::string_view dtype,
                                    int64_t in_elements, int64_t out_elements, int64_t group_size,
                                    std::string_view pg_desc = {}, std::string_view pg_ranks = {});

// The same args as one launcher of CollectiveCallOfLaunchers (record_param_comms).
CollectiveOpCall KinetoCollectiveOpCall(std::string_view collective, std::string_view dtype,
                                        int64_t in_elements, int64_t out_elements,
                                        int64_t group_size, std::string_view pg_desc = {},
                                        std::string_view pg_ranks = {});

// The collective metadata of Kineto's record_param_comms operators by their
// External id, for the kernels they launched that carry none themselves
// (Kineto links an operator and its kernels by that id; traces before the
// args were copied onto kernels have them on the operator only). Operators
// come before their kernels in Kineto's files; a kernel read before its
// operator finds nothing (its kind then comes from its name). At most
// kMaxOps operators are kept.
class CollectiveOps {
 public:
  // False when the table is full (the operator is not kept).
  bool Add(int64_t external_id, CollectiveCall call);
  // Null when no operator with a kind has that id.
  const CollectiveCall* Find(int64_t external_id) const;
  bool empty() const { return by_id_.empty(); }

 private:
  std::unordered_map<int64_t, CollectiveCall> by_id_;
};

}  // namespace profwatch::aggregate
