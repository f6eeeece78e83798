#include "aggregate/flops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/checked.h"

namespace profwatch::aggregate {

using core::CheckedMul;
using parse::Dims;

std::optional<int64_t> MatmulFlops(const MatmulShape& s) {
  int64_t f = 2;
  if (!(CheckedMul(f, s.batch) && CheckedMul(f, s.m) && CheckedMul(f, s.n) && CheckedMul(f, s.k))) {
    return std::nullopt;
  }
  return f;
}

std::optional<int64_t> DotFlops(const parse::DotShape& d) {
  if (d.lhs.empty() || d.rhs.empty() || d.lhs_contracting.size() != d.rhs_contracting.size()) {
    return std::nullopt;
  }
  // Each dimension in at most one role: the product of the role's dims.
  auto roles = [](const Dims& shape, const Dims& batch, const Dims& contracting, int64_t& b,
                  int64_t& k, int64_t& free) {
    std::vector<uint8_t> role(shape.size(), 0);
    for (const Dims* list : {&batch, &contracting}) {
      for (int64_t i : *list) {
        if (i < 0 || static_cast<size_t>(i) >= shape.size() || role[static_cast<size_t>(i)] != 0) {
          return false;
        }
        role[static_cast<size_t>(i)] = list == &batch ? 1 : 2;
      }
    }
    b = k = free = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t& into = role[i] == 1 ? b : role[i] == 2 ? k : free;
      if (!CheckedMul(into, shape[i])) return false;
    }
    return true;
  };
  MatmulShape s;
  int64_t rhs_batch = 0, rhs_k = 0;
  if (!roles(d.lhs, d.lhs_batch, d.lhs_contracting, s.batch, s.k, s.m) ||
      !roles(d.rhs, d.rhs_batch, d.rhs_contracting, rhs_batch, rhs_k, s.n)) {
    return std::nullopt;
  }
  return MatmulFlops(s);
}

std::optional<int64_t> AttentionFlops(const parse::AttentionShape& a) {
  int64_t f = 2;  // QK^T: 2*B*H*Sq*Sk*D, PV: 2*B*H*Sq*Sk*Dv
  int64_t d = a.head_dim;
  if (!(CheckedMul(f, a.batch) && CheckedMul(f, a.heads) && CheckedMul(f, a.q_len) &&
        CheckedMul(f, a.kv_len) && core::CheckedAdd(d, a.value_dim) && CheckedMul(f, d))) {
    return std::nullopt;
  }
  if (a.backward) {
    if (!CheckedMul(f, 5)) return std::nullopt;
    f /= 2;  // 2.5x the forward
  }
  if (a.causal) f /= 2;
  return f;
}

std::optional<int64_t> HloLaunchFlops(const parse::HloLaunch& l) {
  if (l.shapes_unusable) return std::nullopt;
  int64_t total = 0;
  for (const parse::HloLaunch::Dot& dot : l.dots) {
    std::optional<int64_t> f = DotFlops(dot.shape);
    if (!f || !CheckedMul(*f, dot.count) || !core::CheckedAdd(total, *f)) return std::nullopt;
  }
  if (l.attention) {
    std::optional<int64_t> f = AttentionFlops(*l.attention);
    if (!f || !core::CheckedAdd(total, *f)) return std::nullopt;
  }
  if (l.flop_kind == parse::HloLaunch::Flops::kAttention && !l.attention) return std::nullopt;
  return total;
}

