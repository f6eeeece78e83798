#include "parse/hlo_schedule.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "parse/proto_wire.h"

namespace profwatch::parse {
namespace {

using wire::Cursor;
using wire::kLen;
using wire::kVarint;

// A repeated int64: packed (one length-delimited field) or one varint each.
bool ReadInt64s(Cursor& c, uint32_t wire_type, std::vector<int64_t>& out) {
  uint64_t v = 0;
  if (wire_type == kVarint) {
    if (!c.Varint(&v)) return false;
    out.push_back(static_cast<int64_t>(v));
    return true;
  }
  std::string_view packed;
  if (!c.Expect(wire_type, kLen, "repeated int64") || !c.Bytes(&packed)) return false;
  Cursor p(packed);
  while (!p.Done()) {
    if (!p.Varint(&v)) return c.Fail(p.error());
    out.push_back(static_cast<int64_t>(v));
  }
  return true;
}

struct DotDims {
  std::vector<int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};

struct Instr {
  std::string_view name, opcode, op_name, custom_call_target, backend_config;
  int64_t id = 0;
  std::vector<int64_t> called, operands;
  std::vector<int64_t> dims;  // array shape, or a tuple's first element
  bool has_dot_dims = false;
  DotDims dot;
};

// ShapeProto: dimensions = 3 (int64s), tuple_shapes = 4 (the first is the
// result of a custom-call whose other elements are workspaces).
bool DecodeShape(std::string_view bytes, std::vector<int64_t>& dims, int depth = 0) {
  Cursor c(bytes);
  bool tuple_seen = false;
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    if (!c.Tag(&f, &wt)) return false;
    if (f == 3) {
      if (!ReadInt64s(c, wt, dims)) return false;
    } else if (f == 4 && !tuple_seen && depth < 4) {
      std::string_view t;
      if (!c.Expect(wt, kLen, "tuple shape") || !c.Bytes(&t)) return false;
      tuple_seen = true;
      if (!DecodeShape(t, dims, depth + 1)) return false;
    } else if (!c.Skip(wt)) {
      return false;
    }
  }
  return true;
}

// DotDimensionNumbers: lhs_contracting 1, rhs_contracting 2, lhs_batch 3,
// rhs_batch 4.
bool DecodeDotDims(std::string_view bytes, DotDims& d) {
  Cursor c(bytes);
  while (!c.Done()) {
    uint32_t f = 0, wt = 0;
    if (!c.Tag(&f, &wt)) return false;
    std::vector<int64_t>* out = f == 1   ? &d.lhs_contracting
                                : f == 2 ? &d.rhs_contracting
                                : f == 3 ? &d.lhs_batch
                                : f == 4 ? &d.rhs_batch
                                         : nullptr;
    if (out != nullptr ? !ReadInt64s(c, wt, *out) : !c.Skip(wt)) return false;
  }
  return true;
}

struct Computation {
  int64_t id = 0;
  std::vector<Instr> instrs;
};

Error Corrupt(const Cursor& c, std::string_view where) {
  return Error{ErrorCode::kCorrupt, std::string(where) + ": " + c.error()};
}

bool DecodeInstr(std::string_view bytes, Instr& in, std::string& error) {
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
          if (ok && !DecodeShape(shape, in.dims)) in.dims.clear();
          break;
        }
        case 28:
          ok = c.Expect(wt, kLen, "custom_call_target") && c.Bytes(&in.custom_call_target);
          break;
        case 30: {
          std::string_view dd;
          ok = c.Expect(wt, kLen, "dot_dimension_numbers") && c.Bytes(&dd);
          in.has_dot_dims = ok && DecodeDotDims(dd, in.dot);
          break;
        }
        case 36:
          ok = ReadInt64s(c, wt, in.operands);
          break;
        case 43:
          ok = c.Expect(wt, kLen, "backend_config") && c.Bytes(&in.backend_config);
          break;
        case 38:
          ok = ReadInt64s(c, wt, in.called);
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

bool Mul(int64_t& acc, int64_t v) { return v >= 0 && !__builtin_mul_overflow(acc, v, &acc); }

bool Indices(const std::vector<int64_t>& idx, size_t rank) {
  for (int64_t i : idx) {
    if (i < 0 || static_cast<size_t>(i) >= rank) return false;
  }
  return true;
}

// 2 * prod(lhs) * prod(rhs dims neither contracted nor batch) = 2*B*M*K*N;
// -1 when the dimension numbers do not fit the shapes.
int64_t DotFlops(const std::vector<int64_t>& lhs, const std::vector<int64_t>& rhs,
                 const DotDims& d) {
  if (lhs.empty() || rhs.empty() || !Indices(d.lhs_contracting, lhs.size()) ||
      !Indices(d.lhs_batch, lhs.size()) || !Indices(d.rhs_contracting, rhs.size()) ||
      !Indices(d.rhs_batch, rhs.size()) || d.lhs_contracting.size() != d.rhs_contracting.size()) {
    return -1;
  }
  int64_t f = 2;
  for (int64_t v : lhs) {
    if (!Mul(f, v)) return -1;
  }
  for (size_t i = 0; i < rhs.size(); ++i) {
    const auto in = [&](const std::vector<int64_t>& v) {
      return std::find(v.begin(), v.end(), static_cast<int64_t>(i)) != v.end();
    };
    if (!in(d.rhs_contracting) && !in(d.rhs_batch) && !Mul(f, rhs[i])) return -1;
  }
  return f;
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
  explicit Decoder(const HloLimits& limits) : limits_(limits) {}

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
          if (!DecodeInstr(ib, in, error)) {
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
            ok = s.Tag(&sf, &swt) && (sf == 1 ? ReadInt64s(s, swt, ids) : s.Skip(swt));
            if (!ok) e.Fail(s.error());
          }
        } else if (ok) {
          ok = e.Skip(ewt);
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
  // (parameters aside; none when no instruction has one) and the FLOPs of its
  // dots, counted once per call. Each computation is summarised once.
  struct Fused {
    enum class State : uint8_t { kNew, kOpen, kDone } state = State::kNew;
    std::optional<std::string> scope;
    bool dots = false;
    int64_t flops = 0;  // -1: a dot with unusable shapes, or an overflow
  };

  static void AddTo(bool& dots, int64_t& flops, int64_t f) {
    dots = true;
    if (f < 0 || flops < 0 || __builtin_add_overflow(flops, f, &flops)) flops = -1;
  }

  // Merges the summaries of `called`; false once the module is too complex.
  bool MergeCalled(const std::vector<int64_t>& called, int depth, std::vector<std::string>& scopes,
                   bool& dots, int64_t& flops) {
    for (int64_t cid : called) {
      const Fused* f = Summarise(cid, depth);
      if (!too_complex_.empty()) return false;
      if (f == nullptr) continue;
      if (f->scope) scopes.push_back(*f->scope);
      if (f->dots) AddTo(dots, flops, f->flops);
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
    bool dots = false;
    int64_t flops = 0;
    for (const Instr& x : it->second.instrs) {
      if (x.opcode == "parameter") continue;
      if (!x.op_name.empty()) scopes.emplace_back(x.op_name);
      if (x.opcode == "dot") AddTo(dots, flops, DotOf(x));
      if (!MergeCalled(x.called, depth + 1, scopes, dots, flops)) return nullptr;
    }
    f.state = Fused::State::kDone;
    if (!scopes.empty()) f.scope = CommonScope({scopes.begin(), scopes.end()});
    f.dots = dots;
    f.flops = flops;
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

  const std::vector<int64_t>* DimsOf(int64_t id) const {
    const Instr* in = Find(id);
    return in == nullptr ? nullptr : &in->dims;
  }

  int64_t DotOf(const Instr& x) const {
    if (!x.has_dot_dims || x.operands.size() < 2) return -1;
    const auto *lhs = DimsOf(x.operands[0]), *rhs = DimsOf(x.operands[1]);
    return lhs && rhs ? DotFlops(*lhs, *rhs, x.dot) : -1;
  }

  static void AddFlops(HloLaunch& out, HloLaunch::Flops kind, int64_t flops) {
    if (out.flop_kind == HloLaunch::Flops::kNone) out.flop_kind = kind;
    if (flops < 0 || out.flops < 0) {
      out.flops = -1;
    } else if (__builtin_add_overflow(out.flops, flops, &out.flops)) {
      out.flops = -1;
    }
  }

  // cuBLAS GEMMs and cuDNN fused attention, from their backend configs.
  void LibraryFlops(const Instr& in, HloLaunch& out) {
    if (in.opcode == "dot") {
      AddFlops(out, HloLaunch::Flops::kMatmul, DotOf(in));
      return;
    }
    const bool gemm = in.custom_call_target.starts_with("__cublas$");
    const bool fmha = in.custom_call_target.starts_with("__cudnn$fmha");
    if (!gemm && !fmha) return;
    const auto kind = gemm ? HloLaunch::Flops::kMatmul : HloLaunch::Flops::kAttention;
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element config;
    if (parser.parse(simdjson::padded_string(in.backend_config)).get(config)) {
      AddFlops(out, kind, -1);
      return;
    }
    if (gemm) {
      DotDims d;
      simdjson::dom::element dn;
      if (config["gemm_backend_config"]["dot_dimension_numbers"].get(dn) ||
          !JsonInts(dn["lhs_contracting_dimensions"], d.lhs_contracting) ||
          !JsonInts(dn["rhs_contracting_dimensions"], d.rhs_contracting) ||
          !JsonInts(dn["lhs_batch_dimensions"], d.lhs_batch) ||
          !JsonInts(dn["rhs_batch_dimensions"], d.rhs_batch) || in.operands.size() < 2) {
        AddFlops(out, kind, -1);
        return;
      }
      const auto *lhs = DimsOf(in.operands[0]), *rhs = DimsOf(in.operands[1]);
      AddFlops(out, kind, lhs && rhs ? DotFlops(*lhs, *rhs, d) : -1);
      return;
    }
    simdjson::dom::element fc;
    std::vector<int64_t> s;  // [B, H, Sq, Sk]
    std::string_view mask;
    if (config["cudnn_fmha_backend_config"].get(fc) ||
        !JsonInts(fc["intermediate_tensor_shape"]["dimensions"], s) || s.size() != 4 ||
        in.operands.size() < 3) {
      AddFlops(out, kind, -1);
      return;
    }
    const auto *q = DimsOf(in.operands[0]), *v = DimsOf(in.operands[2]);
    int64_t f = 2, d = 0;
    if (!q || !v || q->empty() || v->empty() || __builtin_add_overflow(q->back(), v->back(), &d) ||
        !(Mul(f, s[0]) && Mul(f, s[1]) && Mul(f, s[2]) && Mul(f, s[3]) && Mul(f, d))) {
      AddFlops(out, kind, -1);
      return;
    }
    if (in.custom_call_target.find("Backward") != std::string_view::npos) {
      if (!Mul(f, 5)) {
        AddFlops(out, kind, -1);
        return;
      }
      f /= 2;  // 2.5x the forward
    }
    if (!fc["mask_type"].get(mask) && mask.find("CAUSAL") != std::string_view::npos) f /= 2;
    AddFlops(out, kind, f);
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
      bool dots = false;
      int64_t flops = 0;
      if (!MergeCalled(in.called, depth + 1, scopes, dots, flops)) return nullptr;
      launch.scope = ScopeIndex(scopes.empty() ? std::string(in.op_name)
                                               : CommonScope({scopes.begin(), scopes.end()}));
      if (dots) AddFlops(launch, HloLaunch::Flops::kMatmul, flops);
      return &launch;
    }
    if (kind == HloLaunch::Kind::kLibrary) LibraryFlops(in, launch);
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
  std::unordered_set<int64_t> on_stack_;  // calls being inlined
  const HloLimits& limits_;
  std::string too_complex_;  // why, once a limit is hit: every walk stops
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
