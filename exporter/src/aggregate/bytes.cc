#include "aggregate/bytes.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "aggregate/collectives.h"

namespace profwatch::aggregate {

std::optional<int64_t> ElementBytes(std::string_view type) {
  if (auto b = TorchTypeBytes(type)) return b;
  return DtypeBytes(type);
}

namespace {

enum class Model : uint8_t {
  kMm,           // [M,K] x [K,N]
  kAddmm,        // bias, [M,K], [K,N]
  kBmm,          // [B,M,K] x [B,K,N]
  kBaddbmm,      // bias, [B,M,K], [B,K,N]
  kLinear,       // input [...,K], weight [N,K], bias [N]
  kMatmul,       // [...,M,K] x [...,K,N], batch dims broadcast
  kAttention,    // q, k, v (+ mask): out is [..., Sq, Dv]
  kAttentionBw,  // grad_out, q, k, v, ...: dq, dk, dv written
  kElementwise,  // tensor inputs, broadcast output
  kCopy,         // copy_(dst, src): src read, dst written
  kFill,         // fill_/zero_(self): self written
  kNorm,         // input, weight, bias, ...: output as input
  kNormBw,       // grad_out, input, ...: grad_input and the affine grads
  kReduction,    // input; output reduced over the `dim` concrete input
  kSoftmax,      // input; output as input
  kSoftmaxBw,    // grad_out, output; grad_input as grad_out
  kTriton,       // every tensor argument once (inputs and outputs)
};

struct Modelled {
  std::string_view name;
  Model model;
  int param = -1;  // kNormBw: index of the weight input; kReduction: index of `dim`
  int grads = 0;   // kNormBw: affine gradients written, each the weight's size
};

constexpr Modelled kOps[] = {
    {"aten::mm", Model::kMm},
    {"aten::addmm", Model::kAddmm},
    {"aten::bmm", Model::kBmm},
    {"aten::baddbmm", Model::kBaddbmm},
    {"aten::linear", Model::kLinear},
    {"aten::matmul", Model::kMatmul},
    {"aten::scaled_dot_product_attention", Model::kAttention},
    {"aten::_scaled_dot_product_flash_attention", Model::kAttention},
    {"aten::_scaled_dot_product_efficient_attention", Model::kAttention},
    {"aten::_scaled_dot_product_cudnn_attention", Model::kAttention},
    {"aten::_cudnn_attention_forward", Model::kAttention},
    {"aten::_flash_attention_forward", Model::kAttention},
    {"aten::_efficient_attention_forward", Model::kAttention},
    {"aten::_scaled_dot_product_flash_attention_backward", Model::kAttentionBw},
    {"aten::_scaled_dot_product_efficient_attention_backward", Model::kAttentionBw},
    {"aten::_scaled_dot_product_cudnn_attention_backward", Model::kAttentionBw},
    {"aten::_cudnn_attention_backward", Model::kAttentionBw},
    {"aten::_flash_attention_backward", Model::kAttentionBw},
    {"aten::_efficient_attention_backward", Model::kAttentionBw},
    {"aten::add", Model::kElementwise},
    {"aten::add_", Model::kElementwise},
    {"aten::sub", Model::kElementwise},
    {"aten::sub_", Model::kElementwise},
    {"aten::mul", Model::kElementwise},
    {"aten::mul_", Model::kElementwise},
    {"aten::div", Model::kElementwise},
    {"aten::div_", Model::kElementwise},
    {"aten::neg", Model::kElementwise},
    {"aten::exp", Model::kElementwise},
    {"aten::log", Model::kElementwise},
    {"aten::sqrt", Model::kElementwise},
    {"aten::rsqrt", Model::kElementwise},
    {"aten::pow", Model::kElementwise},
    {"aten::abs", Model::kElementwise},
    {"aten::relu", Model::kElementwise},
    {"aten::relu_", Model::kElementwise},
    {"aten::gelu", Model::kElementwise},
    {"aten::gelu_backward", Model::kElementwise},
    {"aten::silu", Model::kElementwise},
    {"aten::silu_", Model::kElementwise},
    {"aten::silu_backward", Model::kElementwise},
    {"aten::sigmoid", Model::kElementwise},
    {"aten::tanh", Model::kElementwise},
    {"aten::where", Model::kElementwise},
    {"aten::clamp", Model::kElementwise},
    {"aten::clamp_", Model::kElementwise},
    {"aten::addcmul_", Model::kElementwise},
    {"aten::addcdiv_", Model::kElementwise},
    {"aten::lerp_", Model::kElementwise},
    {"aten::copy_", Model::kCopy},
    {"aten::fill_", Model::kFill},
    {"aten::zero_", Model::kFill},
    {"aten::layer_norm", Model::kNorm},
    {"aten::native_layer_norm", Model::kNorm},
    {"aten::rms_norm", Model::kNorm},
    {"aten::_fused_rms_norm", Model::kNorm},
    {"aten::group_norm", Model::kNorm},
    {"aten::native_group_norm", Model::kNorm},
    {"aten::batch_norm", Model::kNorm},
    {"aten::native_batch_norm", Model::kNorm},
    {"aten::cudnn_batch_norm", Model::kNorm},
    // (grad_out, input, normalized_shape, mean, rstd, weight, bias, mask)
    {"aten::native_layer_norm_backward", Model::kNormBw, 5, 2},
    // (grad_out, input, normalized_shape, rstd, weight, mask)
    {"aten::_fused_rms_norm_backward", Model::kNormBw, 4, 1},
    // (grad_out, input, mean, rstd, weight, N, C, HxW, group, mask)
    {"aten::native_group_norm_backward", Model::kNormBw, 4, 2},
    // (grad_out, input, weight, running_mean, running_var, save_mean, ...)
    {"aten::native_batch_norm_backward", Model::kNormBw, 2, 2},
    // (input, grad_out, weight, ...): grad_input as input, which is the first
    {"aten::cudnn_batch_norm_backward", Model::kNormBw, 2, 2},
    {"aten::sum", Model::kReduction, 1},
    {"aten::mean", Model::kReduction, 1},
    {"aten::amax", Model::kReduction, 1},
    {"aten::amin", Model::kReduction, 1},
    {"aten::prod", Model::kReduction, 1},
    {"aten::var", Model::kReduction, 1},
    {"aten::std", Model::kReduction, 1},
    {"aten::softmax", Model::kSoftmax},
    {"aten::_softmax", Model::kSoftmax},
    {"aten::log_softmax", Model::kSoftmax},
    {"aten::_log_softmax", Model::kSoftmax},
    {"aten::_softmax_backward_data", Model::kSoftmaxBw},
    {"aten::_log_softmax_backward_data", Model::kSoftmaxBw},
};

std::optional<Modelled> ModelOf(std::string_view name) {
  // torch.compile launches each Triton kernel through an operator named
  // after it (triton_poi_fused_..., triton_red_..., triton_per_...).
  if (name.starts_with("triton_")) return Modelled{name, Model::kTriton};
  for (const Modelled& m : kOps) {
    if (m.name == name) return m;
  }
  return std::nullopt;
}

bool MemoryBound(const Modelled& m) {
  switch (m.model) {
    case Model::kElementwise:
    case Model::kCopy:
    case Model::kFill:
    case Model::kNorm:
    case Model::kNormBw:
    case Model::kReduction:
    case Model::kSoftmax:
    case Model::kSoftmaxBw:
      return true;
    case Model::kTriton:
      // Inductor names each kernel by its kind: pointwise, reduction,
      // persistent reduction; templates (triton_tem_) are GEMMs and
      // convolutions, and other names say nothing.
      return m.name.starts_with("triton_poi_") || m.name.starts_with("triton_red_") ||
             m.name.starts_with("triton_per_");
    case Model::kMm:
    case Model::kAddmm:
    case Model::kBmm:
    case Model::kBaddbmm:
    case Model::kLinear:
    case Model::kMatmul:
    case Model::kAttention:
    case Model::kAttentionBw:
      return false;
  }
  return false;
}

// A tensor argument: its dims and element size.
struct Tensor {
  const parse::Dims* dims = nullptr;
  int64_t element = 0;
};

std::optional<int64_t> Elements(const parse::Dims& d) {
  int64_t n = 1;  // a 0-d tensor holds one element
  for (int64_t x : d) {
    if (x < 0 || __builtin_mul_overflow(n, x, &n)) return std::nullopt;
  }
  return n;
}

// Sums products without overflow; an empty optional stays empty.
class Total {
 public:
  void Add(std::optional<int64_t> elements, int64_t element_bytes) {
    int64_t b = 0;
    if (!ok_ || !elements || __builtin_mul_overflow(*elements, element_bytes, &b) ||
        __builtin_add_overflow(sum_, b, &sum_)) {
      ok_ = false;
    }
  }
  void Add(const Tensor& t) { Add(Elements(*t.dims), t.element); }
  void Fail() { ok_ = false; }
  OpBytes Result() const { return ok_ ? OpBytes{true, sum_} : OpBytes{}; }

