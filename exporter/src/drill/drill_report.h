// Drill compatibility: reproduces profile_drill.py's report byte for byte
// (see shared/docs/drill-compat.md): name-heuristic kernel detection, its 13
// families, Python float summation order and its exact strings. Used by
// `profwatch analyze --format drill`. Not thread-safe; one tally per run.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "parse/trace_parser.h"

namespace profwatch::drill {

// Accumulates kernels of every file given on the command line, in order.
class DrillTally {
 public:
  // Returns the sink for the file named `file_arg` (the argument string as
  // given: the GPU set is keyed by it, like the script's). Valid until the
  // next BeginFile.
  parse::EventSink& BeginFile(const std::string& file_arg);

  struct Output {
    std::string out;  // stdout bytes
    std::string err;  // stderr bytes
    int exit_code = 0;
  };
  // Renders the report for `file_count` file arguments.
  Output Render(int file_count, int64_t profile_steps, int64_t family_top_n) const;

 private:
  class Sink;
  struct NameStat {
    double time_ms = 0.0;
    int64_t count = 0;
  };
  std::vector<std::string> names_;                 // first-seen order
  std::unordered_map<std::string, size_t> index_;  // name -> names_ index
  std::vector<NameStat> stats_;
  std::unordered_set<std::string> gpus_;  // (file arg, pid) keys
  std::string current_file_;
  std::unique_ptr<Sink> sink_;

  void Add(const parse::TraceEvent& e);

 public:
  DrillTally();
  ~DrillTally();
};

}  // namespace profwatch::drill
