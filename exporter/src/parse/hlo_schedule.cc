#include "parse/hlo_schedule.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/checked.h"
#include "parse/proto_wire.h"

namespace profwatch::parse {
namespace {

using wire::Cursor;
using wire::kLen;
using wire::kVarint;

// What decoding a module may still hold (HloLimits::max_shape_leaves and
// max_repeated), charged as values are decoded so that no field, however
// long, is read past them. Once one is spent `over` names it and every
// decoder stops: the module is too complex.
struct DecodeBudget {
  size_t leaves = 0;
  size_t repeated = 0;
  HloCost* cost = nullptr;
  std::string over;
  bool Leaf() {
    if (!over.empty()) return false;
    if (cost->shape_leaves >= leaves) {
      over = "more than " + std::to_string(leaves) + " shape leaves";
      return false;
    }
    ++cost->shape_leaves;
    return true;
  }
  bool Value() {
    if (!over.empty()) return false;
    if (cost->repeated >= repeated) {
      over = "more than " + std::to_string(repeated) + " values of repeated fields";
      return false;
    }
    ++cost->repeated;
    return true;
  }
};

// A repeated int64: packed (one length-delimited field) or one varint each.
// `out` null: counted only.
bool ReadInt64s(Cursor& c, uint32_t wire_type, std::vector<int64_t>* out, DecodeBudget& budget) {
  uint64_t v = 0;
  if (wire_type == kVarint) {
    if (!c.Varint(&v)) return false;
    if (!budget.Value()) return c.Fail(budget.over);
    if (out != nullptr) out->push_back(static_cast<int64_t>(v));
    return true;
  }
  std::string_view packed;
  if (!c.Expect(wire_type, kLen, "repeated int64") || !c.Bytes(&packed)) return false;
  Cursor p(packed);
  while (!p.Done()) {
    if (!p.Varint(&v)) return c.Fail(p.error());
    if (!budget.Value()) return c.Fail(budget.over);
    if (out != nullptr) out->push_back(static_cast<int64_t>(v));
  }
  return true;
}

// One array of a shape: its PrimitiveType and dimensions.
struct Leaf {
  int64_t type = 0;
  Dims dims;
};

struct Instr {
  std::string_view name, opcode, op_name, custom_call_target, backend_config;
  int64_t id = 0;
  std::vector<int64_t> called, operands;
  // The arrays of its shape in order (a tuple's, nested ones flattened); the
  // first is the result of a custom-call whose other elements are workspaces.
  std::vector<Leaf> leaves;
  bool has_dot_dims = false;
  DotShape dot;  // dimension numbers only
  // Replica groups (ReplicaGroup lists or an iota list): how many, the size
  // of the first, whether all have that size.
  int64_t groups = 0, group_size = -1;
  bool unequal_groups = false;
};

const Dims kNoDims;
const Dims& DimsOfShape(const Instr& in) {
  return in.leaves.empty() ? kNoDims : in.leaves.front().dims;
}

// ShapeProto: element_type = 2, dimensions = 3 (int64s), tuple_shapes = 4
// (nested up to 4 deep).
bool DecodeShape(std::string_view bytes, std::vector<Leaf>& leaves, DecodeBudget& budget,
                 int depth = 0) {
  Cursor c(bytes);
  Leaf leaf;
  bool tuple = false;
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    uint64_t v = 0;
    if (!c.Tag(&f, &wt)) return false;
    if (f == 2) {
      if (!c.Expect(wt, kVarint, "element_type") || !c.Varint(&v)) return false;
      leaf.type = static_cast<int64_t>(v);
    } else if (f == 3) {
      if (!ReadInt64s(c, wt, &leaf.dims, budget)) return false;
    } else if (f == 4 && depth < 4) {
      std::string_view t;
      if (!c.Expect(wt, kLen, "tuple shape") || !c.Bytes(&t)) return false;
      tuple = true;
      if (!DecodeShape(t, leaves, budget, depth + 1)) return false;
    } else if (!c.Skip(wt)) {
      return false;
    }
  }
  if (!tuple) {
    if (!budget.Leaf()) return false;
    leaves.push_back(std::move(leaf));
  }
  return true;
}

// ReplicaGroup: replica_ids = 1. Counts one group into `in` (its members
// counted, not kept).
bool DecodeReplicaGroup(std::string_view bytes, Instr& in, DecodeBudget& budget) {
  Cursor c(bytes);
  const size_t before = budget.cost->repeated;
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    if (!c.Tag(&f, &wt) || !(f == 1 ? ReadInt64s(c, wt, nullptr, budget) : c.Skip(wt))) {
      return false;
    }
  }
  const auto size = static_cast<int64_t>(budget.cost->repeated - before);
  if (in.groups++ == 0) in.group_size = size;
  in.unequal_groups = in.unequal_groups || size != in.group_size;
  return true;
}