 private:
  int64_t sum_ = 0;
  bool ok_ = true;
};

// The broadcast of shapes (right-aligned, each dimension equal or 1);
// nullopt when they do not broadcast.
std::optional<parse::Dims> Broadcast(const std::vector<Tensor>& ts) {
  parse::Dims out;
  for (const Tensor& t : ts) {
    const parse::Dims& d = *t.dims;
    if (d.size() > out.size()) out.insert(out.begin(), d.size() - out.size(), 1);
    for (size_t i = 0; i < d.size(); ++i) {
      int64_t& o = out[out.size() - d.size() + i];
      if (d[i] == o || d[i] == 1) continue;
      if (o != 1) return std::nullopt;
      o = d[i];
    }
  }
  return out;
}

// Integers of a concrete input, negatives allowed: "[-1]", "[0, 2]", "1".
std::optional<std::vector<int64_t>> SignedInts(std::string_view text) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  };
  text = trim(text);
  if (text.starts_with('[') && text.ends_with(']')) text = trim(text.substr(1, text.size() - 2));
  std::vector<int64_t> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    int64_t n = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) return std::nullopt;
    out.push_back(n);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return out;
}

// Elements of `in` reduced over `dims` (negative from the end; none: all).
std::optional<int64_t> ReducedElements(const parse::Dims& in, const std::vector<int64_t>& dims) {
  if (dims.empty()) return 1;
  parse::Dims out = in;
  const int64_t rank = static_cast<int64_t>(in.size());
  for (int64_t d : dims) {
    const int64_t i = d < 0 ? d + rank : d;
    if (i < 0 || i >= rank) return std::nullopt;
    out[static_cast<size_t>(i)] = 1;
  }
  return Elements(out);
}

}  // namespace

