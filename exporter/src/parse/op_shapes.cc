#include "parse/op_shapes.h"

#include <charconv>

#include "parse/op_shape_reader.h"

namespace profwatch::parse {

OpShapes OpShapeReader::Read(std::string_view input_dims, std::string_view concrete_inputs,
                             std::string_view input_types) {
  OpShapes out;
  simdjson::dom::element doc;
  simdjson::dom::array items;
  if (!input_dims.empty() && !parser_.parse(simdjson::padded_string(input_dims)).get(doc) &&
      !doc.get_array().get(items)) {
    std::vector<Dims> all;
    bool ok = true;
    for (simdjson::dom::element input : items) {
      simdjson::dom::array dims;
      if (input.get_array().get(dims)) {
        ok = false;
        break;
      }
      Dims d;
      for (simdjson::dom::element v : dims) {
        int64_t n = 0;
        if (v.get_int64().get(n) || n < 0) {
          ok = false;
          break;
        }
        d.push_back(n);
      }
      if (!ok) break;
      all.push_back(std::move(d));
    }
    if (ok) out.input_dims = std::move(all);
  }
  out.concrete_inputs = Strings(concrete_inputs);
  out.input_types = Strings(input_types);
  return out;
}

std::optional<std::vector<std::string>> OpShapeReader::Strings(std::string_view json) {
  simdjson::dom::element doc;
  simdjson::dom::array items;
  if (json.empty() || parser_.parse(simdjson::padded_string(json)).get(doc) ||
      doc.get_array().get(items)) {
    return std::nullopt;
  }
  std::vector<std::string> all;
  for (simdjson::dom::element v : items) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    all.emplace_back(s);
  }
  return all;
}

std::vector<std::optional<int64_t>> OpShapeReader::InputElements(std::string_view input_dims) {
  std::vector<std::optional<int64_t>> out;
  simdjson::dom::element doc;
  simdjson::dom::array items;
  if (input_dims.empty() || parser_.parse(simdjson::padded_string(input_dims)).get(doc) ||
      doc.get_array().get(items)) {
    return out;
  }
  // The product of an array of non-negative integers; nullopt otherwise.
  auto product = [](simdjson::dom::array dims) -> std::optional<int64_t> {
    int64_t n = 1;
    for (simdjson::dom::element v : dims) {
      int64_t d = 0;
      if (v.get_int64().get(d) || d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
    }
    return n;
  };
  for (simdjson::dom::element input : items) {
    std::optional<int64_t> n;
    simdjson::dom::array dims;
    if (!input.get_array().get(dims) && dims.size() > 0) {
      simdjson::dom::array first;
      if (!dims.at(0).get_array().get(first)) {
        if (first.size() > 0) n = product(first);  // a TensorList: its first tensor
      } else {
        n = product(dims);
      }
    }
    out.push_back(n);
  }
  return out;
}

std::optional<Dims> ConcreteInts(std::string_view text) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  text = trim(text);
  if (text.starts_with('[')) {
    if (!text.ends_with(']')) return std::nullopt;
    text = trim(text.substr(1, text.size() - 2));
    if (text.empty()) return Dims{};
  }
  Dims out;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    int64_t n = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || n < 0) {
      return std::nullopt;
    }
    out.push_back(n);
    if (comma == std::string_view::npos) return out;
    text = text.substr(comma + 1);
  }
}

}  // namespace profwatch::parse
