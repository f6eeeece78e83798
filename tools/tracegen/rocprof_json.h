// Writes rocprofv3 JSON outputs (`rocprofv3 --output-format json`, the
// rocprofiler-sdk tool's `<pid>_results.json`) in the writer's member order
// and indentation (ROCm/rocprofiler-sdk 8ab1ed78d8c2afb25fedddb7684aff08d1233c5c,
// source/lib/rocprofiler-sdk-tool/generateJSON.cpp), and the exact truth of
// what they hold. Only the members profwatch reads are meaningful; a few
// others are written so a reader must skip them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace profwatch::tracegen {

// A node of `gpus` GPU agents (plus two CPU agents) and `ranks` processes,
// one file each, process r dispatching on GPU (first_gpu + r) % gpus only:
// the other GPU agents are seen and idle. Per step a "step K" roctx range
// (unless !markers), a "rank=R" range first, compute kernels (hipBLASLt
// GEMM, CK attention, elementwise) on one queue, RCCL generic kernels on a
// second queue that partly overlap them, and host-to-device copies.
struct RocprofSynthetic {
  int gpus = 8;
  int ranks = 8;
  int first_gpu = 0;
  int steps = 3;
  int kernels_per_step = 40;
  bool markers = true;
  bool gzip = false;
  // Write rocpd SQLite databases (`<pid>_results.db`, ROCm 7's default
  // output; schema: rocpd_schema.h) instead of JSON; the same records.
  bool rocpd = false;
  uint64_t seed = 1;
  std::string product_name = "AMD Instinct MI300X";
};

// The truth of one file (one process), all times exact in ps.
struct RocprofTruth {
  std::string path;
  int64_t pid = 0;
  int rank = 0;        // the process's index (its "rank=N" marker)
  int gpu = 0;         // the GPU index that dispatched
  std::string device;  // as profwatch names it: "pid <pid> GPU <gpu>"
  int64_t kernels = 0, kernel_ps = 0, busy_ps = 0, span_ps = 0;
  int64_t rccl_kernels = 0, comm_ps = 0, exposed_comm_ps = 0;
  // RCCL kernels by the collective of the RCCL API call that launched them
  // (rccl_api records in JSON, regions in rocpd).
  int64_t rccl_all_reduce = 0, rccl_all_gather = 0;
  int64_t memops = 0, memop_ps = 0, memop_bytes = 0;
  int streams = 0;
  int steps = 0;  // step markers written
  int idle_gpu_agents = 0;
};

// Writes the files into `dir` (created) named <pid>_results.json[.gz], or
// <pid>_results.db with `rocpd`.
bool WriteRocprofOutputs(const RocprofSynthetic& p, const std::string& dir,
                         std::vector<RocprofTruth>* truth, std::string* error);

}  // namespace profwatch::tracegen
