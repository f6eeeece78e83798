// The aggregate stage's bounds, in one place (issue 62): what one file's
// aggregation keeps (devices, streams, steps, names, held events, joins) and
// the physical bounds on the sizes a trace claims. The caps a user sets with
// a flag, and the per-window name caps, are core/caps.h's table
// (name_table.h applies the latter); these are fixed, each far above a real
// trace, so that a crafted or corrupt file costs bounded memory and time.
// Past a bound the rest is dropped and counted in the file's drops under the
// reason each comment names.
//
// Thread-safety: constants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace profwatch::aggregate {

// --- KernelTable: per file ---
// Devices kept (a real file: 8 GPUs, an nsys export of a node some tens);
// the events of further devices are dropped as "device_limit".
inline constexpr size_t kMaxDevices = 1024;
// Streams told apart per device; kernels of further streams count on the
// last one ("stream_limit").
inline constexpr size_t kMaxStreams = 1024;
// Distinct (stream, kernel name) pairs kept per device; beyond them the
// device's stream count is every stream it had a kernel on.
inline constexpr size_t kMaxStreamNames = size_t{1} << 18;
// Step spans ("step_limit" beyond; the window's cap too,
// NameLimits::max_steps_per_window).
inline constexpr size_t kMaxSteps = size_t{1} << 16;
// Distinct (scope, kernel name) pairs; further pairs go to the "other
// scopes" entry ("scope_limit").
inline constexpr size_t kMaxScopeNames = size_t{1} << 20;

// --- Aggregator: per file ---
// Events of not-yet-declared JAX threads held until the file ends; later
// ones are dropped as "no_metadata_held_limit".
inline constexpr size_t kMaxHeldEvents = size_t{1} << 19;
// PyTorch gpu_user_annotation ranges kept (for regions); later ones are
// dropped as "annotation_limit".
inline constexpr size_t kMaxAnnotations = size_t{1} << 20;
// CUDA-graph kernels kept for placement by schedule.
inline constexpr size_t kMaxGraphKernels = size_t{1} << 20;
// Counted operators and kernel links kept for FLOP counting (later ones
// counted in drops["flop_op_limit"/"flop_link_limit"]).
inline constexpr size_t kMaxFlopLinks = size_t{1} << 20;

// --- LaunchJoin: per file ---
// Launches and ranges kept; later ones are counted in drops["launch_limit"]
// / drops["launch_range_limit"] (their kernels then find no operator: kind
// from the name, FLOPs uncounted).
inline constexpr size_t kMaxLaunches = size_t{1} << 20;
inline constexpr size_t kMaxRanges = size_t{1} << 18;
// Ranges one lookup walks back over on the launch's thread (the bound on its
// cost); an enclosing range further back is not found.
inline constexpr size_t kMaxWalk = 256;

// --- GraphKernels: per file ---
// Distinct module and instruction names kept (a real file: a few modules,
// hundreds of collective instructions).
inline constexpr size_t kMaxModules = 4096;
inline constexpr size_t kMaxHloOps = size_t{1} << 16;

// --- KinetoEvents: per file ---
// Communication kernels held for the file's end; later ones take their kind
// from their args or name at once (drops["collective_held_limit"]).
inline constexpr size_t kMaxHeldKernels = size_t{1} << 18;
// Enclosing collective operators a held kernel's launch looks at.
inline constexpr size_t kMaxLaunchers = 8;

// --- Collectives (collectives.h) ---
// Physical bounds: sizes are the trace's word, and a crafted or corrupt
// trace can claim anything (`In msg nelems` of 2^59). A call's buffer lies
// in one GPU's memory, so a call claiming more than kMaxCollectiveCallBytes
// (far above any GPU's memory) is impossible and its size unknown. A
// collective's bytes cross each GPU's memory at least once and its busbw
// stays below the fastest link, so a kind whose algbw or busbw exceeds
// kMaxCollectiveBandwidth (above any GPU memory's bandwidth) is impossible,
// and its bytes and bandwidths are unknown. The devices' figures behind
// both bounds are in docs/json-format.md (collectives).
inline constexpr double kMaxCollectiveCallBytes = 1099511627776.0;  // 2^40
inline constexpr double kMaxCollectiveBandwidth = 1e13;             // bytes per second
// A process group's description and ranks are each cut at this many
// characters (MakeProcessGroup).
inline constexpr size_t kMaxProcessGroupText = 64;
// Per collective kind (CollectiveSums): distinct group sizes kept, smallest
// first, and distinct named process groups kept, the first seen first; more
// are counted only.
inline constexpr size_t kMaxGroupSizes = 8;
inline constexpr size_t kMaxProcessGroups = 4;
// Collective operators kept per file (CollectiveOps).
inline constexpr size_t kMaxOps = 1 << 16;

// --- Profile steps (profile_steps.h) ---
// The largest count taken from a flag, a log or a trace (a larger one is cut
// to it): beyond any real profiler schedule.
inline constexpr int64_t kMaxProfileSteps = 1'000'000;

}  // namespace profwatch::aggregate
