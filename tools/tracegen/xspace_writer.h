// A small protocol-buffer writer for XSpaces (tsl xplane.proto) and
// HloProtos (xla hlo.proto): the fields profwatch reads, written by field
// number. Shared by profwatch-tracegen (`jax-collectives` writes its
// .xplane.pb with it) and the tests that build XSpaces by hand
// (tests/testing/proto_writer.h). Header-only, no dependency.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace profwatch::tracegen::pb {

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

}  // namespace profwatch::tracegen::pb