// CollectiveDeviceListProto: replica_groups = 1, iota_replica_group_list = 2
// (IotaReplicaGroupListProto: num_replica_groups = 1,
// num_devices_per_group = 2).
bool DecodeDeviceList(std::string_view bytes, Instr& in, DecodeBudget& budget) {
  Cursor c(bytes);
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    std::string_view b;
    if (!c.Tag(&f, &wt)) return false;
    if (f == 1 || f == 2) {
      if (!c.Expect(wt, kLen, "device list") || !c.Bytes(&b)) return false;
      if (f == 1 && !DecodeReplicaGroup(b, in, budget)) return false;
      if (f == 2) {
        Cursor iota(b);
        while (!iota.Done()) {
          uint32_t g = 0, gwt = 0;
          uint64_t v = 0;
          if (!iota.Tag(&g, &gwt)) return false;
          if (g == 1 || g == 2) {
            if (!iota.Expect(gwt, kVarint, "iota list") || !iota.Varint(&v)) return false;
            (g == 1 ? in.groups : in.group_size) = static_cast<int64_t>(v);
          } else if (!iota.Skip(gwt)) {
            return false;
          }
        }
      }
    } else if (!c.Skip(wt)) {
      return false;
    }
  }
  return true;
}

// DotDimensionNumbers: lhs_contracting 1, rhs_contracting 2, lhs_batch 3,
// rhs_batch 4.
bool DecodeDotDims(std::string_view bytes, DotShape& d, DecodeBudget& budget) {
  Cursor c(bytes);
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    if (!c.Tag(&f, &wt)) return false;
    std::vector<int64_t>* out = f == 1   ? &d.lhs_contracting
                                : f == 2 ? &d.rhs_contracting
                                : f == 3 ? &d.lhs_batch
                                : f == 4 ? &d.rhs_batch
                                         : nullptr;
    if (out != nullptr ? !ReadInt64s(c, wt, out, budget) : !c.Skip(wt)) return false;
  }
  return true;
}

struct Computation {
  int64_t id = 0;
  int64_t root_id = -1;  // -1: not given (the last instruction is the root)
  std::vector<Instr> instrs;
};

Error Corrupt(const Cursor& c, std::string_view where) {
  return Error{ErrorCode::kCorrupt, std::string(where) + ": " + c.error()};
}

// Stops at the first value over `budget` (budget.over then says which).
bool DecodeInstr(std::string_view bytes, Instr& in, DecodeBudget& budget, std::string& error) {
  Cursor c(bytes);
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    bool ok = c.Tag(&f, &wt);
    uint64_t v = 0;
    if (ok) {
      switch (f) {
        case 1:
          ok = c.Expect(wt, kLen, "name") && c.Bytes(&in.name);
          break;
        case 2:
          ok = c.Expect(wt, kLen, "opcode") && c.Bytes(&in.opcode);
          break;
        case 7: {  // OpMetadata: op_name = 2
          std::string_view md;
          ok = c.Expect(wt, kLen, "metadata") && c.Bytes(&md);
          Cursor m(md);
          while (ok && !m.Done()) {
            uint32_t mf = 0, mwt = 0;
            ok = m.Tag(&mf, &mwt) &&
                 (mf == 2 ? m.Expect(mwt, kLen, "op_name") && m.Bytes(&in.op_name) : m.Skip(mwt));
            if (!ok) c.Fail("metadata: " + m.error());
          }
          break;
        }
        case 35:
          ok = c.Expect(wt, kVarint, "id") && c.Varint(&v);
          in.id = static_cast<int64_t>(v);
          break;
        case 3: {
          std::string_view shape;
          ok = c.Expect(wt, kLen, "shape") && c.Bytes(&shape);
          if (ok && !DecodeShape(shape, in.leaves, budget)) {
            in.leaves.clear();
            ok = budget.over.empty();
          }
          break;
        }
        case 49: {
          std::string_view group;
          ok = c.Expect(wt, kLen, "replica_groups") && c.Bytes(&group);
          if (ok && !DecodeReplicaGroup(group, in, budget)) {
            in.groups = -1;
            ok = budget.over.empty();
          }
          break;
        }
        case 87: {
          std::string_view list;
          ok = c.Expect(wt, kLen, "collective_device_list") && c.Bytes(&list);
          if (ok && !DecodeDeviceList(list, in, budget)) {
            in.groups = -1;
            ok = budget.over.empty();
          }
          break;
        }
        case 28:
          ok = c.Expect(wt, kLen, "custom_call_target") && c.Bytes(&in.custom_call_target);
          break;
        case 30: {
          std::string_view dd;
          ok = c.Expect(wt, kLen, "dot_dimension_numbers") && c.Bytes(&dd);
          in.has_dot_dims = ok && DecodeDotDims(dd, in.dot, budget);
          ok = ok && budget.over.empty();
          break;
        }
        case 36:
          ok = ReadInt64s(c, wt, &in.operands, budget);
          break;
        case 43:
          ok = c.Expect(wt, kLen, "backend_config") && c.Bytes(&in.backend_config);
          break;
        case 38:
          ok = ReadInt64s(c, wt, &in.called, budget);
          break;
        default:
          ok = c.Skip(wt);
      }
    }
    if (!ok) {
      error = c.error();
      return false;
    }
  }
  return true;
}

