// Hand-built XSpaces and HloProtos for tests: the writer
// (tools/tracegen/xspace_writer.h, shared with profwatch-tracegen) and
// example modules.
#pragma once

#include <string>
#include <string_view>

#include "xspace_writer.h"

namespace profwatch::testing {

using tracegen::pb::Event;
using tracegen::pb::HloArrayShape;
using tracegen::pb::HloComputation;
using tracegen::pb::HloCustomCall;
using tracegen::pb::HloInstr;
using tracegen::pb::HloIotaReplicaGroups;
using tracegen::pb::HloModule;
using tracegen::pb::HloOperands;
using tracegen::pb::HloReplicaGroups;
using tracegen::pb::HloSequence;
using tracegen::pb::HloShape;
using tracegen::pb::HloTupleShape;
using tracegen::pb::LenField;
using tracegen::pb::Line;
using tracegen::pb::MetadataEntry;
using tracegen::pb::MetadataPlane;
using tracegen::pb::Plane;
using tracegen::pb::Space;
using tracegen::pb::Varint;
using tracegen::pb::VarintField;

// A module whose schedule runs launches with FLOP shapes: a fused dot
// [4,8,16] x [4,16,32] (batch 0, contracting 2 x 1), a cuBLAS GEMM
// [8,32] x [32,16], a cuBLAS call with a broken config, a causal cuDNN
// attention with intermediate [2,4,64,64] and q/v [2,64,4,32], its backward,
// and one without a value operand.
inline std::string FlopShapesHlo() {
  const std::string dot_dims =
      LenField(30, VarintField(1, 2) + VarintField(2, 1) + VarintField(3, 0) + VarintField(4, 0));
  const std::string fused =
      HloComputation(10, {HloInstr(100, "a", "parameter", "") + HloShape({4, 8, 16}),
                          HloInstr(101, "b", "parameter", "") + HloShape({4, 16, 32}),
                          HloInstr(102, "dot", "dot", "x/dot_general") + HloShape({4, 8, 32}) +
                              HloOperands({100, 101}) + dot_dims});
  const std::string gemm_config =
      R"({"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],)"
      R"("rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}})";
  const std::string fmha_config =
      R"({"cudnn_fmha_backend_config":{"mask_type":"CAUSAL","intermediate_tensor_shape":)"
      R"({"dimensions":["2","4","64","64"]}}})";
  const std::string entry = HloComputation(
      1, {HloInstr(1, "p", "parameter", "") + HloShape({8, 32}),
          HloInstr(2, "w", "parameter", "") + HloShape({32, 16}),
          HloInstr(3, "q", "parameter", "") + HloShape({2, 64, 4, 32}),
          HloInstr(4, "gemm_fusion_dot.1", "fusion", "", {10}),
          HloInstr(5, "cublas", "custom-call", "y/dot_general") + HloOperands({1, 2}) +
              HloCustomCall("__cublas$lt$matmul", gemm_config),
          HloInstr(6, "bad_cublas", "custom-call", "y/dot_general") + HloOperands({1, 2}) +
              HloCustomCall("__cublas$gemm", "{not json"),
          HloInstr(7, "fmha", "custom-call", "z/attention") + HloOperands({3, 3, 3}) +
              HloCustomCall("__cudnn$fmhaSoftmax", fmha_config),
          HloInstr(8, "fmha_bwd", "custom-call", "z/attention") + HloOperands({3, 3, 3}) +
              HloCustomCall("__cudnn$fmhaSoftmaxBackward", fmha_config),
          HloInstr(9, "fmha_short", "custom-call", "z/attention") + HloOperands({3}) +
              HloCustomCall("__cudnn$fmhaSoftmax", fmha_config)});
  return HloModule("jit_f", 1, {fused, entry}, HloSequence(1, {1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

// jit_step with collectives (shapes: 16 BF16, 11 F32, 21 S4): an
// all-gather-start of bf16[1024,8] into bf16[4096,8] over {{0,1,2,3}}
// (in 16384 B, out 65536 B); an all-reduce combining bf16[1024,8] and
// f32[256] over an iota list of 2 groups of 4 (in 17408 B); a
// reduce-scatter over groups of unequal size; an all-to-all of s4 (no
// byte size); a reduce-scatter-start (async-start) wrapping a
// reduce-scatter of bf16[4096,8] over {{0,1,2,3}} (in 65536 B).
inline std::string CollectivesHlo(std::string_view module = "jit_step") {
  auto shape = [](const std::string& s) { return LenField(3, s); };
  const std::string x = HloArrayShape(16, {1024, 8}), big = HloArrayShape(16, {4096, 8});
  const std::string wrapped =
      HloComputation(30, {HloInstr(300, "p", "parameter", "") + shape(big),
                          HloInstr(301, "reduce-scatter.9", "reduce-scatter", "jit(step)/rs") +
                              shape(x) + HloOperands({300}) + HloReplicaGroups({{0, 1, 2, 3}})});
  const std::string entry = HloComputation(
      1, {HloInstr(1, "x", "parameter", "") + shape(x),
          HloInstr(2, "y", "parameter", "") + shape(HloArrayShape(11, {256})),
          HloInstr(3, "z", "parameter", "") + shape(HloArrayShape(21, {64})),
          HloInstr(4, "g", "parameter", "") + shape(big),
          HloInstr(10, "all-gather-start.1", "all-gather-start", "jit(step)/ag") +
              shape(HloTupleShape({x, big})) + HloOperands({1}) + HloReplicaGroups({{0, 1, 2, 3}}),
          HloInstr(11, "all-gather-done.1", "all-gather-done", "jit(step)/ag") + shape(big) +
              HloOperands({10}),
          HloInstr(12, "all-reduce.2", "all-reduce", "jit(step)/ar") +
              shape(HloTupleShape({x, HloArrayShape(11, {256})})) + HloOperands({1, 2}) +
              HloIotaReplicaGroups(2, 4),
          HloInstr(13, "reduce-scatter.3", "reduce-scatter", "jit(step)/rs") + shape(x) +
              HloOperands({4}) + HloReplicaGroups({{0, 1}, {2}}),
          HloInstr(14, "all-to-all.4", "all-to-all", "jit(step)/a2a") +
              shape(HloArrayShape(21, {64})) + HloOperands({3}) + HloReplicaGroups({{0, 1}}),
          HloInstr(15, "reduce-scatter-start.5", "async-start", "jit(step)/rs", {30}) +
              HloOperands({4})});
  return HloModule(module, 1, {wrapped, entry},
                   HloSequence(1, {1, 2, 3, 4, 10, 11, 12, 13, 14, 15}));
}

}  // namespace profwatch::testing
