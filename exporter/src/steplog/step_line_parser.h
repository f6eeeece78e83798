// Pure parsers for the two MaxText training-log line kinds profwatch reads:
//   completed step: 12, seconds: 5.789, TFLOP/s/device: 216.055, ...
//   Config param skip_first_n_steps_for_profiler: 5
// No I/O, no allocation beyond the returned values, no locale (numbers go
// through std::from_chars). Thread-safe: free functions on caller-owned views.
//
// Step lines are parsed by key, not by position: wrappers insert
// `, MFU: 8.64%` after TFLOP/s, newer MaxText appends keys (lm_loss,
// perplexity, moe_lb_loss, ...), and lines carry arbitrary prefixes
// (timestamps, "srun: ", "[node3] ", glog headers). Unknown keys are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "steplog/limits.h"

namespace profwatch::steplog {

// The marker that makes a line a step line. A line containing it that does
// not parse as a step line is a parse error (the caller counts it).
inline constexpr std::string_view kStepLineMarker = "completed step:";
inline constexpr std::string_view kConfigParamMarker = "Config param ";

// One `completed step:` line of one node.
struct StepLine {
  int64_t step = 0;                                    // >= 0
  double seconds = 0.0;                                // finite, >= 0
  std::optional<double> tflops_per_device;             // "TFLOP/s/device"
  std::optional<double> tokens_per_second_per_device;  // "Tokens/s/device"
  // "MFU": "8.64%" -> 0.0864. Without a '%' sign a value <= 1 is taken as a
  // ratio and a larger one as a percentage.
  std::optional<double> mfu_ratio;
  std::optional<double> loss;           // may be NaN/inf when training diverged
  std::optional<double> total_weights;  // an integer count in MaxText; kept as double

  bool operator==(const StepLine&) const = default;
};

// True when `line` contains kStepLineMarker, i.e. it claims to be a step line.
bool LooksLikeStepLine(std::string_view line);

// Parses the first `completed step:` record in `line`. nullopt when the line
// is not a step line, or when `step` or `seconds` is missing or malformed
// (an integer step in 0..kMaxStepNumber; finite seconds >= 0). An optional known key whose
// value does not parse is left unset rather than failing the line. The record
// ends at a second marker in the same line (interleaved output of two nodes).
std::optional<StepLine> ParseStepLine(std::string_view line);

// `Config param <name>: <value>` (MaxText prints its whole config at start).
struct ConfigParam {
  std::string name;   // non-empty, no whitespace
  std::string value;  // trimmed; may be empty (e.g. `profiler: ` = off)

  bool operator==(const ConfigParam&) const = default;
};

// Parses a config-param line anywhere after a prefix. nullopt when the marker,
// the name or the ':' separator is missing.
std::optional<ConfigParam> ParseConfigParamLine(std::string_view line);

}  // namespace profwatch::steplog