// Bytes of one element of an xla PrimitiveType; 0 for tokens and opaque
// values (they hold no data), -1 for sub-byte and unknown types.
int64_t ElementBytes(int64_t type) {
  // By PrimitiveType number (xla_data.proto).
  static constexpr int8_t kBytes[] = {
      -1, 1, 1, 2, 4, 8, 1, 2, 4, 8,     // INVALID PRED S8 S16 S32 S64 U8 U16 U32 U64
      2, 4, 8, 0, 0, 8, 2, 0, 16, 1,     // F16 F32 F64 TUPLE OPAQUE C64 BF16 TOKEN C128 F8E5M2
      1, -1, -1, 1, 1, 1, -1, -1, 1, 1,  // F8E4M3FN S4 U4 F8E4M3B11FNUZ F8E5M2FNUZ F8E4M3FNUZ
                                         // S2 U2 F8E4M3 F8E3M4
      -1, -1, -1, 1,                     // S1 U1 F4E2M1FN F8E8M0FNU
  };
  return type >= 0 && type < static_cast<int64_t>(std::size(kBytes)) ? kBytes[type] : -1;
}

// Bytes of the arrays of a shape, summed; -1 when one is of unknown size or
// the sum overflows.
int64_t BytesOf(const std::vector<Leaf>& leaves) {
  int64_t total = 0;
  for (const Leaf& l : leaves) {
    int64_t bytes = ElementBytes(l.type);
    if (bytes < 0) return -1;
    for (int64_t d : l.dims) {
      if (!core::CheckedMul(bytes, d)) return -1;
    }
    if (!core::CheckedAdd(total, bytes)) return -1;
  }
  return total;
}

// The collectives whose operands are the data they move (ragged-all-to-all's
// are buffers, offsets and sizes: not counted).
bool IsCollective(std::string_view op) {
  return op == "all-gather" || op == "all-gather-start" || op == "all-reduce" ||
         op == "all-reduce-start" || op == "reduce-scatter" || op == "all-to-all" ||
         op == "collective-permute" || op == "collective-permute-start" ||
         op == "collective-broadcast";
}

// Integers written as JSON strings or numbers (protobuf's JSON form of int64).
// Takes the lookup's result, not an element: a missing key is an error
// code here (converting it to an element would throw).
bool JsonInts(simdjson::simdjson_result<simdjson::dom::element> e, std::vector<int64_t>& out) {
  simdjson::dom::array a;
  if (e.get_array().get(a)) return false;
  for (simdjson::dom::element v : a) {
    int64_t n = 0;
    std::string_view text;
    if (!v.get_int64().get(n)) {
      out.push_back(n);
    } else if (!v.get_string().get(text) &&
               std::from_chars(text.data(), text.data() + text.size(), n).ec == std::errc()) {
      out.push_back(n);
    } else {
      return false;
    }
  }
  return true;
}

// What an instruction of a scheduled sequence launches.
enum class Launches { kNothing, kFusion, kLibrary, kCall, kOpaque };

Launches LaunchesOf(std::string_view op) {
  static const std::unordered_set<std::string_view> kNothing = {
      "parameter",
      "constant",
      "get-tuple-element",
      "tuple",
      "bitcast",
      "copy",
      "copy-start",
      "copy-done",
      "after-all",
      "add-dependency",
      "opt-barrier",
      "partition-id",
      "replica-id",
      "domain",
      "all-reduce-done",
      "all-gather-done",
      "collective-permute-done",
      "send-done",
      "recv-done",
      "async-done",
      "async-update",
      "get-dimension-size",
      "set-dimension-size",
      "reshape",
  };
  if (op == "fusion") return Launches::kFusion;
  if (op == "call") return Launches::kCall;
  if (op == "while" || op == "conditional" || op == "async-start") return Launches::kOpaque;
  if (kNothing.count(op) != 0) return Launches::kNothing;
  return Launches::kLibrary;  // custom-call, collectives and anything else that runs
}

class Decoder {
 public:
  explicit Decoder(const HloLimits& limits) : limits_(limits) {
    budget_.leaves = limits.max_shape_leaves;
    budget_.repeated = limits.max_repeated;
    budget_.cost = &out_.cost;
  }

