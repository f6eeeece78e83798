#include "steplog/step_line_parser.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace profwatch::steplog {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Keys are matched case-insensitively: wrappers re-spell them ("Loss", "mfu").
bool KeyIs(std::string_view key, std::string_view want) {
  if (key.size() != want.size()) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    if (LowerAscii(key[i]) != LowerAscii(want[i])) return false;
  }
  return true;
}

// The whole of `s` must be the number: "5.789s" is not 5.789.
std::optional<double> ParseDouble(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<int64_t> ParseStep(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size() || value < 0 || value > kMaxStepNumber)
    return std::nullopt;
  return value;
}

std::optional<double> ParseMfu(std::string_view s) {
  bool percent = false;
  if (!s.empty() && s.back() == '%') {
    percent = true;
    s = Trim(s.substr(0, s.size() - 1));
  }
  std::optional<double> v = ParseDouble(s);
  if (!v || !std::isfinite(*v) || *v < 0) return std::nullopt;
  if (percent || *v > 1.0) return *v / 100.0;
  return v;
}

std::optional<double> ParseFiniteNonNegative(std::string_view s) {
  std::optional<double> v = ParseDouble(s);
  if (!v || !std::isfinite(*v) || *v < 0) return std::nullopt;
  return v;
}

}  // namespace

bool LooksLikeStepLine(std::string_view line) {
  return line.find(kStepLineMarker) != std::string_view::npos;
}

std::optional<StepLine> ParseStepLine(std::string_view line) {
  size_t start = line.find(kStepLineMarker);
  if (start == std::string_view::npos) return std::nullopt;
  std::string_view record = line.substr(start);
  // A second marker means two nodes' output were interleaved on one line:
  // the first record ends where the second begins.
  size_t next = record.find(kStepLineMarker, kStepLineMarker.size());
  if (next != std::string_view::npos) record = record.substr(0, next);

  std::optional<int64_t> step;
  std::optional<double> seconds;
  StepLine out;
  while (!record.empty()) {
    size_t comma = record.find(',');
    std::string_view field = record.substr(0, comma);
    record = comma == std::string_view::npos ? std::string_view() : record.substr(comma + 1);
    size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;  // e.g. a piece of a list value
    std::string_view key = Trim(field.substr(0, colon));
    std::string_view value = Trim(field.substr(colon + 1));
    // First occurrence wins, so an appended duplicate key cannot override.
    if (KeyIs(key, "completed step")) {
      if (!step) step = ParseStep(value);
    } else if (KeyIs(key, "seconds")) {
      if (!seconds) seconds = ParseFiniteNonNegative(value);
    } else if (KeyIs(key, "TFLOP/s/device") || KeyIs(key, "TFLOPs/s/device")) {
      if (!out.tflops_per_device) out.tflops_per_device = ParseFiniteNonNegative(value);
    } else if (KeyIs(key, "Tokens/s/device")) {
      if (!out.tokens_per_second_per_device) {
        out.tokens_per_second_per_device = ParseFiniteNonNegative(value);
      }
    } else if (KeyIs(key, "MFU")) {
      if (!out.mfu_ratio) out.mfu_ratio = ParseMfu(value);
    } else if (KeyIs(key, "loss")) {
      if (!out.loss) out.loss = ParseDouble(value);
    } else if (KeyIs(key, "total_weights")) {
      if (!out.total_weights) out.total_weights = ParseFiniteNonNegative(value);
    }
  }
  if (!step || !seconds) return std::nullopt;
  out.step = *step;
  out.seconds = *seconds;
  return out;
}

std::optional<ConfigParam> ParseConfigParamLine(std::string_view line) {
  size_t start = line.find(kConfigParamMarker);
  if (start == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(start + kConfigParamMarker.size());
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view name = Trim(rest.substr(0, colon));
  if (name.empty()) return std::nullopt;
  for (char c : name) {
    if (IsSpace(c)) return std::nullopt;
  }
  return ConfigParam{std::string(name), std::string(Trim(rest.substr(colon + 1)))};
}

}  // namespace profwatch::steplog
