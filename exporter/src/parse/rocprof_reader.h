// rocprofv3 JSON reader (`rocprofv3 --output-format json`, rocprofiler-sdk's
// tool output): turns one `<pid>_results.json` (one process, all of its
// agents) into TraceEvents for the aggregator, the same events the nsys
// reader emits (parse/nsys_reader.h), so the kernel table, the figures and
// every output treat both alike. docs/rocprof.md has the user's view.
//
// Schema: rocprofiler-sdk's writer (source/lib/rocprofiler-sdk-tool/
// generateJSON.cpp and source/include/rocprofiler-sdk/cxx/serialization.hpp
// at ROCm/rocprofiler-sdk commit 8ab1ed78d8c2afb25fedddb7684aff08d1233c5c):
//   {"rocprofiler-sdk-tool": [ {            one entry per process
//     "metadata": {"pid", ...},
//     "agents": [{"id": {"handle"}, "type" (1 CPU, 2 GPU), "node_id",
//                 "name", "product_name", ...}],
//     "strings": {"buffer_records": [{"kind", "operations": [names]}],
//                 "marker_api": [{"key": correlation id, "value": text}]},
//     "kernel_symbols": [{"kernel_id", "kernel_name",
//                         "demangled_kernel_name", ...}],
//     "buffer_records": {
//       "kernel_dispatch": [{"thread_id", "correlation_id": {"internal"},
//           "start_timestamp", "end_timestamp", "dispatch_info":
//           {"agent_id": {"handle"}, "queue_id": {"handle"}, "kernel_id"}}],
//       "marker_api": [{"correlation_id", "start_timestamp", "end_timestamp",
//                       "thread_id"}],      roctx ranges (push..pop)
//       "memory_copy": [{"start_timestamp", "end_timestamp",
//           "dst_agent_id": {"handle"}, "src_agent_id": {"handle"}, "bytes"}],
//       "hip_api", "hsa_api", "rccl_api", ...}}]}
// Members are found by name (any order inside a record); the sections are
// read in the writer's order: agents and kernel_symbols before the records
// that name them (a dispatch of an agent or kernel not yet declared is
// counted, not guessed). Unknown members are skipped unread.
//
// What it emits:
//  - per kernel_dispatch record: an X event with cat kNsysKernelCat, name =
//    the kernel's demangled name (else its kernel_name), pid = metadata.pid,
//    args_device = the agent's GPU index (its rank among the GPU agents by
//    node_id: HIP's device ordinal), tid = the queue (numbered per agent in
//    order of first sight);
//    An RCCL kernel (ncclDevKernel*, ncclKernel*) is emitted when its
//    process's records are all read, with args_collective = the operation
//    name (strings.buffer_records RCCL_API, e.g. "ncclAllReduce") of the
//    latest collective rccl_api call of its launching thread (thread_id)
//    whose correlation_id.internal is below the dispatch's (rocprofiler-sdk
//    numbers calls in call order; the dispatch carries the id of the launch
//    nested in that call). Without rccl_api records it has none.
//  - per memory_copy record: cat kNsysMemopCat named "Memcpy" on the GPU
//    agent it touches (the destination when it is a GPU, else the source),
//    args_bytes = bytes;
//  - per marker_api range whose text names a step ("step 12", as
//    StepOfNvtxText): cat kNsysStepCat, name = the step number, pid. A range
//    whose text holds "rank=N" (RankOfNvtxText) gives the process's rank
//    (the earliest such range).
// ParseSummary: schema kRocprof, device_names = the product names of the GPU
// agents that dispatched a kernel (by GPU index), gpu_agents_idle = the
// GPU agents seen without any dispatch ("idle agents are seen, not counted").
// Times are exact: ns x 1000 relative to time_base_us (the first timestamp
// of the file, floored to a microsecond), so a node up for years keeps
// them in range.
//
// Bounds (hostile input): memory is bounded by the caps below, not by the
// file; each record is cut from the stream and parsed alone (at most
// kMaxRecordBytes; a longer one is skipped and counted record_too_large);
// nesting is only followed where the schema has it (everything else is
// skipped with a counter, any depth); simdjson's depth limit bounds a record.
// Work is linear in the bytes, and the caller's ByteSource charges the
// budget per read. Drops: "bad_record" (not an object, not JSON, a needed
// member missing or of the wrong type), "bad_time" (end before start, a time
// of 0, or one whose ps overflows), "unknown_agent", "unknown_kernel",
// "record_too_large", "agent_limit", "symbol_limit", "queue_limit",
// "marker_limit", "rccl_call_limit".
//
// Errors: kTruncated (input ended inside the document), kCorrupt (not JSON,
// or not this shape), kUnsupported (no rocprofiler-sdk-tool key), plus the
// source's. Events delivered before an error stay delivered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/caps.h"
#include "core/result.h"
#include "parse/limits.h"
#include "parse/trace_parser.h"
#include "read/byte_source.h"

namespace profwatch::parse {

inline constexpr std::string_view kRocprofKey = "rocprofiler-sdk-tool";

struct RocprofOptions {
  size_t chunk_bytes = 256 << 10;
  size_t max_record_bytes = static_cast<size_t>(caps::kRocprofRecordBytes.value);
};

// Whether `head` (the first decompressed bytes) is a JSON object whose first
// member is "rocprofiler-sdk-tool" (as rocprofv3 writes it).
bool LooksLikeRocprofJson(std::string_view head);

// An RCCL kernel name (ncclDevKernel*, ncclKernel*).
bool IsRcclKernelName(std::string_view name);
// A collective or point-to-point RCCL API operation name (ncclAllReduce,
// ncclSend, ...; not ncclGroupStart, ncclCommInitRank, ...).
bool IsRcclCollectiveOperation(std::string_view op);

// How a GPU agent that dispatched no kernel is named in
// ParseSummary::idle_gpu_agent_names: "pid <pid> GPU <index> (<product>)",
// as the devices that dispatched are named ("pid <pid> GPU <index>"); without
// a product name, no parenthesis.
std::string IdleGpuAgentName(int64_t pid, int64_t gpu, std::string_view product_name);

Result<ParseSummary> ReadRocprofJson(read::ByteSource& source, EventSink& sink,
                                     const RocprofOptions& options = {});

}  // namespace profwatch::parse