  Result<HloModuleSchedule> Decode(std::string_view module) {
    Cursor c(module);
    int64_t entry = -1;
    std::vector<std::string_view> computations;
    std::string_view schedule;
    bool has_schedule = false;
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      bool ok = c.Tag(&f, &wt);
      uint64_t v = 0;
      std::string_view bytes;
      if (ok) {
        switch (f) {
          case 1:
            ok = c.Expect(wt, kLen, "HloModuleProto.name") && c.Bytes(&bytes);
            out_.name = std::string(bytes);
            break;
          case 3:
            ok = c.Expect(wt, kLen, "HloModuleProto.computations") && c.Bytes(&bytes);
            computations.push_back(bytes);
            break;
          case 6:
            ok = c.Expect(wt, kVarint, "HloModuleProto.entry_computation_id") && c.Varint(&v);
            entry = static_cast<int64_t>(v);
            break;
          case 7:
            ok = c.Expect(wt, kLen, "HloModuleProto.schedule") && c.Bytes(&schedule);
            has_schedule = true;
            break;
          default:
            ok = c.Skip(wt);
        }
      }
      if (!ok) return tl::unexpected(Corrupt(c, "HLO module"));
    }
    for (std::string_view bytes : computations) {
      if (auto s = DecodeComputation(bytes); !s) return tl::unexpected(s.error());
      if (!too_complex_.empty()) return TooComplex();
    }
    if (auto s = DecodeSchedule(schedule); !s) return tl::unexpected(s.error());
    if (!too_complex_.empty()) return TooComplex();
    if (entry < 0 || comps_.count(entry) == 0) {
      return MakeError(ErrorCode::kUnsupported,
                       "HLO module '" + out_.name + "' has no entry computation");
    }
    if (!has_schedule || sequences_.count(entry) == 0) {
      return MakeError(ErrorCode::kUnsupported,
                       "HLO module '" + out_.name + "' has no schedule (not an optimised module)");
    }
    on_stack_.insert(entry);
    Expand(entry, 0);
    if (!too_complex_.empty()) return TooComplex();
    IndexCollectives();
    return std::move(out_);
  }

 private:
  Status DecodeComputation(std::string_view bytes) {
    Cursor c(bytes);
    Computation comp;
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      bool ok = c.Tag(&f, &wt);
      uint64_t v = 0;
      if (ok && f == 2) {
        std::string_view ib;
        ok = c.Expect(wt, kLen, "instruction") && c.Bytes(&ib);
        if (ok) {
          Instr in;
          std::string error;
          if (!DecodeInstr(ib, in, budget_, error)) {
            if (!budget_.over.empty()) {
              Fail(budget_.over);
              return {};
            }
            return MakeError(ErrorCode::kCorrupt, "HLO instruction: " + error);
          }
          if (++out_.cost.instructions > limits_.max_instructions) {
            Fail("more than " + std::to_string(limits_.max_instructions) + " instructions");
            return {};
          }
          comp.instrs.push_back(std::move(in));
        }
      } else if (ok && f == 5) {
        ok = c.Expect(wt, kVarint, "computation id") && c.Varint(&v);
        comp.id = static_cast<int64_t>(v);
      } else if (ok && f == 6) {
        ok = c.Expect(wt, kVarint, "root id") && c.Varint(&v);
        comp.root_id = static_cast<int64_t>(v);
      } else if (ok) {
        ok = c.Skip(wt);
      }
      if (!ok) return tl::unexpected(Corrupt(c, "HLO computation"));
    }
    const int64_t id = comp.id;
    auto [at, added] = comps_.try_emplace(id, std::move(comp));
    if (!added) {
      return MakeError(ErrorCode::kCorrupt, "HLO module '" + out_.name + "': computation id " +
                                                std::to_string(id) + " given twice");
    }
    ++out_.cost.computations;
    for (size_t i = 0; i < at->second.instrs.size(); ++i) {
      instr_at_[at->second.instrs[i].id] = {id, i};
    }
    return {};
  }

  Status DecodeSchedule(std::string_view bytes) {
    Cursor c(bytes);
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      std::string_view entry;
      bool ok = c.Tag(&f, &wt) &&
                (f == 1 ? c.Expect(wt, kLen, "schedule entry") && c.Bytes(&entry) : c.Skip(wt));
      if (!ok) return tl::unexpected(Corrupt(c, "HLO schedule"));
      if (f != 1) continue;
      Cursor e(entry);
      int64_t key = 0;
      std::vector<int64_t> ids;
      while (!e.Done()) {
        uint32_t ef = 0, ewt = 0;
        uint64_t v = 0;
        std::string_view seq;
        ok = e.Tag(&ef, &ewt);
        if (ok && ef == 1) {
          ok = e.Expect(ewt, kVarint, "schedule key") && e.Varint(&v);
          key = static_cast<int64_t>(v);
        } else if (ok && ef == 2) {
          ok = e.Expect(ewt, kLen, "instruction sequence") && e.Bytes(&seq);
          Cursor s(seq);
          while (ok && !s.Done()) {
            uint32_t sf = 0, swt = 0;
            ok = s.Tag(&sf, &swt) && (sf == 1 ? ReadInt64s(s, swt, &ids, budget_) : s.Skip(swt));
            if (!ok) e.Fail(s.error());
          }
        } else if (ok) {
          ok = e.Skip(ewt);
        }
        if (!ok && !budget_.over.empty()) {
          Fail(budget_.over);
          return {};
        }
        if (!ok) return tl::unexpected(Corrupt(e, "HLO schedule entry"));
      }
      sequences_[key] = std::move(ids);
    }
    return {};
  }

  const Instr* Find(int64_t id) const {
    auto it = instr_at_.find(id);
    if (it == instr_at_.end()) return nullptr;
    return &comps_.at(it->second.first).instrs[it->second.second];
  }

  // What a fusion computes through one called computation, with the
  // computations its instructions call in turn: the scope its op_names share
  // (parameters aside; none when no instruction has one) and its dots, each
  // with how often one call runs it. Each computation is summarised once.
  struct Dots {
    std::vector<std::pair<const Instr*, int64_t>> counts;  // dot -> runs per call
    bool any = false;
    bool unusable = false;  // over kMaxFusionDots distinct dots, or a count overflow
    // Adds `n` runs of `dot`; counts stay within kMaxFusionDots entries.
    void Add(const Instr* dot, int64_t n) {
      any = true;
      if (unusable) return;
      for (auto& [d, c] : counts) {
        if (d == dot) {
          unusable = !core::CheckedAdd(c, n);
          return;
        }
      }
      if (counts.size() >= kMaxFusionDots) {
        unusable = true;
        return;
      }
      counts.emplace_back(dot, n);
    }
    void Merge(const Dots& o) {
      if (!o.any) return;
      any = true;
      unusable = unusable || o.unusable;
      for (const auto& [d, c] : o.counts) Add(d, c);
    }
  };
  struct Fused {
    enum class State : uint8_t { kNew, kOpen, kDone } state = State::kNew;
    std::optional<std::string> scope;
    Dots dots;
  };

  // Merges the summaries of `called`; false once the module is too complex.
  bool MergeCalled(const std::vector<int64_t>& called, int depth, std::vector<std::string>& scopes,
                   Dots& dots) {
    for (int64_t cid : called) {
      const Fused* f = Summarise(cid, depth);
      if (!too_complex_.empty()) return false;
      if (f == nullptr) continue;
      if (f->scope) scopes.push_back(*f->scope);
      dots.Merge(f->dots);
    }
    return true;
  }

  const Fused* Summarise(int64_t cid, int depth) {
    auto it = comps_.find(cid);
    if (it == comps_.end()) return nullptr;
    Fused& f = fused_[cid];
    if (f.state == Fused::State::kDone) return &f;
    if (f.state == Fused::State::kOpen) {
      Fail("computation " + std::to_string(cid) + " calls itself");
      return nullptr;
    }
    if (!Deeper(depth)) return nullptr;
    f.state = Fused::State::kOpen;  // f stays valid: unordered_map nodes do not move
    ++out_.cost.fused_computations;
    std::vector<std::string> scopes;
    Dots dots;
    for (const Instr& x : it->second.instrs) {
      if (x.opcode == "parameter") continue;
      if (!x.op_name.empty()) scopes.emplace_back(x.op_name);
      if (x.opcode == "dot") dots.Add(&x, 1);
      if (!MergeCalled(x.called, depth + 1, scopes, dots)) return nullptr;
    }
    f.state = Fused::State::kDone;
    if (!scopes.empty()) f.scope = CommonScope({scopes.begin(), scopes.end()});
    f.dots = std::move(dots);
    return &f;
  }

  // Counts one more level of nesting; false (too complex) past the limit.
  bool Deeper(int depth) {
    out_.cost.depth = std::max(out_.cost.depth, depth);
    if (depth <= limits_.max_depth) return true;
    Fail("computations nested more than " + std::to_string(limits_.max_depth) + " deep");
    return false;
  }

  void Fail(std::string why) {
    if (too_complex_.empty()) too_complex_ = std::move(why);
  }

  HloModuleSchedule TooComplex() {
    HloModuleSchedule out;
    out.name = std::move(out_.name);
    out.cost = out_.cost;
    out.too_complex = "too_complex: " + too_complex_;
    return out;
  }

  const Dims* DimsOf(int64_t id) const {
    const Instr* in = Find(id);
    return in == nullptr ? nullptr : &DimsOfShape(*in);
  }

  // A dot's shapes: its dimension numbers and its operands' shapes.
  static void AddDot(HloLaunch& out, DotShape shape, const Dims* lhs, const Dims* rhs,
                     int64_t count) {
    out.flop_kind = HloLaunch::Flops::kMatmul;
    if (lhs == nullptr || rhs == nullptr) {
      out.shapes_unusable = true;
      return;
    }
    shape.lhs = *lhs;
    shape.rhs = *rhs;
    out.dots.push_back({std::move(shape), count});
  }

  void AddDotOf(HloLaunch& out, const Instr& x, int64_t count) const {
    if (!x.has_dot_dims || x.operands.size() < 2) {
      out.flop_kind = HloLaunch::Flops::kMatmul;
      out.shapes_unusable = true;
      return;
    }
    AddDot(out, x.dot, DimsOf(x.operands[0]), DimsOf(x.operands[1]), count);
  }

  // cuBLAS GEMMs and cuDNN fused attention, from their backend configs.
  void LibraryShapes(const Instr& in, HloLaunch& out) {
    if (in.opcode == "dot") {
      AddDotOf(out, in, 1);
      return;
    }
    const bool gemm = in.custom_call_target.starts_with("__cublas$");
    const bool fmha = in.custom_call_target.starts_with("__cudnn$fmha");
    if (!gemm && !fmha) return;
    out.flop_kind = gemm ? HloLaunch::Flops::kMatmul : HloLaunch::Flops::kAttention;
    simdjson::dom::element config;
    if (json_.parse(simdjson::padded_string(in.backend_config)).get(config)) {
      out.shapes_unusable = true;
      return;
    }
    if (gemm) {
      DotShape d;
      simdjson::dom::element dn;
      if (config["gemm_backend_config"]["dot_dimension_numbers"].get(dn) ||
          !JsonInts(dn["lhs_contracting_dimensions"], d.lhs_contracting) ||
          !JsonInts(dn["rhs_contracting_dimensions"], d.rhs_contracting) ||
          !JsonInts(dn["lhs_batch_dimensions"], d.lhs_batch) ||
          !JsonInts(dn["rhs_batch_dimensions"], d.rhs_batch) || in.operands.size() < 2) {
        out.shapes_unusable = true;
        return;
      }
      AddDot(out, std::move(d), DimsOf(in.operands[0]), DimsOf(in.operands[1]), 1);
      return;
    }
    simdjson::dom::element fc;
    std::vector<int64_t> s;  // [B, H, Sq, Sk]
    std::string_view mask;
    if (config["cudnn_fmha_backend_config"].get(fc) ||
        !JsonInts(fc["intermediate_tensor_shape"]["dimensions"], s) || s.size() != 4 ||
        in.operands.size() < 3) {
      out.shapes_unusable = true;
      return;
    }
    const Dims *q = DimsOf(in.operands[0]), *v = DimsOf(in.operands[2]);
    if (!q || !v || q->empty() || v->empty()) {
      out.shapes_unusable = true;
      return;
    }
    AttentionShape a{s[0], s[1], s[2], s[3], q->back(), v->back()};
    a.causal = !fc["mask_type"].get(mask) && mask.find("CAUSAL") != std::string_view::npos;
    a.backward = in.custom_call_target.find("Backward") != std::string_view::npos;
    out.attention = a;
  }

  // Bytes of an instruction's result (-1: unknown).
  int64_t BytesOfId(int64_t id) const {
    const Instr* x = Find(id);
    return x == nullptr ? -1 : BytesOf(x->leaves);
  }

  // A library call's operands and result, each once; a cuBLAS/cuDNN
  // custom-call's result tuple ends with its workspace (s8 or u8), left out.
  // Collectives move their bytes over links (HloCollective): none here.
  std::optional<int64_t> LibraryBytes(const Instr& in) const {
    if (IsCollective(in.opcode) || in.opcode == "send" || in.opcode == "recv" ||
        in.opcode.ends_with("-start") || in.opcode.ends_with("-done")) {
      return std::nullopt;
    }
    int64_t total = 0;
    for (int64_t id : in.operands) {
      const int64_t b = BytesOfId(id);
      if (b < 0 || !core::CheckedAdd(total, b)) return std::nullopt;
    }
    std::vector<Leaf> result = in.leaves;
    constexpr int64_t kS8 = 2, kU8 = 6;  // cuBLAS's workspace is s8, cuDNN's u8
    const bool library = in.custom_call_target.starts_with("__cublas$") ||
                         in.custom_call_target.starts_with("__cudnn$");
    if (library && result.size() >= 2 && (result.back().type == kS8 || result.back().type == kU8)) {
      result.pop_back();
    }
    const int64_t out = BytesOf(result);
    if (out < 0 || !core::CheckedAdd(total, out)) return std::nullopt;
    return total;
  }

  // One execution of a fusion over computation `cid`, as XLA's cost
  // analysis counts a fusion's bytes accessed: each parameter read once,
  // except one read only through slices, dynamic-slices and gathers (what
  // they read: their results) or as the buffer an in-place
  // dynamic-update-slice or scatter writes into (what it touches: the
  // updates); the result written, an in-place update's being its updates.
  // Bitcasts pass through (no memory is read). Each computation once; the
  // work is its instructions and operand ids.
  std::optional<int64_t> FusionBytes(int64_t cid) {
    auto [memo, added] = fusion_bytes_.try_emplace(cid);
    if (!added) return memo->second;
    auto it = comps_.find(cid);
    if (it == comps_.end() || it->second.instrs.empty()) return std::nullopt;
    const Computation& comp = it->second;
    std::unordered_map<int64_t, std::vector<const Instr*>> users;
    for (const Instr& x : comp.instrs) {
      for (int64_t op : x.operands) users[op].push_back(&x);
    }
    // The updates an in-place scatter writes for its buffer operand `id`
    // (operands: N buffers, the indices, N updates); -1 when not one.
    auto scatter_updates = [&](const Instr& u, int64_t id) -> int64_t {
      const size_t n = (u.operands.size() - 1) / 2;
      if (u.operands.size() < 3 || u.operands.size() != 2 * n + 1) return -1;
      for (size_t k = 0; k < n; ++k) {
        if (u.operands[k] == id) return BytesOfId(u.operands[n + 1 + k]);
      }
      return -1;
    };
    int64_t total = 0;
    auto add = [&](int64_t b) { return b >= 0 && core::CheckedAdd(total, b); };
    std::vector<int64_t> stack;
    for (const Instr& p : comp.instrs) {
      if (p.opcode != "parameter") continue;
      int64_t touched = 0;
      bool whole = false;
      stack.assign(1, p.id);
      while (!stack.empty() && !whole) {
        const int64_t id = stack.back();
        stack.pop_back();
        auto u = users.find(id);
        if (u == users.end()) continue;
        for (const Instr* x : u->second) {
          int64_t b = -1;
          const bool first = !x->operands.empty() && x->operands[0] == id;
          if (x->opcode == "bitcast" && x->operands.size() == 1) {
            stack.push_back(x->id);
            continue;
          }
          if (x->opcode == "slice" ||
              (first && (x->opcode == "dynamic-slice" || x->opcode == "gather"))) {
            b = BytesOf(x->leaves);
          } else if (first && x->opcode == "dynamic-update-slice" && x->operands.size() >= 2) {
            b = BytesOfId(x->operands[1]);
          } else if (x->opcode == "scatter") {
            b = scatter_updates(*x, id);
          }
          if (b < 0 || !core::CheckedAdd(touched, b)) {
            whole = true;
            break;
          }
        }
      }
      if (!add(whole ? BytesOf(p.leaves) : touched)) return memo->second = std::nullopt;
    }
    // The result: the root, or each element of a root tuple.
    const Instr* root = comp.root_id >= 0 ? Find(comp.root_id) : &comp.instrs.back();
    if (root == nullptr) return memo->second = std::nullopt;
    std::vector<const Instr*> outs{root};
    if (root->opcode == "tuple") {
      outs.clear();
      for (int64_t id : root->operands) outs.push_back(Find(id));
    }
    for (const Instr* o : outs) {
      if (o == nullptr) return memo->second = std::nullopt;
      const Instr* w = o;  // what writes it, through bitcasts (bounded by the depth limit)
      for (int hop = 0; w != nullptr && w->opcode == "bitcast" && !w->operands.empty() &&
                        hop < limits_.max_depth;
           ++hop) {
        w = Find(w->operands[0]);
      }
      int64_t b = BytesOf(o->leaves);
      if (w != nullptr && w->opcode == "dynamic-update-slice" && w->operands.size() >= 2) {
        b = BytesOfId(w->operands[1]);
      } else if (w != nullptr && w->opcode == "scatter" && !w->operands.empty()) {
        b = scatter_updates(*w, w->operands[0]);
        // A variadic scatter writes every updates operand.
        for (size_t k = 1; b >= 0 && k < (w->operands.size() - 1) / 2; ++k) {
          const int64_t more = scatter_updates(*w, w->operands[k]);
          if (more < 0 || !core::CheckedAdd(b, more)) b = -1;
        }
      }
      if (!add(b)) return memo->second = std::nullopt;
    }
    return memo->second = total;
  }

  // What a collective instruction moves (HloCollective); for an
  // async-start, the collective it wraps.
  std::optional<HloCollective> CollectiveOf(const Instr& in) const {
    const Instr* c = &in;
    if (in.opcode == "async-start") {
      c = nullptr;
      for (int64_t cid : in.called) {
        auto it = comps_.find(cid);
        if (it == comps_.end()) continue;
        for (const Instr& x : it->second.instrs) {
          if (IsCollective(x.opcode)) c = &x;
        }
      }
      if (c == nullptr) return std::nullopt;
    } else if (!IsCollective(in.opcode)) {
      return std::nullopt;
    }
    HloCollective out;
    int64_t in_bytes = 0;
    for (int64_t id : c->operands) {
      const Instr* op = Find(id);
      const int64_t b = op == nullptr ? -1 : BytesOf(op->leaves);
      if (b < 0 || !core::CheckedAdd(in_bytes, b)) {
        in_bytes = -1;
        break;
      }
    }
    if (!c->operands.empty()) out.in_bytes = in_bytes;
    int64_t result = BytesOf(c->leaves);
    // An all-gather-start's tuple holds its operands before its outputs.
    if (result >= 0 && c->opcode == "all-gather-start") {
      result = out.in_bytes >= 0 && result >= out.in_bytes ? result - out.in_bytes : -1;
    }
    out.out_bytes = result;
    if (c->groups > 0 && c->group_size > 0 && !c->unequal_groups) {
      out.groups = c->groups;
      out.group_size = c->group_size;
    }
    return out;
  }

  void IndexCollectives() {
    for (const auto& [id, comp] : comps_) {
      for (const Instr& in : comp.instrs) {
        if (in.opcode != "async-start" && !IsCollective(in.opcode)) continue;
        if (auto c = CollectiveOf(in)) out_.collectives.emplace(std::string(in.name), *c);
      }
    }
  }

  uint32_t ScopeIndex(std::string scope) {
    auto [it, added] = scope_ids_.try_emplace(scope, static_cast<uint32_t>(out_.scopes.size()));
    if (added) out_.scopes.push_back(std::move(scope));
    return it->second;
  }

  // The launch of one instruction (kind, kernel base, scope, FLOPs), derived
  // once however many times its computation is inlined; nullptr once the
  // module is too complex.
  const HloLaunch* LaunchOf(const Instr& in, HloLaunch::Kind kind, int depth) {
    auto [it, added] = launch_of_.try_emplace(&in);
    HloLaunch& launch = it->second;
    if (!added) return &launch;
    ++out_.cost.derived;
    launch.kind = kind;
    if (kind == HloLaunch::Kind::kFusion) {
      launch.kernel_base = KernelBaseOfInstruction(in.name);
      // A fusion's scope is what its instructions share, as XLA names its
      // kernels' scope when they run outside a graph.
      std::vector<std::string> scopes;
      Dots dots;
      if (!MergeCalled(in.called, depth + 1, scopes, dots)) return nullptr;
      launch.scope = ScopeIndex(scopes.empty() ? std::string(in.op_name)
                                               : CommonScope({scopes.begin(), scopes.end()}));
      if (dots.any) {
        launch.flop_kind = HloLaunch::Flops::kMatmul;
        launch.shapes_unusable = dots.unusable;
        for (const auto& [dot, count] : dots.counts) AddDotOf(launch, *dot, count);
      }
      if (in.called.size() == 1) launch.bytes = FusionBytes(in.called[0]);
      return &launch;
    }
    if (kind == HloLaunch::Kind::kLibrary) {
      LibraryShapes(in, launch);
      launch.bytes = LibraryBytes(in);
    }
    launch.scope = ScopeIndex(std::string(in.op_name));
    return &launch;
  }

  void Expand(int64_t computation, int depth) {
    auto seq = sequences_.find(computation);
    if (seq == sequences_.end()) return;
    for (int64_t id : seq->second) {
      if (++out_.cost.expanded > limits_.max_expanded) {
        Fail("more than " + std::to_string(limits_.max_expanded) +
             " schedule entries with calls inlined");
        return;
      }
      const Instr* in = Find(id);
      if (in == nullptr) continue;
      HloLaunch::Kind kind = HloLaunch::Kind::kOpaque;
      switch (LaunchesOf(in->opcode)) {
        case Launches::kNothing:
          continue;
        case Launches::kCall:
          if (in->called.size() == 1 && sequences_.count(in->called[0]) != 0) {
            const int64_t callee = in->called[0];
            if (!on_stack_.insert(callee).second) {
              Fail("computation " + std::to_string(callee) + " calls itself");
              return;
            }
            if (!Deeper(depth + 1)) return;
            Expand(callee, depth + 1);
            on_stack_.erase(callee);
            if (!too_complex_.empty()) return;
            continue;
          }
          break;  // a call without a schedule: opaque
        case Launches::kOpaque:
          break;
        case Launches::kFusion:
          kind = HloLaunch::Kind::kFusion;
          break;
        case Launches::kLibrary:
          kind = HloLaunch::Kind::kLibrary;
          break;
      }
      const HloLaunch* launch = LaunchOf(*in, kind, depth);
      if (launch == nullptr) return;
      out_.launches.push_back(*launch);
    }
  }

  HloModuleSchedule out_;
  std::unordered_map<int64_t, Computation> comps_;
  std::unordered_map<int64_t, std::pair<int64_t, size_t>> instr_at_;  // id -> (computation, index)
  std::unordered_map<int64_t, std::vector<int64_t>> sequences_;
  std::unordered_map<std::string, uint32_t> scope_ids_;
  std::unordered_map<int64_t, Fused> fused_;  // by computation id
  std::unordered_map<const Instr*, HloLaunch> launch_of_;
  std::unordered_map<int64_t, std::optional<int64_t>> fusion_bytes_;  // by computation id
  std::unordered_set<int64_t> on_stack_;                              // calls being inlined
  const HloLimits& limits_;
  DecodeBudget budget_;         // shape leaves and repeated values left
  simdjson::dom::parser json_;  // backend configs
  std::string too_complex_;     // why, once a limit is hit: every walk stops
};

}  // namespace