bool MemoryBoundOp(std::string_view name) {
  const std::optional<Modelled> m = ModelOf(name);
  return m && MemoryBound(*m);
}

namespace {

// An operator's arguments: the tensors by position (element 0: not a
// tensor) and the tensors in order.
struct Args {
  const parse::OpShapes* shapes = nullptr;
  std::vector<Tensor> at;
  std::vector<Tensor> tensors;
  const Tensor* tensor(size_t i) const {
    return i < at.size() && at[i].element > 0 ? &at[i] : nullptr;
  }
};

// The arguments of `shapes`; nullopt when a shape or type is missing or an
// element type is unknown (the operator's bytes are then unknown).
std::optional<Args> ArgsOf(const parse::OpShapes& shapes) {
  if (!shapes.input_dims || !shapes.input_types ||
      shapes.input_dims->size() != shapes.input_types->size()) {
    return std::nullopt;
  }
  const std::vector<parse::Dims>& dims = *shapes.input_dims;
  Args args;
  args.shapes = &shapes;
  args.at.resize(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const std::string& type = (*shapes.input_types)[i];
    if (auto e = ElementBytes(type)) args.at[i] = Tensor{&dims[i], *e};
    // A non-tensor with a type name of its own ("Scalar") has no bytes; an
    // unknown element type of a tensor makes the operator unknown.
    else if (!type.empty() && type != "Scalar" && type != "ScalarList" && type != "GenericList" &&
             type != "TensorList" && type != "string" && type != "Device" && type != "Layout")
      return std::nullopt;
    if (args.at[i].element > 0) args.tensors.push_back(args.at[i]);
  }
  return args;
}

// The product's shape of matmul (batch dims broadcast; a 1-D operand has no
// row or column); nullopt when the inner dimensions differ.
std::optional<parse::Dims> MatmulOut(const parse::Dims& x, const parse::Dims& y) {
  if (x.empty() || y.empty()) return std::nullopt;
  const int64_t k = x.back();
  if (k != (y.size() == 1 ? y[0] : y[y.size() - 2])) return std::nullopt;
  parse::Dims bx(x.begin(), x.end() - std::min<size_t>(x.size(), 2));
  parse::Dims by(y.begin(), y.end() - std::min<size_t>(y.size(), 2));
  auto out = Broadcast({Tensor{&bx, 1}, Tensor{&by, 1}});
  if (!out) return std::nullopt;
  if (x.size() >= 2) out->push_back(x[x.size() - 2]);
  if (y.size() >= 2) out->push_back(y.back());
  return out;
}

// mm, addmm, bmm, baddbmm, matmul: A (and the bias) read, B read, the
// product written in A's type.
OpBytes MatmulBytes(Model model, const Args& args) {
  const bool bias = model == Model::kAddmm || model == Model::kBaddbmm;
  const Tensor* a = args.tensor(bias ? 1 : 0);
  const Tensor* b = args.tensor(bias ? 2 : 1);
  if (!a || !b) return OpBytes{};
  const parse::Dims& x = *a->dims;
  const parse::Dims& y = *b->dims;
  const size_t want = model == Model::kBmm || model == Model::kBaddbmm ? 3 : 2;
  parse::Dims out;
  if (model == Model::kMatmul) {
    auto product = MatmulOut(x, y);
    if (!product) return OpBytes{};
    out = *product;
  } else {
    if (x.size() != want || y.size() != want || x[want - 1] != y[want - 2]) return OpBytes{};
    if (want == 3 && x[0] != y[0]) return OpBytes{};
    out = x;
    out.back() = y.back();
  }
  Total total;
  if (bias) {
    if (!args.tensor(0)) return OpBytes{};
    total.Add(*args.tensor(0));
  }
  total.Add(*a);
  total.Add(*b);
  total.Add(Elements(out), a->element);
  return total.Result();
}

// linear: input, weight and bias read, the output written.
OpBytes LinearBytes(const Args& args) {
  const Tensor* in = args.tensor(0);
  const Tensor* w = args.tensor(1);
  if (!in || !w || in->dims->empty() || w->dims->size() != 2 || in->dims->back() != (*w->dims)[1]) {
    return OpBytes{};
  }
  parse::Dims out = *in->dims;
  out.back() = (*w->dims)[0];
  Total total;
  total.Add(*in);
  total.Add(*w);
  if (const Tensor* bias = args.tensor(2)) total.Add(*bias);
  total.Add(Elements(out), in->element);
  return total.Result();
}

// Attention forward: q, k, v (and a mask) read, the output written.
OpBytes AttentionBytes(const Args& args) {
  const Tensor* q = args.tensor(0);
  const Tensor* v = args.tensor(2);
  if (!q || !args.tensor(1) || !v || q->dims->empty() || v->dims->empty()) return OpBytes{};
  Total total;
  for (const Tensor& t : args.tensors) total.Add(t);
  parse::Dims out = *q->dims;
  out.back() = v->dims->back();
  total.Add(Elements(out), q->element);
  return total.Result();
}

// Attention backward: every input read (grad_out, q, k, v, out, lse, ...),
// dq, dk, dv written.
OpBytes AttentionBwBytes(const Args& args) {
  const Tensor* q = args.tensor(1);
  const Tensor* k = args.tensor(2);
  const Tensor* v = args.tensor(3);
  if (!args.tensor(0) || !q || !k || !v) return OpBytes{};
  Total total;
  for (const Tensor& t : args.tensors) total.Add(t);
  total.Add(*q);
  total.Add(*k);
  total.Add(*v);
  return total.Result();
}

// Elementwise: every input read, the broadcast output written in the
// widest element type.
OpBytes ElementwiseBytes(const Args& args) {
  if (args.tensors.empty()) return OpBytes{};
  auto out = Broadcast(args.tensors);
  if (!out) return OpBytes{};
  Total total;
  int64_t widest = 0;
  for (const Tensor& t : args.tensors) {
    total.Add(t);
    widest = std::max(widest, t.element);
  }
  total.Add(Elements(*out), widest);
  return total.Result();
}

// copy_ (dst written, src read) and fill_ (self written).
OpBytes CopyOrFillBytes(Model model, const Args& args) {
  const Tensor* dst = args.tensor(0);
  const Tensor* src = args.tensor(1);
  if (!dst || (model == Model::kCopy && !src)) return OpBytes{};
  Total total;
  total.Add(*dst);
  if (model == Model::kCopy) total.Add(*src);
  return total.Result();
}

// Norms and softmax: every tensor read once, the output as the first input;
// a norm's backward also writes grad_input and `grads` weight-sized grads.
OpBytes NormBytes(const Modelled& m, const Args& args) {
  const Tensor* in = args.tensor(0);
  if (!in) return OpBytes{};
  Total total;
  for (const Tensor& t : args.tensors) total.Add(t);
  total.Add(*in);
  if (m.model == Model::kNormBw) {
    if (const Tensor* w = args.tensor(static_cast<size_t>(m.param))) {
      for (int g = 0; g < m.grads; ++g) total.Add(*w);
    }
  }
  return total.Result();
}

// Reductions: the input read, the reduced output written (over `dim`, a
// ScalarList at position `param`; a Scalar there is a dtype: sum(self,
// dtype); none: every dimension).
OpBytes ReductionBytes(const Modelled& m, const Args& args) {
  const Tensor* in = args.tensor(0);
  if (!in) return OpBytes{};
  const parse::OpShapes& shapes = *args.shapes;
  std::vector<int64_t> reduced;
  const size_t d = static_cast<size_t>(m.param);
  if (d < args.at.size() && (*shapes.input_types)[d] == "ScalarList" && shapes.concrete_inputs &&
      d < shapes.concrete_inputs->size()) {
    auto v = SignedInts((*shapes.concrete_inputs)[d]);
    if (!v) return OpBytes{};
    reduced = *v;
  }
  Total total;
  total.Add(*in);
  total.Add(ReducedElements(*in->dims, reduced), in->element);
  return total.Result();
}

// A Triton kernel: its tensor arguments, each once.
OpBytes TritonBytes(const Args& args) {
  if (args.tensors.empty()) return OpBytes{};
  Total total;
  for (const Tensor& t : args.tensors) total.Add(t);
  return total.Result();
}

std::optional<OpBytes> TorchOpBytesOf(std::string_view name, const parse::OpShapes& shapes) {
  const std::optional<Modelled> m = ModelOf(name);
  if (!m) return std::nullopt;
  const std::optional<Args> args = ArgsOf(shapes);
  if (!args) return OpBytes{};
  switch (m->model) {
    case Model::kMm:
    case Model::kAddmm:
    case Model::kBmm:
    case Model::kBaddbmm:
    case Model::kMatmul:
      return MatmulBytes(m->model, *args);
    case Model::kLinear:
      return LinearBytes(*args);
    case Model::kAttention:
      return AttentionBytes(*args);
    case Model::kAttentionBw:
      return AttentionBwBytes(*args);
    case Model::kElementwise:
      return ElementwiseBytes(*args);
    case Model::kCopy:
    case Model::kFill:
      return CopyOrFillBytes(m->model, *args);
    case Model::kNorm:
    case Model::kSoftmax:
    case Model::kSoftmaxBw:
    case Model::kNormBw:
      return NormBytes(*m, *args);
    case Model::kReduction:
      return ReductionBytes(*m, *args);
    case Model::kTriton:
      return TritonBytes(*args);
  }
  return OpBytes{};
}

}  // namespace

