#include "aggregate/flops.h"

#include <simdjson.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace profwatch::aggregate {
namespace {

using Dims = std::vector<int64_t>;

// "Input Dims": an array of arrays of non-negative integers (one per input;
// [] for non-tensors). False on anything else.
bool ParseDims(std::string_view json, std::vector<Dims>& out) {
  if (json.empty()) return false;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(json)).get(doc)) return false;
  simdjson::dom::array inputs;
  if (doc.get_array().get(inputs)) return false;
  for (simdjson::dom::element input : inputs) {
    simdjson::dom::array dims;
    if (input.get_array().get(dims)) return false;
    Dims d;
    for (simdjson::dom::element v : dims) {
      int64_t n = 0;
      if (v.get_int64().get(n) || n < 0) return false;
      d.push_back(n);
    }
    out.push_back(std::move(d));
  }
  return true;
}

// "Concrete Inputs": an array of strings ("" for tensors).
bool ParseStrings(std::string_view json, std::vector<std::string>& out) {
  if (json.empty()) return false;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(json)).get(doc)) return false;
  simdjson::dom::array items;
  if (doc.get_array().get(items)) return false;
  for (simdjson::dom::element v : items) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    out.emplace_back(s);
  }
  return true;
}

// "[1, 2]" or "1" -> {1, 2} / {1}; false otherwise.
bool ParseIntList(const std::string& s, std::vector<int64_t>& out) {
  std::vector<Dims> wrapped;
  const std::string json = s.starts_with("[") ? "[" + s + "]" : "[[" + s + "]]";
  if (!ParseDims(json, wrapped) || wrapped.size() != 1) return false;
  out = wrapped[0];
  return true;
}

// a * b * ... without overflow; false on overflow.
bool Mul(int64_t& acc, int64_t v) { return !__builtin_mul_overflow(acc, v, &acc); }
bool Product(const Dims& d, size_t from, size_t to, int64_t& out) {
  out = 1;
  for (size_t i = from; i < to; ++i) {
    if (!Mul(out, d[i])) return false;
  }
  return true;
}

OpFlops Unknown(FlopKind k) { return {k, false, 0}; }
OpFlops Known(FlopKind k, int64_t f) { return {k, true, f}; }

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
    if (!Mul(batch, std::max(x, y))) return Unknown(FlopKind::kMatmul);
  }
  int64_t f = 2;
  if (!(Mul(f, batch) && Mul(f, m) && Mul(f, k) && Mul(f, n))) return Unknown(FlopKind::kMatmul);
  return Known(FlopKind::kMatmul, f);
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
  int64_t f = 2;  // QK^T: 2*B*H*Sq*Sk*D, PV: 2*B*H*Sq*Sk*Dv
  int64_t d = query[3];
  if (!(Mul(f, query[0]) && Mul(f, query[1]) && Mul(f, query[2]) && Mul(f, key[2]) &&
        !__builtin_add_overflow(d, value[3], &d) && Mul(f, d))) {
    return Unknown(FlopKind::kAttention);
  }
  if (op.backward && !Mul(f, 5)) return Unknown(FlopKind::kAttention);
  if (op.backward) f /= 2;  // 2.5x the forward
  if (concrete[c] == "True") f /= 2;
  return Known(FlopKind::kAttention, f);
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
  auto list = [&](int at, std::vector<int64_t>& out) {
    if (at < 0 || static_cast<size_t>(at) >= concrete.size()) return false;
    if (!ParseIntList(concrete[static_cast<size_t>(at)], out)) return false;
    if (out.size() == 1) out.assign(spatial, out[0]);
    return out.size() == spatial;
  };
  std::vector<int64_t> s, p, dl;
  if (!list(stride, s) || !list(padding, p) || !list(dilation, dl)) return unknown;
  int64_t g = 1;
  if (groups >= 0) {
    std::vector<int64_t> gl;
    if (!ParseIntList(concrete.size() > static_cast<size_t>(groups)
                          ? concrete[static_cast<size_t>(groups)]
                          : std::string(),
                      gl) ||
        gl.size() != 1 || gl[0] <= 0) {
      return unknown;
    }
    g = gl[0];
  }
  if (x[1] != w[1] * g) return unknown;
  int64_t f = 2;
  if (!(Mul(f, x[0]) && Mul(f, w[0]) && Mul(f, w[1]))) return unknown;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t k = w[2 + i];
    if (s[i] <= 0 || dl[i] <= 0 || p[i] < 0 || k <= 0) return unknown;
    int64_t span = 0, padded = 0;
    if (__builtin_mul_overflow(dl[i], k - 1, &span) ||
        __builtin_add_overflow(x[2 + i], 2 * p[i], &padded) || padded - span - 1 < 0) {
      return unknown;
    }
    const int64_t out = (padded - span - 1) / s[i] + 1;
    if (!(Mul(f, k) && Mul(f, out))) return unknown;
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

