// Decodes a Kineto operator's recorded shapes (parse::OpShapes) from the raw
// JSON arrays a TraceEvent carries. Apart from op_shapes.h so that users of
// the shape types do not include simdjson.
#pragma once

#include <simdjson.h>

#include <string_view>

#include "parse/op_shapes.h"

namespace profwatch::parse {

// Decodes OpShapes from the raw JSON arrays a TraceEvent carries
// (args_input_dims, args_concrete_inputs, args_input_type). Owns its JSON
// parser: one reader per thread (an aggregator owns one).
class OpShapeReader {
 public:
  OpShapes Read(std::string_view input_dims, std::string_view concrete_inputs,
                std::string_view input_types = {});

 private:
  simdjson::dom::parser parser_;
};

}  // namespace profwatch::parse