const HloModuleSchedule* HloIndex::Find(std::string_view module) const {
  auto it = modules.find(module);
  return it == modules.end() ? nullptr : &it->second;
}

Result<HloModuleSchedule> DecodeHloProto(std::string_view bytes, bool bare_module,
                                         const HloLimits& limits) {
  std::string_view module = bytes;
  if (!bare_module) {
    Cursor c(bytes);
    module = {};
    while (!c.Done()) {
      uint32_t f = 0, wt = 0;
      bool ok =
          c.Tag(&f, &wt) &&
          (f == 1 ? c.Expect(wt, kLen, "HloProto.hlo_module") && c.Bytes(&module) : c.Skip(wt));
      if (!ok) return tl::unexpected(Corrupt(c, "HloProto"));
    }
  }
  return Decoder(limits).Decode(module);
}

std::string_view KernelBaseOfKernel(std::string_view kernel) {
  size_t i = kernel.size();
  while (i > 0 && kernel[i - 1] >= '0' && kernel[i - 1] <= '9') --i;
  if (i < kernel.size() && i > 1 && kernel[i - 1] == '_') return kernel.substr(0, i - 1);
  return kernel;
}

std::string KernelBaseOfInstruction(std::string_view instruction) {
  size_t i = instruction.size();
  while (i > 0 && instruction[i - 1] >= '0' && instruction[i - 1] <= '9') --i;
  if (i < instruction.size() && i > 1 && instruction[i - 1] == '.')
    instruction.remove_suffix(instruction.size() - i + 1);
  std::string out(instruction);
  std::replace(out.begin(), out.end(), '.', '_');
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::vector<std::string_view> ScopeComponents(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && depth > 0) --depth;
    if (s[i] == '/' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

std::string CommonScope(const std::vector<std::string_view>& paths) {
  if (paths.empty()) return "";
  std::vector<std::string_view> common = ScopeComponents(paths[0]);
  for (size_t p = 1; p < paths.size() && !common.empty(); ++p) {
    const std::vector<std::string_view> parts = ScopeComponents(paths[p]);
    size_t n = 0;
    while (n < common.size() && n < parts.size() && common[n] == parts[n]) ++n;
    common.resize(n);
  }
  std::string out;
  for (size_t i = 0; i < common.size(); ++i) {
    if (i > 0) out += '/';
    out += common[i];
  }
  return out;
}

}  // namespace profwatch::parse
