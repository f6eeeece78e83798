// profwatch-tracegen model: deterministic per-stream event generators for
// synthetic JAX/XLA trace-events files, and the exact statistics the
// generator knows about what it wrote (the manifest ground truth).
//
// Times are integer picoseconds from the start; every number written to the
// JSON is checked to parse back (round-half-even at the picosecond) to the
// same integer, so the manifest and a correct reader agree exactly.
// Not thread-safe; plain values otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace profwatch::tracegen {

enum class Vendor { kAmd, kNvidia };
enum class Role { kCompute, kComm, kMemcpy, kAux, kHost };
// What the serial main-stream blocker kernel (--blocker-us) is.
enum class BlockerKind { kAllToAll, kScatter };

struct FileParams {
  Vendor vendor = Vendor::kAmd;
  int gpus = 8;                    // device pids 1..gpus
  int streams = 2;                 // streams per GPU
  int steps = 3;                   // profiled steps in the file
  int64_t kernels_per_step = 200;  // per GPU per step, all streams (when events < 0)
  int64_t events = -1;             // exact total of X events (host + device), if >= 0
  double step_seconds = 2.0;
  double kernel_fraction = 0.85;  // summed kernel time per GPU per step / step time
  uint64_t seed = 1;
  int64_t cap = -1;  // keep only the first `cap` events by time (XLA cap)
  int gzip_level = 6;
  bool plain = false;  // write uncompressed JSON
  // Per GPU and step, one kernel of this length on the compute stream that
  // runs with every other stream of its GPU drained (0: none). Whole ns.
  int64_t blocker_ps = 0;
  BlockerKind blocker_kind = BlockerKind::kAllToAll;
  // Idle time on every GPU before each step's first kernel but the first
  // step's (the GPU waits on the host). Whole ns.
  int64_t host_stall_ps = 0;
};

struct Event {
  int64_t ts_ps = 0;
  int64_t dur_ps = 0;
  uint32_t name = 0;  // index into the kernel name table
  uint32_t seq = 0;   // index within its stream
  int32_t step = 0;   // profiled step (0..steps-1) the event belongs to
};

struct NameStats {
  uint64_t launches = 0;
  int64_t ps = 0;
};

// A collective kind's calls, summed kernel time and exposed time (its
// kernels' union minus the compute kernels' union on the same GPU), summed
// over the file's GPUs.
struct CollectiveTruth {
  uint64_t calls = 0;
  int64_t ps = 0;
  int64_t exposed_ps = 0;
};

struct BlockerStats {
  int step = 0;
  int64_t tid = 0;  // the compute stream
  int64_t ts_ps = 0;
  int64_t dur_ps = 0;
};

// The idle interval before step `step`'s first kernel: from the last end of
// the device's earlier steps to the first start of this and later steps.
struct StepGap {
  int step = 0;
  int64_t start_ps = 0;
  int64_t end_ps = 0;
};

struct DeviceStats {
  int pid = 0;
  std::string name;  // "/device:GPU:N"
  uint64_t kernel_launches = 0;
  int64_t kernel_ps = 0;  // summed durations
  int64_t busy_ps = 0;    // union of intervals across streams
  int64_t span_ps = 0;    // last end - first start
  int64_t first_ts_ps = 0;
  int64_t last_end_ps = 0;
  int streams = 0;  // stream threads in the metadata
  int streams_with_events = 0;
  std::vector<BlockerStats> blockers;  // kept blocker kernels, by step
  std::vector<StepGap> step_gaps;      // only when host_stall_ps > 0
};

struct FileStats {
  uint64_t events = 0;  // X events written (host + device)
  uint64_t events_before_cap = 0;
  uint64_t metadata_events = 0;
  uint64_t device_events = 0;
  uint64_t host_events = 0;
  bool capped = false;
  uint64_t uncompressed_bytes = 0;
  uint64_t bytes = 0;  // on disk
  std::vector<DeviceStats> devices;
  std::map<std::string, NameStats> kernels;            // device events by name
  std::map<std::string, CollectiveTruth> collectives;  // by kind ("all_reduce", ...)
};

// The blocker kernel's name and hlo_op for a vendor and kind.
const char* BlockerName(Vendor vendor, BlockerKind kind);
const char* BlockerHloOp(Vendor vendor, BlockerKind kind);

// Empty when the parameters can be generated, else why not (checked by the
// command line before writing).
std::string CheckParams(const FileParams& params);

// Writes one trace file to `path`. Returns false and sets `error` on I/O failure.
bool WriteTraceFile(const FileParams& params, const std::string& path, FileStats* stats,
                    std::string* error);

// Formats `ps` as microseconds the way the XLA writer does (the double
// ps * 1e-6 with 15 significant digits when that round-trips, else 17), or
// exactly when the double cannot carry the picosecond. Exposed for tests.
std::string FormatMicros(int64_t ps);
// Exact decimal microseconds text -> picoseconds, round-half-even. False when
// the text is not a plain JSON number.
bool ParseMicrosExact(std::string_view text, int64_t* ps);

}  // namespace profwatch::tracegen
