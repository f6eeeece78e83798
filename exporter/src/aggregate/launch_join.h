// Internal to aggregate/. LaunchJoin: which host operators were open when a
// Kineto kernel was launched. A kernel's args.correlation names its
// cuda_runtime launch (cudaLaunchKernel, hipLaunchKernel, ...); the launch
// ran on a host thread inside the operators open there at its time. Launches
// and operator ranges are recorded as they come, in any order (Kineto writes
// most kernels before their launches), and looked up once the file ends.
// Three sets of ranges are kept apart (collective operators, counted FLOP
// operators, operators with a bytes model), each range with the caller's
// payload. One owner thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "aggregate/limits.h"
#include "parse/trace_event.h"

namespace profwatch::aggregate {

class LaunchJoin {
 public:
  enum Set : uint8_t { kCollective = 0, kFlops = 1, kBytes = 2 };

  // `drops` must outlive this.
  explicit LaunchJoin(std::map<std::string, uint64_t>& drops) : drops_(drops) {}

  // The host thread (pid, tid) as a small id.
  uint32_t Thread(const parse::Id& pid, const parse::Id& tid);
  void AddLaunch(int64_t correlation, uint32_t thread, int64_t ts);
  void AddRange(Set set, uint32_t thread, int64_t start, int64_t end, uint32_t payload);
  bool Empty(Set set) const { return ranges_[set].empty(); }

  // Sorts what was recorded; call once, after the last Add.
  void Finish();
  // The payloads of the `set` ranges that enclose the launch `correlation`
  // on its thread (start <= launch <= end), innermost first, at most `max`.
  // False when the window holds no such launch.
  bool Enclosing(Set set, int64_t correlation, size_t max, std::vector<uint32_t>* out) const;

 private:
  struct Launch {
    int64_t correlation = 0;
    int64_t ts = 0;
    uint32_t thread = 0;
  };
  struct Range {
    int64_t start = 0, end = 0;
    uint32_t thread = 0, payload = 0;
  };
  std::map<std::string, uint64_t>& drops_;
  std::map<std::pair<int64_t, int64_t>, uint32_t> threads_;
  std::vector<Launch> launches_;
  std::vector<Range> ranges_[3];
};

}  // namespace profwatch::aggregate
