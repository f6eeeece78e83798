// Internal to aggregate/. FlopJoin: Kineto's FLOP join of one file. Counted
// operators (flops.h) are kept by External id, each kernel's link to its
// operator beside them; Count gives each operator's FLOPs once, with its
// kernels' time, and accounts every math kernel's time as counted or not.
// One owner thread.
//
// A kernel's operator is the one whose External id it carries (the
// innermost operator open at its launch). When that operator is no counted
// one, a math kernel joins the innermost counted operator enclosing its
// launch instead: aten::_scaled_dot_product_flash_attention's kernel is
// launched inside aten::_flash_attention_forward. The External id cannot
// be trusted at all where older Kineto writes the kernel's correlation id as
// its External id (the two are equal), which then names an unrelated
// operator. Such a kernel (and one without an External id) joins the
// innermost counted operator open on the host thread when it was launched
// (launch_join.h).
//
// Bytes (bytes.h) join the same way, apart from FLOPs: operators with a
// bytes model are kept by External id, and each kernel joins its own
// operator's bytes model, a math kernel whose operator has none the
// innermost operator with one enclosing its launch, a kernel without a
// trustworthy External id the innermost one open at its launch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aggregate/bytes.h"
#include "aggregate/file_stats.h"
#include "aggregate/flops.h"
#include "aggregate/launch_join.h"
#include "aggregate/name_table.h"
#include "classify/classifier.h"

namespace profwatch::aggregate {

class FlopJoin {
 public:
  // Beyond kMaxFlopLinks operators, names or links, later
  // ones are counted in `drops` ("flop_op_limit", "flop_op_name_limit",
  // "flop_link_limit"). `drops` and `launches` must outlive this.
  FlopJoin(std::map<std::string, uint64_t>& drops, LaunchJoin& launches)
      : drops_(drops), launches_(launches) {}

  // An operator whose FLOPs are counted; its kernels carry `external_id`,
  // it ran on host `thread` from `start` to `end`.
  void AddOperator(int64_t external_id, const OpFlops& flops, uint32_t thread, int64_t start,
                   int64_t end);
  // An operator with a bytes model; beyond kMaxFlopLinks counted in
  // `drops` ("bytes_op_limit").
  void AddBytesOperator(int64_t external_id, const OpBytes& bytes, uint32_t thread, int64_t start,
                        int64_t end);
  // Any operator's name, by External id: it names the math kernels it
  // launched whose FLOPs are not counted.
  void AddOperatorName(int64_t external_id, std::string_view name);
  // A kernel (name id `name`) launched by the operator `external_id`, as
  // `correlation` (-1: unknown).
  void AddKernel(int64_t external_id, int64_t ps, uint32_t name, int64_t correlation = -1);
  // A kernel without a trustworthy External id, launched as `correlation`.
  void AddLaunchedKernel(int64_t correlation, int64_t ps, uint32_t name);

  // Joins operators and kernels into out.flops and out.flop_families: each
  // operator's FLOPs once, with its kernels' time, in the family of the
  // kernel that ran them (its longest math-family kernel, else its longest
  // kernel). Adds the math kernels' time to `math`: counted, or uncounted
  // and named by its operator. `family` by name id. Call after
  // LaunchJoin::Finish.
  // Also joins the bytes (CountBytes first).
  void Count(const std::vector<classify::FamilyId>& family, MathAccount& math, FileStats& out);

 private:
  // Joins operators with a bytes model and kernels into out.bytes and
  // out.byte_families: each operator's bytes once, in the family of its
  // longest math-family kernel, else its longest kernel, with the time of
  // its kernels of that family (ByteStats::Family::kernel_ps; of it the
  // memory-bound kinds' in memory_bound_ps). Leaves links_ as they were.
  void CountBytes(const std::vector<classify::FamilyId>& family, const MathAccount& math,
                  FileStats& out);
  struct KernelLink {
    int64_t key = 0;  // External id; a correlation id while by_launch
    int64_t correlation = -1;
    int64_t ps = 0;
    uint32_t name = 0;
    bool by_launch = false;
    bool linked = true;  // false: no operator found for it
  };
  std::map<std::string, uint64_t>& drops_;
  LaunchJoin& launches_;
  std::unordered_map<int64_t, OpFlops> ops_;
  std::vector<int64_t> range_op_;  // LaunchJoin kFlops payload -> External id
  std::unordered_map<int64_t, OpBytes> byte_ops_;
  std::vector<int64_t> range_byte_op_;  // LaunchJoin kBytes payload -> External id
  NameTable op_names_;
  std::vector<std::pair<int64_t, uint32_t>> op_name_of_;  // (External id, op name id)
  std::vector<KernelLink> links_;
};

}  // namespace profwatch::aggregate
