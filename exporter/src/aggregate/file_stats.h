// Internal to aggregate/. FileStats: one file's partial result, what
// FileAggregator::Finish yields and MergeWindow combines (plain data).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aggregate/collectives.h"
#include "aggregate/name_table.h"
#include "aggregate/window_stats.h"
#include "classify/classifier.h"

namespace profwatch::aggregate {

// One file's math-family kernel time (classify::FamilyKind::kMath: GEMM,
// attention, convolution), by kernel name id: the time of kernels whose
// FLOPs were counted, and of kernels whose operator is known but whose
// FLOPs were not (named by that operator). The rest of each name's time is
// uncounted and named by the kernel. Filled by the FLOP joins
// (flop_join.h, graph_kernels.h).
struct MathAccount {
  std::vector<uint8_t> is_math;
  std::vector<int64_t> counted_ps;
  std::vector<int64_t> named_ps;
  std::map<std::string, int64_t> operators;  // uncounted math time by operator name
};

struct FileStats {
  // Where the names below live (views into it): the window's pool, shared
  // by its files, so a name kept by many files is held once.
  std::shared_ptr<const WindowNames> names_pool;
  FileSummary summary;
  std::vector<DeviceSummary> devices;  // GPUs only (>= 1 kernel), device order
  struct Name {
    std::string_view name;  // in names_pool
    classify::FamilyId family = 0;
    int64_t launches = 0;
    int64_t total_ps = 0;
    int64_t exclusive_ps = 0;
    int64_t idle_before_ps = 0;
  };
  std::vector<Name> kernels;  // distinct kernel names of the file
  std::vector<StepSpan> steps;
  struct ScopeTime {
    std::string_view scope;  // in names_pool
    int64_t kernel_ps = 0;
  };
  std::vector<ScopeTime> scopes;  // kernel time per args.name scope (no memory kernels)
  // Kernel time per innermost gpu_user_annotation (the region itself).
  std::vector<ScopeTime> annotations;
  bool annotated = false;  // some device had gpu_user_annotation ranges
  GraphRegionStats graph;  // kernels of CUDA graphs (no scope, a module)
  FlopStats flops;         // families: "#<FamilyId>" until MergeWindow names them
  std::vector<std::pair<classify::FamilyId, FlopStats::Family>> flop_families;
  ByteStats bytes;  // families: in byte_families until MergeWindow names them
  std::vector<std::pair<classify::FamilyId, ByteStats::Family>> byte_families;
  CollectiveStats collectives;  // communication kernels by collective kind
  // GPU agents the file declares that dispatched no kernel, and their names
  // (parse::ParseSummary): unset for formats that do not list agents.
  std::optional<int64_t> idle_gpu_agents;
  std::vector<std::string> idle_gpu_agent_names;
};

}  // namespace profwatch::aggregate
