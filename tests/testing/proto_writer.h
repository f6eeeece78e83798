// A tiny protocol-buffer writer for hand-built XSpaces and HloProtos in tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace profwatch::testing {

inline std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
inline std::string VarintField(uint32_t field, int64_t v) {
  return Varint(uint64_t{field} << 3 | 0) + Varint(static_cast<uint64_t>(v));
}
inline std::string LenField(uint32_t field, std::string_view bytes) {
  return Varint(uint64_t{field} << 3 | 2) + Varint(bytes.size()) + std::string(bytes);
}

// XSpace pieces (tsl xplane.proto): an XEvent, an XLine (id 1, name 2,
// timestamp_ns 3, events 4), an event_metadata map entry, an XPlane (id 1,
// name 2, lines 3, then the metadata entries), an XSpace (planes 1,
// hostnames 4).
inline std::string Event(int64_t metadata_id, int64_t offset_ps, int64_t duration_ps) {
  return VarintField(1, metadata_id) + VarintField(2, offset_ps) + VarintField(3, duration_ps);
}
inline std::string Line(int64_t id, std::string_view name, int64_t timestamp_ns,
                        const std::vector<std::string>& events, std::string extra = "") {
  std::string line = VarintField(1, id) + LenField(2, name) + VarintField(3, timestamp_ns);
  for (const auto& e : events) line += LenField(4, e);
  return line + extra;
}
inline std::string MetadataEntry(int64_t key, std::string_view name,
                                 std::string_view display_name = "") {
  std::string md = VarintField(1, key) + LenField(2, name);
  if (!display_name.empty()) md += LenField(4, display_name);
  return LenField(4, VarintField(1, key) + LenField(2, md));
}
inline std::string Plane(int64_t id, std::string_view name, const std::vector<std::string>& lines,
                         const std::string& metadata_entries) {
  std::string plane = VarintField(1, id) + LenField(2, name);
  for (const auto& l : lines) plane += LenField(3, l);
  return plane + metadata_entries;
}
inline std::string Space(const std::vector<std::string>& planes) {
  std::string space;
  for (const auto& p : planes) space += LenField(1, p);
  return space + LenField(4, "host0");
}

// HloInstructionProto: name 1, opcode 2, metadata 7 (op_name 2), id 35,
// called_computation_ids 38.
inline std::string HloInstr(int64_t id, std::string_view name, std::string_view opcode,
                            std::string_view op_name, std::vector<int64_t> called = {}) {
  std::string out = LenField(1, name) + LenField(2, opcode);
  if (!op_name.empty()) out += LenField(7, LenField(2, op_name));
  out += VarintField(35, id);
  for (int64_t c : called) out += VarintField(38, c);
  return out;
}
// More HloInstructionProto fields: shape (3: ShapeProto dimensions = 3),
// custom_call_target (28), operand_ids (36), backend_config (43).
inline std::string HloShape(const std::vector<int64_t>& dims) {
  std::string shape;
  for (int64_t d : dims) shape += VarintField(3, d);
  return LenField(3, shape);
}
// ShapeProto bytes: an array (element_type 2: xla PrimitiveType, e.g. 11
// F32, 16 BF16; dimensions 3) and a tuple (tuple_shapes 4).
inline std::string HloArrayShape(int64_t element_type, const std::vector<int64_t>& dims) {
  std::string shape = VarintField(2, element_type);
  for (int64_t d : dims) shape += VarintField(3, d);
  return shape;
}
inline std::string HloTupleShape(const std::vector<std::string>& elements) {
  std::string shape = VarintField(2, 13);  // TUPLE
  for (const auto& e : elements) shape += LenField(4, e);
  return shape;
}
// Replica groups (49: ReplicaGroup replica_ids 1), and the iota form
// (collective_device_list 87, iota_replica_group_list 2: num_replica_groups
// 1, num_devices_per_group 2).
inline std::string HloReplicaGroups(const std::vector<std::vector<int64_t>>& groups) {
  std::string out;
  for (const auto& g : groups) {
    std::string ids;
    for (int64_t id : g) ids += VarintField(1, id);
    out += LenField(49, ids);
  }
  return out;
}
inline std::string HloIotaReplicaGroups(int64_t groups, int64_t per_group) {
  return LenField(87, LenField(2, VarintField(1, groups) + VarintField(2, per_group)));
}
inline std::string HloOperands(const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids) out += VarintField(36, id);
  return out;
}
inline std::string HloCustomCall(std::string_view target, std::string_view backend_config) {
  return LenField(28, target) + LenField(43, backend_config);
}
inline std::string HloComputation(int64_t id, const std::vector<std::string>& instrs) {
  std::string out = LenField(1, "c" + std::to_string(id));
  for (const auto& i : instrs) out += LenField(2, i);
  return out + VarintField(5, id);
}
inline std::string HloSequence(int64_t computation, const std::vector<int64_t>& ids) {
  std::string seq;
  for (int64_t id : ids) seq += VarintField(1, id);
  return LenField(1, VarintField(1, computation) + LenField(2, seq));
}
inline std::string HloModule(std::string_view name, int64_t entry,
                             const std::vector<std::string>& comps, const std::string& schedule) {
  std::string out = LenField(1, name);
  for (const auto& c : comps) out += LenField(3, c);
  out += VarintField(6, entry);
  if (!schedule.empty()) out += LenField(7, schedule);
  return LenField(1, out);  // HloProto.hlo_module
}

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

// The XSpace plane "/host:metadata" holding HloProtos as XLA writes it:
// an event metadata per module with its "Hlo Proto" stat (bytes_value).
inline std::string MetadataPlane(const std::vector<std::string>& hlo_protos) {
  std::string plane = VarintField(1, 0) + LenField(2, "/host:metadata");
  for (size_t i = 0; i < hlo_protos.size(); ++i) {
    const int64_t id = static_cast<int64_t>(i) + 1;
    const std::string stat = VarintField(1, 9) + LenField(6, hlo_protos[i]);
    const std::string md = VarintField(1, id) + LenField(2, "m") + LenField(5, stat);
    plane += LenField(4, VarintField(1, id) + LenField(2, md));
  }
  plane +=
      LenField(5, VarintField(1, 9) + LenField(2, VarintField(1, 9) + LenField(2, "Hlo Proto")));
  return LenField(1, plane);
}

}  // namespace profwatch::testing
