// A JAX profile window made for the diagnosis tests (issue #22): hosts x GPUs
// with three streams each and random kernels, one serial blocker kernel per
// GPU and step that runs while no other kernel does, and one GPU whose
// timeline is stretched by 5/4 (the straggler). The expected figures of
// every device are computed here by brute force over elementary time
// segments, independently of aggregate/'s sweep. Kernels carry JAX scopes
// (args.name) whose regions are spelled out here by hand.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace profwatch::testing {

struct DiagnosisDevice {
  std::string host;    // the trace file is <host>.trace.json
  std::string device;  // "/device:GPU:N"
  int64_t busy_ps = 0, compute_busy_ps = 0, exclusive_ps = 0, overlapped_ps = 0, idle_ps = 0;
  std::map<std::string, int64_t> exclusive_by_name, idle_before_by_name;
};

struct DiagnosisWindow {
  int steps = 3;
  std::string blocker;  // the serial kernel's name
  std::string slow_host, slow_device;
  // Kernel time per region (default depth 3) over every device; the
  // blocker has no scope and belongs to none.
  std::map<std::string, int64_t> region_ps;
  std::vector<DiagnosisDevice> devices;
};

// Names starting "nccl" are communication (as every built-in rule set has
// them). Writes <dir>/<host>.trace.json per host.
DiagnosisWindow WriteDiagnosisWindow(const std::string& dir, uint64_t seed, int hosts = 2,
                                     int gpus_per_host = 4);

}  // namespace profwatch::testing
