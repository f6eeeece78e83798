// The typed shapes FLOPs are counted from (aggregate/flops.h has the
// formulas): what a trace records about an operation's operands, decoded
// here and nowhere else. Kineto operators carry args "Input Dims" and
// "Concrete Inputs" (record_shapes=True); HLO launches carry their dots'
// operand shapes and dimension numbers, and cuDNN attention's
// intermediate tensor (hlo_schedule.h). op_shape_reader.h decodes Kineto's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace profwatch::parse {

using Dims = std::vector<int64_t>;

// An xla dot: operand shapes and DotDimensionNumbers (dimension indices into
// lhs and rhs), as the module gives them: not validated here.
struct DotShape {
  Dims lhs, rhs;
  Dims lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
  bool operator==(const DotShape&) const = default;
};

// Scaled dot-product attention: query [B,H,Sq,D], key [B,H,Sk,D], value
// [B,H,Sk,Dv]; causal (a causal mask), backward (the gradient kernels).
struct AttentionShape {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  bool causal = false;
  bool backward = false;
};

// A Kineto operator's recorded shapes: nullopt where the arg is missing or
// not of the documented form.
struct OpShapes {
  // "Input Dims": one dims list per input ([] for non-tensors); every
  // entry a non-negative integer.
  std::optional<std::vector<Dims>> input_dims;
  // "Concrete Inputs": one string per input ("" for tensors).
  std::optional<std::vector<std::string>> concrete_inputs;
  // "Input type": one string per input, the element type of a tensor
  // ("c10::BFloat16", "float", "long int"), "" or the kind of a non-tensor
  // ("Scalar", "ScalarList", "TensorList").
  std::optional<std::vector<std::string>> input_types;
};

// A concrete input that holds integers: "[1, 2]" or "1" -> {1, 2} / {1};
// nullopt for anything else (negative numbers included).
std::optional<Dims> ConcreteInts(std::string_view text);

}  // namespace profwatch::parse