std::optional<OpFlops> TorchOpFlops(std::string_view name, std::string_view input_dims,
                                    std::string_view concrete_inputs) {
  enum class Op { kMm, kAddmm, kBmm, kBaddbmm, kLinear, kMatmul, kConvolution, kCudnnConv, kNone };
  Op op = Op::kNone;
  if (name == "aten::mm") op = Op::kMm;
  if (name == "aten::addmm") op = Op::kAddmm;
  if (name == "aten::bmm") op = Op::kBmm;
  if (name == "aten::baddbmm") op = Op::kBaddbmm;
  if (name == "aten::linear") op = Op::kLinear;
  if (name == "aten::matmul") op = Op::kMatmul;
  if (name == "aten::convolution" || name == "aten::_convolution") op = Op::kConvolution;
  if (name == "aten::cudnn_convolution") op = Op::kCudnnConv;
  const AttentionOp* attention = nullptr;
  for (const AttentionOp& a : kAttention) {
    if (a.name == name) attention = &a;
  }
  if (op == Op::kNone && attention == nullptr) return std::nullopt;
  const FlopKind kind = attention != nullptr                             ? FlopKind::kAttention
                        : op == Op::kConvolution || op == Op::kCudnnConv ? FlopKind::kConv
                                                                         : FlopKind::kMatmul;
  std::vector<Dims> in;
  if (!ParseDims(input_dims, in)) return Unknown(kind);
  std::vector<std::string> concrete;
  if (attention != nullptr || kind == FlopKind::kConv) {
    if (!ParseStrings(concrete_inputs, concrete)) return Unknown(kind);
  }
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
      int64_t rows = 0;
      if (!Product(a, 0, a.size() - 1, rows)) return Unknown(kind);
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

namespace {

std::string Tera(double flops_per_second) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", flops_per_second / 1e12);
  return buf;
}

// Why a window with GPUs counted no FLOP, and how to get them, by what the
// input is.
std::string NothingCountedNote(const WindowStats& s) {
  bool torch = false, jax = false, nsys = false;
  for (const FileSummary& f : s.files) {
    torch = torch || f.schema == parse::TraceSchema::kKineto;
    jax = jax || f.schema == parse::TraceSchema::kJaxTraceEvents ||
          f.schema == parse::TraceSchema::kXPlane;
    nsys = nsys || f.schema == parse::TraceSchema::kNsys;
  }
  const std::string unknown = std::to_string(s.flops.unknown_ops);
  if (torch) {
    if (s.flops.unknown_ops > 0) {
      return "no operator shapes: " + unknown +
             " matmul, attention or convolution operators without usable Input Dims (profile "
             "with record_shapes=True)";
    }
    return "no operator shapes (profile with record_shapes=True)";
  }
  if (jax) {
    if (s.flops.unknown_ops > 0) {
      return "no usable HLO shapes: " + unknown + " launches of counted kinds could not be counted";
    }
    if (!s.graph.unplaced.empty()) return "no HLO modules: " + s.graph.unplaced;
    return "no HLO FLOPs: no .xplane.pb of the process beside the trace (it holds the HLO "
           "modules), or no dot, cuBLAS GEMM or cuDNN attention launch in them";
  }
  if (nsys) return "an Nsight Systems export records no operator shapes";
  return "no operator shapes or HLO modules in the input";
}

}  // namespace

