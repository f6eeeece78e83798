// The parse stage's bounds, in one place (issue 62): what one trace file's
// readers keep, how deep and how long what they read may be. The caps a
// user sets with a flag, and the rocprofv3 readers' caps, are declared in
// core/caps.h's tables (the names here read them); the others are fixed
// here, each far above a real trace, so that a crafted or corrupt file costs bounded
// memory and time. Past a bound the input is dropped, cut or refused as
// each comment says (the readers' headers tell the reasons counted).
//
// Thread-safety: constants.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/caps.h"

namespace profwatch::parse {

// --- JSON traces (json_trace_parser.cc, event_decoder.h) ---
// The XLA trace-events converter keeps the first 1,000,000 events by default.
inline constexpr uint64_t kJaxEventCap = 1000000;
// Entries nested deeper than this are dropped ("too_deep"): On-Demand has no
// depth limit of its own and consumers never need deep args.
inline constexpr int64_t kMaxEventDepth = 1024;
// Keys longer than this are kept truncated (no key we look for is that long).
inline constexpr size_t kMaxKeyBytes = 256;
// A run of events (EventDecoder) spans at most this many bytes: enough to
// spread the per-document cost over a few hundred events, few enough for the
// parser's index to stay in cache.
inline constexpr size_t kMaxRunBytes = size_t{64} << 10;
// A batch buffer (DecodePipeline::NewBatch) that grew past this for an
// outsized event is freed instead of recycled, so the spares stay small
// whatever the events.
inline constexpr size_t kMaxRecycledBytes = size_t{4} << 20;
// Significant digits a number's mantissa keeps (number.cc): 10^36 < 2^127,
// so the mantissa never overflows; further digits only set the sticky bit.
inline constexpr int kMaxDigits = 36;

// --- Nsight Systems and rocpd SQLite exports (nsys_reader, rocpd_reader) ---
// The longest string or blob value read (a kernel name is far shorter).
inline constexpr int kMaxValueBytes = 16 << 20;
// SQLite virtual-machine steps between budget checks.
inline constexpr int kProgressOps = 10000;
// NCCL's own NVTX ranges kept, and kernel launches inside them.
inline constexpr size_t kMaxNcclRanges = size_t{1} << 20;
inline constexpr size_t kMaxNcclLaunches = size_t{1} << 20;
// Sets of rocpd tables (one per suffix) read from one database (declared
// in core/caps.h's kRocprofReaderCaps).
inline constexpr size_t kMaxRocpdTableSets = static_cast<size_t>(caps::kRocpdTableSets.value);

// --- rocprofv3 JSON and rocpd (rocprof_reader, rocpd_reader): per file ---
// Declared in core/caps.h (kRocprofReaderCaps: what is past each and why;
// docs/rocprof.md prints that table).
inline constexpr size_t kMaxRocprofAgents = static_cast<size_t>(caps::kRocprofAgents.value);
inline constexpr size_t kMaxRocprofSymbols = static_cast<size_t>(caps::kRocprofSymbols.value);
// Kernel names, summed.
inline constexpr size_t kMaxRocprofSymbolBytes =
    static_cast<size_t>(caps::kRocprofSymbolBytes.value);
inline constexpr size_t kMaxRocprofQueues = static_cast<size_t>(caps::kRocprofQueues.value);
// Step/rank marker texts.
inline constexpr size_t kMaxRocprofMarkers = static_cast<size_t>(caps::kRocprofMarkers.value);
inline constexpr size_t kMaxRocprofRcclOperations = 4096;  // RCCL_API operation names
// Collective rccl_api calls.
inline constexpr size_t kMaxRocprofRcclCalls = static_cast<size_t>(caps::kRocprofRcclCalls.value);
// Idle GPU agents named per file (ParseSummary::idle_gpu_agent_names).
inline constexpr size_t kMaxIdleGpuAgentNames = 1024;
// RCCL kernels held until their process's rccl_api records are read; past
// it, kernels are emitted without a collective.
inline constexpr size_t kMaxRocprofRcclKernels = size_t{1} << 20;

// --- XPlane protobufs (proto_wire.h, xplane_parser, hlo_schedule) ---
// The largest field number the protobuf wire format allows; a larger one is
// a corrupt tag.
inline constexpr uint64_t kMaxFieldNumber = (uint64_t{1} << 29) - 1;
// A plane's name, stat metadata and stats are small; a larger field is
// skipped unread when only the device names are read
// (ReadXPlaneDeviceNames), like the lines and event metadata.
inline constexpr uint64_t kMaxDeviceNameFieldBytes = 1 << 20;
// The modules of one file together: at most this many schedule entries with
// calls inlined (HloLimits::max_expanded is one module's share). A module
// that would go past it is skipped as too complex.
inline constexpr size_t kMaxHloExpandedPerFile = size_t{1} << 20;
// Distinct dot instructions one fusion's FLOPs are kept for (the bound on
// the work of summarising a fusion's computations).
inline constexpr size_t kMaxFusionDots = 16;

}  // namespace profwatch::parse
