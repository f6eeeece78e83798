// Internal to aggregate/. FlopJoin: Kineto's FLOP join of one file. Counted
// operators (flops.h) are kept by External id and each kernel's External id
// link beside them; Count gives each operator's FLOPs once, with its
// kernels' time. One owner thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "aggregate/file_stats.h"
#include "aggregate/flops.h"
#include "classify/classifier.h"

namespace profwatch::aggregate {

class FlopJoin {
 public:
  // Beyond FileAggregator::kMaxFlopLinks operators or links, later ones are
  // counted in `drops` ("flop_op_limit", "flop_link_limit"), which must
  // outlive this.
  explicit FlopJoin(std::map<std::string, uint64_t>& drops) : drops_(drops) {}

  // An operator whose FLOPs are counted; its kernels carry `external_id`.
  void AddOperator(int64_t external_id, const OpFlops& flops);
  // A kernel (name id `name`) launched by the operator `external_id`.
  void AddKernel(int64_t external_id, int64_t ps, uint32_t name);

  // Joins operators and kernels into out.flops and out.flop_families: each
  // operator's FLOPs once, with its kernels' time; its family (`family` by
  // name id) is that of its longest kernel.
  void Count(const std::vector<classify::FamilyId>& family, FileStats& out);

 private:
  struct KernelLink {
    int64_t external_id = 0;
    int64_t ps = 0;
    uint32_t name = 0;
  };
  std::map<std::string, uint64_t>& drops_;
  std::unordered_map<int64_t, OpFlops> ops_;
  std::vector<KernelLink> links_;
};

}  // namespace profwatch::aggregate
