// Decodes a Kineto operator's recorded shapes (parse::OpShapes) from the raw
// JSON arrays a TraceEvent carries. Apart from op_shapes.h so that users of
// the shape types do not include simdjson.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parse/op_shapes.h"

namespace profwatch::parse {

// Decodes OpShapes from the raw JSON arrays a TraceEvent carries
// (args_input_dims, args_concrete_inputs, args_input_type). Owns its JSON
// parser: one reader per thread (an aggregator owns one).
class OpShapeReader {
 public:
  OpShapes Read(std::string_view input_dims, std::string_view concrete_inputs,
                std::string_view input_types = {});
  // The element count of each entry of an "Input Dims" array: the product
  // of its dims; a TensorList entry (a list of dims lists) counts its first
  // tensor; nullopt for an entry that is no tensor ([], [[]], a negative or
  // non-integer dim, an overflowing product). Empty when `input_dims` is not
  // a JSON array. Whitespace between tokens is JSON's: any.
  std::vector<std::optional<int64_t>> InputElements(std::string_view input_dims);
  // The strings of a JSON array of strings ("Input type", "Concrete
  // Inputs"); nullopt when `json` is anything else.
  std::optional<std::vector<std::string>> Strings(std::string_view json);

 private:
  simdjson::dom::parser parser_;
};

}  // namespace profwatch::parse
