#include "aggregate/collectives.h"

#include <gtest/gtest.h>

#include <limits>

namespace profwatch::aggregate {
namespace {

using K = CollectiveKind;

TEST(CollectivesTest, KindOfKinetoAndHloNames) {
  struct Case {
    std::string_view name;
    std::optional<K> kind;
  };
  for (const Case& c : {Case{"allreduce", K::kAllReduce},
                        Case{"allreduce_coalesced", K::kAllReduce},
                        Case{"_allgather_base", K::kAllGather},
                        Case{"allgather_into_tensor_coalesced", K::kAllGather},
                        Case{"reduce_scatter_tensor_coalesced", K::kReduceScatter},
                        Case{"_reduce_scatter_base", K::kReduceScatter},
                        Case{"broadcast", K::kBroadcast},
                        Case{"all_to_allv", K::kAllToAll},
                        Case{"send", K::kSendRecv},
                        Case{"recv", K::kSendRecv},
                        Case{"reduce", K::kReduce},
                        Case{"nccl:all_reduce", K::kAllReduce},
                        Case{"ncclAllGather", K::kAllGather},
                        Case{"ncclReduceScatter", K::kReduceScatter},
                        Case{"ncclSend", K::kSendRecv},
                        Case{"ncclBroadcast", K::kBroadcast},
                        Case{"ncclGroupEnd", std::nullopt},
                        Case{"all-gather-start.3", K::kAllGather},
                        Case{"reduce-scatter.1", K::kReduceScatter},
                        Case{"all-reduce-start", K::kAllReduce},
                        Case{"all-to-all.2", K::kAllToAll},
                        Case{"collective-permute-start.1", K::kSendRecv},
                        Case{"ragged-all-to-all.4", K::kAllToAll},
                        Case{"gather", K::kOther},
                        Case{"barrier", K::kOther},
                        Case{"loop_transpose_fusion", std::nullopt},
                        Case{"", std::nullopt},
                        Case{"frobnicate", std::nullopt}}) {
    EXPECT_EQ(CollectiveKindOfName(c.name), c.kind) << c.name;
  }
}

// JAX's hlo_op: collective instructions only; HLO's compute ops broadcast,
// reduce, gather and scatter are not collectives.
TEST(CollectivesTest, KindOfHloOps) {
  struct Case {
    std::string_view op;
    std::optional<K> kind;
  };
  for (const Case& c :
       {Case{"all-reduce-start.2", K::kAllReduce}, Case{"all-reduce", K::kAllReduce},
        Case{"all-gather-start.1", K::kAllGather}, Case{"reduce-scatter.4", K::kReduceScatter},
        Case{"all-to-all.2", K::kAllToAll}, Case{"ragged-all-to-all.1", K::kAllToAll},
        Case{"collective-permute-start.1", K::kSendRecv}, Case{"send.3", K::kSendRecv},
        Case{"recv-done.1", K::kSendRecv}, Case{"collective-broadcast.2", K::kBroadcast},
        Case{"broadcast.2", std::nullopt}, Case{"reduce.5", std::nullopt},
        Case{"gather.1", std::nullopt}, Case{"scatter", std::nullopt},
        Case{"custom-call.44", std::nullopt}, Case{"loop_add_fusion", std::nullopt},
        Case{"", std::nullopt}}) {
    EXPECT_EQ(CollectiveKindOfHloOp(c.op), c.kind) << c.op;
  }
}

TEST(CollectivesTest, KindOfKernelNames) {
  struct Case {
    std::string_view name;
    std::optional<K> kind;
  };
  for (const Case& c :
       {Case{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", K::kAllGather},
        Case{"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
             K::kAllReduce},
        Case{"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", K::kReduceScatter},
        Case{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", K::kSendRecv},
        Case{"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*)", K::kBroadcast},
        Case{"ncclDevKernel_Reduce_Sum_f32_RING_LL", K::kReduce},
        Case{"void xla::gpu::RaggedAllToAllKernelImpl<8>(...)", K::kAllToAll},
        Case{"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", std::nullopt},
        Case{"Cijk_Alik_Bljk", std::nullopt}, Case{"ncclKernel_", std::nullopt}}) {
    EXPECT_EQ(CollectiveKindOfKernel(c.name), c.kind) << c.name;
  }
}

TEST(CollectivesTest, BytesAreTheOutputForAllGatherTheInputOtherwise) {
  EXPECT_EQ(CollectiveBytes(K::kAllGather, 2, 25'136, 201'088), 402'176);
  EXPECT_EQ(CollectiveBytes(K::kReduceScatter, 2, 201'088, 25'136), 402'176);
  EXPECT_EQ(CollectiveBytes(K::kAllReduce, 4, 10, 10), 40);
  EXPECT_EQ(CollectiveBytes(K::kSendRecv, 4, 10, -1), 40);
  // Missing or impossible: no size, never 0.
  EXPECT_EQ(CollectiveBytes(K::kAllGather, 2, 10, -1), std::nullopt);
  EXPECT_EQ(CollectiveBytes(K::kAllReduce, 0, 10, 10), std::nullopt);
  EXPECT_EQ(CollectiveBytes(K::kOther, 4, 10, 10), std::nullopt);
  EXPECT_EQ(CollectiveBytes(K::kAllReduce, 8, std::numeric_limits<int64_t>::max() / 4, 0),
            std::nullopt);
  EXPECT_EQ(DtypeBytes("BFloat16"), 2);
  EXPECT_EQ(DtypeBytes("Float"), 4);
  EXPECT_EQ(DtypeBytes("bf16"), 2);
  EXPECT_EQ(DtypeBytes("Quaternion"), std::nullopt);
}

TEST(CollectivesTest, BusFactorsOfNcclTests) {
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(K::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(K::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(K::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(K::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(K::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(K::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor(K::kSendRecv, 2), 1.0);
  EXPECT_EQ(BusBandwidthFactor(K::kOther, 8), std::nullopt);
  EXPECT_EQ(BusBandwidthFactor(K::kAllReduce, 0), std::nullopt);
}

TEST(CollectivesTest, BandwidthOverSizedCallsOnlyAndAbsentWithoutThem) {
  CollectiveSums s;
  EXPECT_EQ(s.AlgBandwidth(), std::nullopt);
  EXPECT_EQ(s.BusBandwidth(), std::nullopt);
  s.AddSized(K::kAllReduce, std::nullopt, 4, 1'000'000);  // no size: time not counted
  EXPECT_EQ(s.AlgBandwidth(), std::nullopt);
  EXPECT_EQ(s.group_sizes, std::vector<int64_t>{4});
  s.AddSized(K::kAllReduce, 1'000'000, 4, 1'000'000'000);             // 1 MB in 1 ms
  s.AddSized(K::kAllReduce, 1'000'000, std::nullopt, 1'000'000'000);  // no group: algbw only
  EXPECT_DOUBLE_EQ(*s.AlgBandwidth(), 2e6 / 2e-3);
  EXPECT_DOUBLE_EQ(*s.BusBandwidth(), 1e6 * 1.5 / 1e-3);
  CollectiveSums zero;  // sized calls of no time: no bandwidth, not infinite
  zero.AddSized(K::kAllGather, 100, 8, 0);
  EXPECT_EQ(zero.AlgBandwidth(), std::nullopt);
  EXPECT_EQ(zero.BusBandwidth(), std::nullopt);
}

TEST(CollectivesTest, GroupSizesAreBounded) {
  CollectiveSums s;
  for (int64_t g = 20; g >= 1; --g) s.AddGroupSize(g);
  EXPECT_EQ(s.group_sizes.size(), kMaxGroupSizes);
  EXPECT_TRUE(s.more_group_sizes);
  EXPECT_TRUE(std::is_sorted(s.group_sizes.begin(), s.group_sizes.end()));
}

TEST(CollectivesTest, KinetoCallNeedsAKnownDtypeForBytes) {
  CollectiveCall c = KinetoCollectiveCall("_allgather_base", "BFloat16", 25'136, 201'088, 8);
  EXPECT_EQ(c.kind, K::kAllGather);
  EXPECT_EQ(c.bytes, 402'176);
  EXPECT_EQ(c.ranks, 8);
  c = KinetoCollectiveCall("allreduce", "Mystery", 10, 10, 2);
  EXPECT_EQ(c.kind, K::kAllReduce);
  EXPECT_EQ(c.bytes, std::nullopt);
  c = KinetoCollectiveCall("", "Float", 10, 10, 2);
  EXPECT_EQ(c.kind, std::nullopt);
  EXPECT_EQ(c.bytes, std::nullopt);
}

// Process groups: named ones kept, first seen first, at most
// kMaxProcessGroups; torch's "undefined" and an empty description are none;
// the text is printable ASCII cut at kMaxProcessGroupText.
TEST(CollectivesTest, ProcessGroupsAreBoundedAndOnlyNamedOnesSpeak) {
  const CollectiveCall undefined =
      KinetoCollectiveCall("allreduce", "Float", 4, 4, 2, "undefined", "[0, 1]");
  EXPECT_EQ(undefined.group.description, "");
  EXPECT_EQ(undefined.group.ranks, "");
  const CollectiveCall named =
      KinetoCollectiveCall("allreduce", "Float", 4, 4, 2, "f\x01sdp\n", "[0, 1]");
  EXPECT_EQ(named.group.description, "fsdp");
  EXPECT_EQ(named.group.ranks, "[0, 1]");
  const std::string huge(1000, 'x');
  EXPECT_EQ(KinetoCollectiveCall("allreduce", "Float", 4, 4, 2, huge, huge).group.ranks.size(),
            kMaxProcessGroupText);

  CollectiveSums s;
  s.AddCall(K::kAllReduce, undefined, 10);
  EXPECT_TRUE(s.process_groups.empty());
  for (const char* d : {"tp", "dp", "tp", "pp", "ep", "fsdp"}) {
    CollectiveCall c = named;
    c.group.description = d;
    s.AddCall(K::kAllReduce, c, 10);
  }
  ASSERT_EQ(s.process_groups.size(), kMaxProcessGroups);
  EXPECT_EQ(s.process_groups[0].description, "tp");
  EXPECT_EQ(s.process_groups[3].description, "ep");
  EXPECT_TRUE(s.more_process_groups);
  EXPECT_EQ(s.calls, 0);  // AddCall adds figures, the caller counts calls
}

TEST(CollectivesTest, CollectiveOpsAreFoundByExternalIdAndBounded) {
  CollectiveOps ops;
  EXPECT_EQ(ops.Find(1), nullptr);
  EXPECT_TRUE(ops.Add(1, KinetoCollectiveCall("_allgather_base", "Half", 2, 8, 4)));
  EXPECT_TRUE(ops.Add(2, KinetoCollectiveCall("frobnicate", "Half", 2, 8, 4)));  // no kind
  ASSERT_NE(ops.Find(1), nullptr);
  EXPECT_EQ(ops.Find(1)->kind, K::kAllGather);
  EXPECT_EQ(ops.Find(1)->bytes, 16);
  EXPECT_EQ(ops.Find(2), nullptr);
  for (int64_t id = 10; ops.Add(id, KinetoCollectiveCall("send", "Float", 1, 1, 2)); ++id) {
    ASSERT_LT(id, static_cast<int64_t>(kMaxOps) + 10);
  }
  EXPECT_TRUE(ops.Add(1, KinetoCollectiveCall("recv", "Float", 1, 1, 2)));  // a kept id: replaced
  EXPECT_EQ(ops.Find(1)->kind, K::kSendRecv);
}

// Issue #48: the operators that launch collectives name their kind;
// symmetric memory's and vLLM's all-reduce kernels name theirs.
TEST(CollectivesTest, KindOfLaunchingOperatorsAndSymmetricMemoryKernels) {
  struct Case {
    std::string_view name;
    std::optional<K> kind;
  };
  for (const Case& c :
       {Case{"nccl:all_reduce", K::kAllReduce}, Case{"nccl:_all_gather_base", K::kAllGather},
        Case{"nccl:_reduce_scatter_base", K::kReduceScatter}, Case{"nccl:all_to_all", K::kAllToAll},
        Case{"nccl:send", K::kSendRecv}, Case{"nccl:broadcast", K::kBroadcast},
        Case{"nccl:gather", K::kOther}, Case{"c10d::allreduce_", K::kAllReduce},
        Case{"c10d::_allgather_base_", K::kAllGather},
        Case{"_c10d_functional::all_gather_into_tensor", K::kAllGather},
        Case{"symm_mem::multimem_all_reduce_", K::kAllReduce},
        Case{"symm_mem::one_shot_all_reduce", K::kAllReduce},
        Case{"symm_mem::two_shot_all_reduce_", K::kAllReduce},
        Case{"_C_custom_ar::all_reduce", K::kAllReduce}, Case{"aten::gather", std::nullopt},
        Case{"aten::mm", std::nullopt}, Case{"record_param_comms", std::nullopt}}) {
    EXPECT_EQ(CollectiveKindOfOperator(c.name), c.kind) << c.name;
  }
  EXPECT_EQ(CollectiveKindOfKernel("void (anonymous namespace)::multimem_all_reduce_kernel<c10::"
                                   "BFloat16, 16>(c10::BFloat16*)"),
            K::kAllReduce);
  EXPECT_EQ(CollectiveKindOfKernel("void c10d::symmetric_memory::one_shot_all_reduce_kernel<f>()"),
            K::kAllReduce);
  EXPECT_EQ(CollectiveKindOfKernel("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>()"),
            K::kAllReduce);
  EXPECT_EQ(CollectiveKindOfKernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"),
            K::kSendRecv);
  EXPECT_EQ(TorchTypeBytes("c10::BFloat16"), 2);
  EXPECT_EQ(TorchTypeBytes("float"), 4);
  EXPECT_EQ(TorchTypeBytes("long int"), 8);
  EXPECT_EQ(TorchTypeBytes("TensorList"), std::nullopt);
}

// An input-only nccl:_all_gather_base inside c10d::_allgather_base_
// (output, input): kind from the innermost, group size from the base
// operator's ratio, bytes the whole output (input x group); reduce-scatter
// the whole input; all-reduce without a group size has bytes, no ranks.
TEST(CollectivesTest, LaunchersGiveKindBytesAndGroupSize) {
  const CollectiveOpCall inner = CollectiveCallOfOperator("nccl:_all_gather_base", {1024, -1, 2});
  const CollectiveOpCall outer =
      CollectiveCallOfOperator("c10d::_allgather_base_", {8192, 1024, 2});
  EXPECT_EQ(outer.ranks, 8);
  CollectiveCall ag = CollectiveCallOfLaunchers({inner, outer});
  EXPECT_EQ(ag.kind, K::kAllGather);
  EXPECT_EQ(ag.ranks, 8);
  EXPECT_EQ(ag.bytes, 8192 * 2);
  // The input-only range alone: no group size, so no output bytes.
  ag = CollectiveCallOfLaunchers({inner});
  EXPECT_EQ(ag.kind, K::kAllGather);
  EXPECT_FALSE(ag.bytes.has_value());
  const CollectiveCall rs = CollectiveCallOfLaunchers(
      {CollectiveCallOfOperator("nccl:_reduce_scatter_base", {8192, -1, 4}),
       CollectiveCallOfOperator("c10d::_reduce_scatter_base_", {1024, 8192, 4})});
  EXPECT_EQ(rs.kind, K::kReduceScatter);
  EXPECT_EQ(rs.ranks, 8);
  EXPECT_EQ(rs.bytes, 8192 * 4);
  const CollectiveCall ar =
      CollectiveCallOfLaunchers({CollectiveCallOfOperator("nccl:all_reduce", {4096, -1, 2})});
  EXPECT_EQ(ar.kind, K::kAllReduce);
  EXPECT_EQ(ar.bytes, 4096 * 2);
  EXPECT_FALSE(ar.ranks.has_value());
  // The innermost operator with a kind names it; other kinds' shapes are not mixed in.
  const CollectiveCall mixed = CollectiveCallOfLaunchers(
      {CollectiveOpCall{}, CollectiveCallOfOperator("nccl:broadcast", {10, -1, 4}),
       CollectiveCallOfOperator("c10d::_allgather_base_", {80, 10, 4})});
  EXPECT_EQ(mixed.kind, K::kBroadcast);
  EXPECT_EQ(mixed.bytes, 40);
  EXPECT_FALSE(mixed.ranks.has_value());
  EXPECT_FALSE(CollectiveCallOfLaunchers({CollectiveOpCall{}}).kind.has_value());
}

}  // namespace
}  // namespace profwatch::aggregate