namespace {

OpFlops Unknown(FlopKind k) { return {k, false, 0}; }
OpFlops Known(FlopKind k, std::optional<int64_t> f) {
  return f ? OpFlops{k, true, *f} : Unknown(k);
}

// 2*B*M*K*N for a [.., M, K] x [.., K, N] product (batch dims of `a` and
// `b` broadcast, 1-D operands as in torch.matmul).
OpFlops MatmulOf(Dims a, Dims b) {
  if (a.empty() || b.empty()) return Unknown(FlopKind::kMatmul);
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
  if (k != k2) return Unknown(FlopKind::kMatmul);
  int64_t batch = 1;
  const size_t ba = a.size() - 2, bb = b.size() - 2;
  for (size_t i = 0; i < std::max(ba, bb); ++i) {
    const int64_t x = i < ba ? a[ba - 1 - i] : 1, y = i < bb ? b[bb - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return Unknown(FlopKind::kMatmul);
    if (!CheckedMul(batch, std::max(x, y))) return Unknown(FlopKind::kMatmul);
  }
  return Known(FlopKind::kMatmul, MatmulFlops({batch, m, n, k}));
}

struct AttentionOp {
  std::string_view name;
  int query;   // index of the query in Input Dims (key, value follow)
  int causal;  // index of is_causal in Concrete Inputs
  bool backward;
};
// Signatures of PyTorch's native functions (native_functions.yaml).
constexpr std::array<AttentionOp, 8> kAttention = {{
    {"aten::_scaled_dot_product_flash_attention", 0, 4, false},
    {"aten::_scaled_dot_product_efficient_attention", 0, 6, false},
    {"aten::_scaled_dot_product_cudnn_attention", 0, 6, false},
    {"aten::_cudnn_attention_forward", 0, 10, false},
    {"aten::_scaled_dot_product_flash_attention_backward", 1, 11, true},
    {"aten::_scaled_dot_product_efficient_attention_backward", 1, 11, true},
    {"aten::_scaled_dot_product_cudnn_attention_backward", 1, 14, true},
    {"aten::_cudnn_attention_backward", 1, 14, true},
}};

OpFlops AttentionOf(const AttentionOp& op, const std::vector<Dims>& in,
                    const std::vector<std::string>& concrete) {
  const size_t q = static_cast<size_t>(op.query);
  if (in.size() < q + 3) return Unknown(FlopKind::kAttention);
  const Dims &query = in[q], &key = in[q + 1], &value = in[q + 2];
  if (query.size() != 4 || key.size() != 4 || value.size() != 4 || query[0] != key[0] ||
      query[1] != key[1] || query[3] != key[3] || key[2] != value[2]) {
    return Unknown(FlopKind::kAttention);
  }
  const size_t c = static_cast<size_t>(op.causal);
  if (concrete.size() <= c || (concrete[c] != "True" && concrete[c] != "False")) {
    return Unknown(FlopKind::kAttention);
  }
  parse::AttentionShape shape{query[0], query[1], query[2], key[2], query[3], value[3]};
  shape.causal = concrete[c] == "True";
  shape.backward = op.backward;
  return Known(FlopKind::kAttention, AttentionFlops(shape));
}

// Convolution: `stride`, `padding`, `dilation` at the given concrete input
// indices; groups at `groups` (-1: 1).
OpFlops ConvOf(const std::vector<Dims>& in, const std::vector<std::string>& concrete, int stride,
               int padding, int dilation, int groups) {
  const OpFlops unknown = Unknown(FlopKind::kConv);
  if (in.size() < 2) return unknown;
  const Dims &x = in[0], &w = in[1];
  if (x.size() < 3 || w.size() != x.size()) return unknown;
  const size_t spatial = x.size() - 2;
  auto ints = [&](int at) -> std::optional<Dims> {
    if (at < 0 || static_cast<size_t>(at) >= concrete.size()) return std::nullopt;
    return parse::ConcreteInts(concrete[static_cast<size_t>(at)]);
  };
  auto list = [&](int at, Dims& out) {
    std::optional<Dims> l = ints(at);
    if (!l) return false;
    out = std::move(*l);
    if (out.size() == 1) out.assign(spatial, out[0]);
    return out.size() == spatial;
  };
  Dims s, p, dl;
  if (!list(stride, s) || !list(padding, p) || !list(dilation, dl)) return unknown;
  int64_t g = 1;
  if (groups >= 0) {
    const std::optional<Dims> gl = ints(groups);
    if (!gl || gl->size() != 1 || (*gl)[0] <= 0) return unknown;
    g = (*gl)[0];
  }
  int64_t channels = w[1];
  if (!CheckedMul(channels, g) || x[1] != channels) return unknown;
  int64_t f = 2;
  if (!(CheckedMul(f, x[0]) && CheckedMul(f, w[0]) && CheckedMul(f, w[1]))) return unknown;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t k = w[2 + i];
    if (s[i] <= 0 || dl[i] <= 0 || p[i] < 0 || k <= 0) return unknown;
    int64_t span = 0, padded = 0;
    if (__builtin_mul_overflow(dl[i], k - 1, &span) ||
        __builtin_add_overflow(x[2 + i], 2 * p[i], &padded) || padded - span - 1 < 0) {
      return unknown;
    }
    const int64_t out = (padded - span - 1) / s[i] + 1;
    if (!(CheckedMul(f, k) && CheckedMul(f, out))) return unknown;
  }
  return Known(FlopKind::kConv, f);
}

}  // namespace

std::string_view FlopKindName(FlopKind k) {
  switch (k) {
    case FlopKind::kMatmul:
      return "matmul";
    case FlopKind::kAttention:
      return "attention";
    case FlopKind::kConv:
      return "conv";
  }
  return "matmul";
}