FlopFigures ComputeFlopFigures(const WindowStats& s, std::optional<double> step_seconds) {
  const FlopStats& f = s.flops;
  FlopFigures out;
  out.attempted = f.Counted();
  if (s.divisor() == 0) {
    out.note = "no GPU kernels in the window";
    out.mfu_note = out.note;
    return out;
  }
  if (!(f.Total() > 0)) {  // NaN too
    out.note = NothingCountedNote(s);
    out.mfu_note = "no counted FLOPs: " + out.note;
    return out;
  }
  // A count is physical only if the kernels that did it could have: over
  // all of them and per family, at most the bound (no kernel time at all:
  // an infinite rate).
  const double bound = PlausibleFlopsBound(f);
  const std::string bound_name =
      f.peak_per_second > 0
          ? "the " + Tera(bound) + " TFLOP/s peak of " +
                (f.device_name.empty() ? std::string("the device") : f.device_name) + " (" +
                f.peak_source + ")"
          : "the " + Tera(bound) + " TFLOP/s any GPU can do (no known peak)";
  auto rate = [](double flops, int64_t ps) {
    return ps > 0 ? flops / PsToSeconds(ps) : std::numeric_limits<double>::infinity();
  };
  double worst = rate(f.Total(), f.TotalKernelPs());
  std::string where = "their kernels";
  for (const FlopStats::Family& fam : f.families) {
    if (fam.flops <= 0) continue;
    if (const double r = rate(fam.flops, fam.kernel_ps); r > worst) {
      worst = r;
      where = "the " + fam.family + " kernels";
    }
  }
  if (!(worst <= bound)) {
    out.note =
        "impossible count: the recorded shapes imply " +
        (std::isinf(worst) ? std::string("FLOPs in no kernel time") : Tera(worst) + " TFLOP/s") +
        " on " + where + ", above " + bound_name +
        " (FP8 or sparse kernels: give their peak with --peak-flops)";
    out.mfu_note = "no counted FLOPs: " + out.note;
    return out;
  }
  const double divisor = static_cast<double>(s.divisor());
  std::array<double, 3> kinds{};
  for (size_t k = 0; k < kinds.size(); ++k) kinds[k] = f.flops[k] / divisor;
  out.per_gpu_step = kinds;
  out.total_per_gpu_step = f.Total() / divisor;
  if (f.TotalKernelPs() > 0) out.achieved_per_second = f.Total() / PsToSeconds(f.TotalKernelPs());
  for (const FlopStats::Family& fam : f.families) {
    FamilyFlopFigures ff{fam.family, fam.flops / divisor, std::nullopt};
    if (fam.kernel_ps > 0) ff.achieved_per_second = fam.flops / PsToSeconds(fam.kernel_ps);
    out.families.push_back(std::move(ff));
  }
  double step = step_seconds.value_or(0);
  if (step <= 0) step = s.TraceStepSeconds();
  if (step <= 0) {
    out.mfu_note = "no step time (give --log or --step-time)";
    return out;
  }
  const double model = *out.total_per_gpu_step / step;
  if (!(model <= bound)) {
    out.mfu_note = "the counted FLOPs over the " + std::to_string(step) + " s step are " +
                   Tera(model) + " TFLOP/s, above " + bound_name +
                   ": the step time is shorter than the work in it";
    return out;
  }
  out.model_per_second = model;
  if (f.peak_per_second <= 0) {
    out.mfu_note = f.device_name.empty()
                       ? "no file of the window names its device (give --peak-flops)"
                       : "no known peak for device '" + f.device_name + "' (give --peak-flops)";
  } else {
    out.mfu = model / f.peak_per_second;
  }
  return out;
}

}  // namespace profwatch::aggregate