std::optional<OpBytes> TorchOpBytes(std::string_view name, const parse::OpShapes& shapes) {
  std::optional<OpBytes> b = TorchOpBytesOf(name, shapes);
  if (b && b->known) b->memory_bound = MemoryBoundOp(name);
  return b;
}

std::optional<int64_t> HloLaunchBytes(const parse::HloLaunch& l) {
  if (l.kind == parse::HloLaunch::Kind::kOpaque) return std::nullopt;
  return l.bytes;
}

std::optional<HbmPeak> PeakHbmBandwidth(std::string_view device) {
  // Vendor datasheets, peak HBM bandwidth per GPU. A name matches when it
  // holds `match` and `also`; more specific names first. 0: a device the
  // name does not tell apart (GH200 ships with 4 or 4.9 TB/s): unknown.
  static constexpr std::string_view kA100 =
      "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4)";
  static constexpr std::string_view kH100 =
      "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)";
  static constexpr std::string_view kH200 =
      "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)";
  static constexpr std::string_view kB200 =
      "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx)";
  static constexpr std::string_view kV100 =
      "NVIDIA V100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/v100)";
  static constexpr std::string_view kMi300 =
      "AMD Instinct MI300X / MI325X / MI355X data sheets "
      "(amd.com/en/products/accelerators/instinct)";
  struct Peak {
    std::string_view match, also;
    double bytes_per_second;
    std::string_view source;
  };
  static constexpr Peak kPeaks[] = {
      {"GH200", "", 0, ""},
      {"H100 PCIe", "", 2.0e12, kH100},
      {"H100 NVL", "", 3.9e12, kH100},
      {"H100", "", 3.35e12, kH100},  // SXM5 80GB ("NVIDIA H100 80GB HBM3")
      {"H200", "", 4.8e12, kH200},   // SXM and NVL alike
      {"B200", "", 8.0e12, kB200},
      {"A100", "80GB PCIe", 1.935e12, kA100},
      {"A100", "PCIE-80GB", 1.935e12, kA100},
      {"A100", "80GB", 2.039e12, kA100},  // SXM4 80GB
      {"A100", "", 1.555e12, kA100},      // 40GB, SXM4 and PCIe
      {"V100S", "", 1.134e12, kV100},
      {"V100", "", 0.9e12, kV100},
      {"MI300X", "", 5.3e12, kMi300},
      {"MI325X", "", 6.0e12, kMi300},
      {"MI355X", "", 8.0e12, kMi300},
  };
  for (const Peak& p : kPeaks) {
    if (device.find(p.match) == std::string_view::npos) continue;
    if (!p.also.empty() && device.find(p.also) == std::string_view::npos) continue;
    if (p.bytes_per_second <= 0) return std::nullopt;
    return HbmPeak{p.bytes_per_second, p.source};
  }
  return std::nullopt;
}

}  // namespace profwatch::aggregate
