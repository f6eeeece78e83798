// JAX collectives through the whole analysis (read -> parse -> aggregate):
// a JSON trace whose NCCL kernels carry their module and instruction
// (hlo_module, hlo_op) and the process's xplane with that module's HloProto.
// Bytes and group sizes come from the instruction's shapes and replica
// groups (parse::HloCollective), the bandwidths from the nccl-tests rules
// (collectives.h).
#include <gtest/gtest.h>

#include <string>

#include "aggregate/collectives.h"
#include "analysis/analyze.h"
#include "testing/proto_writer.h"
#include "testing/test_util.h"

namespace profwatch::analysis {
// Named for this file: the unity build compiles it with its neighbours.
namespace jax_collectives_analysis_test {

using aggregate::CollectiveKind;

constexpr int64_t kPsPerUs = 1'000'000;

// One GPU: a compute kernel, then two all-gathers of 100 us (hlo_op
// all-gather-start.1) and one all-reduce of 50 us (all-reduce.2) in module
// `module`.
std::string Json(const std::string& module) {
  std::string j =
      R"j({"displayTimeUnit":"ns","traceEvents":[)j"
      R"j({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)j"
      R"j({"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"Stream #7(Compute)"}},)j"
      R"j({"ph":"M","pid":1,"tid":8,"name":"thread_name","args":{"name":"Stream #8(Nccl)"}},)j"
      R"j({"ph":"X","pid":1,"tid":7,"ts":1000,"dur":400,"name":"loop_add_fusion",)j"
      R"j("args":{"name":"jit(step)/add"}})j";
  auto kernel = [&](int64_t ts, int64_t dur, const std::string& name, const std::string& op) {
    j += R"j(,{"ph":"X","pid":1,"tid":8,"ts":)j" + std::to_string(ts) + R"j(,"dur":)j" +
         std::to_string(dur) + R"j(,"name":")j" + name + R"j(","args":{"hlo_module":")j" + module +
         R"j(","hlo_op":")j" + op + R"j("}})j";
  };
  kernel(1000, 100, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         "all-gather-start.1");
  kernel(1200, 100, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         "all-gather-start.1");
  kernel(1400, 50, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         "all-reduce.2");
  return j + "]}";
}

Result<WindowAnalysis> Analyze(const std::string& json_module, bool with_xplane) {
  testing::TempDir dir;
  const std::string json = dir.Sub("2026_11_26_00_00_00/host.trace.json.gz");
  const std::string xplane = dir.Sub("2026_11_26_00_00_00/host.xplane.pb");
  testing::WriteFile(json, testing::Gzip(Json(json_module)));
  std::vector<std::string> files = {json};
  if (with_xplane) {
    testing::WriteFile(xplane, testing::MetadataPlane({testing::CollectivesHlo("jit_step")}));
    files.push_back(xplane);
  }
  static const AnalyzeOptions options;
  return AnalyzeFiles(files, options);
}

// all-gather: the full output, 65536 B a call, busbw x (4-1)/4; all-reduce:
// the input, 17408 B, busbw x 2(4-1)/4 (groups of 4 from the iota list).
TEST(JaxCollectivesAnalysisTest, BytesAndGroupSizesComeFromTheHloInstruction) {
  auto a = Analyze("jit_step", true);
  ASSERT_TRUE(a) << a.error().ToString();
  const aggregate::CollectiveSums& ag = a->stats.collectives[CollectiveKind::kAllGather];
  EXPECT_EQ(ag.calls, 2);
  EXPECT_EQ(ag.sized_calls, 2);
  EXPECT_EQ(ag.sized_ps, 200 * kPsPerUs);
  EXPECT_DOUBLE_EQ(ag.bytes, 2 * 65536.0);
  EXPECT_EQ(ag.bus_ps, 200 * kPsPerUs);
  EXPECT_DOUBLE_EQ(ag.bus_bytes, 2 * 65536.0 * 3 / 4);
  EXPECT_EQ(ag.group_sizes, std::vector<int64_t>{4});
  ASSERT_TRUE(ag.AlgBandwidth());
  EXPECT_DOUBLE_EQ(*ag.AlgBandwidth(), 2 * 65536.0 / 200e-6);
  EXPECT_DOUBLE_EQ(*ag.BusBandwidth(), 2 * 65536.0 * 3 / 4 / 200e-6);
  const aggregate::CollectiveSums& ar = a->stats.collectives[CollectiveKind::kAllReduce];
  EXPECT_EQ(ar.sized_calls, 1);
  EXPECT_DOUBLE_EQ(ar.bytes, 17408.0);
  EXPECT_DOUBLE_EQ(ar.bus_bytes, 17408.0 * 2 * 3 / 4);
  EXPECT_EQ(ar.group_sizes, std::vector<int64_t>{4});
}

// Without the module (no xplane, or another module's name) the calls are
// counted but unsized: bandwidth absent, never 0.
TEST(JaxCollectivesAnalysisTest, WithoutTheModuleCallsStayUnsized) {
  for (const auto& [module, xplane] :
       std::vector<std::pair<std::string, bool>>{{"jit_step", false}, {"jit_other", true}}) {
    SCOPED_TRACE(module);
    auto a = Analyze(module, xplane);
    ASSERT_TRUE(a) << a.error().ToString();
    const aggregate::CollectiveSums& ag = a->stats.collectives[CollectiveKind::kAllGather];
    EXPECT_EQ(ag.calls, 2);
    EXPECT_EQ(ag.kernel_ps, 200 * kPsPerUs);
    EXPECT_EQ(ag.sized_calls, 0);
    EXPECT_FALSE(ag.AlgBandwidth());
    EXPECT_TRUE(ag.group_sizes.empty());
  }
}

}  // namespace jax_collectives_analysis_test
}  // namespace profwatch::analysis