namespace {

enum class Op { kMm, kAddmm, kBmm, kBaddbmm, kLinear, kMatmul, kConvolution, kCudnnConv, kNone };

// The operator a name is, and its attention signature when it is one.
Op OpOf(std::string_view name, const AttentionOp*& attention) {
  Op op = Op::kNone;
  if (name == "aten::mm") op = Op::kMm;
  if (name == "aten::addmm") op = Op::kAddmm;
  if (name == "aten::bmm") op = Op::kBmm;
  if (name == "aten::baddbmm") op = Op::kBaddbmm;
  if (name == "aten::linear") op = Op::kLinear;
  if (name == "aten::matmul") op = Op::kMatmul;
  if (name == "aten::convolution" || name == "aten::_convolution") op = Op::kConvolution;
  if (name == "aten::cudnn_convolution") op = Op::kCudnnConv;
  attention = nullptr;
  for (const AttentionOp& a : kAttention) {
    if (a.name == name) attention = &a;
  }
  return op;
}

}  // namespace

std::optional<FlopKind> TorchOpKind(std::string_view name) {
  const AttentionOp* attention = nullptr;
  const Op op = OpOf(name, attention);
  if (attention != nullptr) return FlopKind::kAttention;
  if (op == Op::kNone) return std::nullopt;
  return op == Op::kConvolution || op == Op::kCudnnConv ? FlopKind::kConv : FlopKind::kMatmul;
}

std::optional<OpFlops> TorchOpFlops(std::string_view name, const parse::OpShapes& shapes) {
  const auto kind_of = TorchOpKind(name);
  if (!kind_of) return std::nullopt;
  const FlopKind kind = *kind_of;
  const AttentionOp* attention = nullptr;
  const Op op = OpOf(name, attention);
  if (!shapes.input_dims) return Unknown(kind);
  const std::vector<Dims>& in = *shapes.input_dims;
  static const std::vector<std::string> kNone;
  if ((attention != nullptr || kind == FlopKind::kConv) && !shapes.concrete_inputs) {
    return Unknown(kind);
  }
  const std::vector<std::string>& concrete =
      shapes.concrete_inputs ? *shapes.concrete_inputs : kNone;
  if (attention != nullptr) return AttentionOf(*attention, in, concrete);
  auto two = [&](size_t i, size_t rank) {
    return in.size() > i + 1 && in[i].size() == rank && in[i + 1].size() == rank;
  };
  switch (op) {
    case Op::kMm:
      return two(0, 2) ? MatmulOf(in[0], in[1]) : Unknown(kind);
    case Op::kAddmm:
      return two(1, 2) ? MatmulOf(in[1], in[2]) : Unknown(kind);
    case Op::kBmm:
      return two(0, 3) ? MatmulOf(in[0], in[1]) : Unknown(kind);
    case Op::kBaddbmm:
      return two(1, 3) ? MatmulOf(in[1], in[2]) : Unknown(kind);
    case Op::kMatmul:
      return in.size() >= 2 ? MatmulOf(in[0], in[1]) : Unknown(kind);
    case Op::kLinear: {
      // input [..., K] x weight^T ([N, K]).
      if (in.size() < 2 || in[0].empty() || in[1].size() != 2) return Unknown(kind);
      Dims a = in[0];
      if (a.size() == 1) a.insert(a.begin(), 1);
      int64_t rows = 1;
      for (size_t i = 0; i + 1 < a.size(); ++i) {
        if (!CheckedMul(rows, a[i])) return Unknown(kind);
      }
      return MatmulOf({rows, a.back()}, {in[1][1], in[1][0]});
    }
    case Op::kConvolution:  // (input, weight, bias, stride, padding, dilation, transposed, ...)
      if (concrete.size() > 6 && concrete[6] != "False") return Unknown(kind);  // transposed
      return ConvOf(in, concrete, 3, 4, 5, 8);
    case Op::kCudnnConv:  // (self, weight, padding, stride, dilation, groups, ...)
      return ConvOf(in, concrete, 3, 2, 4, 5);
    case Op::kNone:
      break;
  }
  return std::nullopt;
}

std::optional<double> DensePeakFlops(std::string_view device) {
  // Vendor datasheets, dense (no sparsity) BF16 tensor FLOP/s; V100 has no
  // BF16: its FP16 tensor peak. More specific names first.
  struct Peak {
    std::string_view match;
    double flops;
  };
  static constexpr Peak kPeaks[] = {
      {"H100 PCIe", 756e12}, {"H100 NVL", 835e12},  {"H200 NVL", 835e12},  {"H100", 989.4e12},
      {"H200", 989.4e12},    {"B200", 2250e12},     {"A100", 312e12},      {"V100-PCIE", 112e12},
      {"V100", 125e12},      {"MI300X", 1307.4e12}, {"MI325X", 1307.4e12}, {"MI355X", 2516.6e12},
  };
  for (const Peak& p : kPeaks) {
    if (device.find(p.match) != std::string_view::npos) return p.flops;
  }
  return std::nullopt;
}

double PlausibleFlopsBound(const FlopStats& f) {
  return f.peak_per_second > 0 ? f.peak_per_second : kNoPeakFlopsBound;
}

}  // namespace profwatch::aggregate
