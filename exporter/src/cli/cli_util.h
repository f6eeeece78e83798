// Small helpers shared by the CLI verbs.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/analyze.h"
#include "classify/classifier.h"
#include "core/budget.h"
#include "core/result.h"

namespace profwatch::cli {

// Parses `args` (without program name and verb) into `app`. Returns an exit
// code when the verb must stop now (help printed: 0; usage error: 2).
std::optional<int> ParseArgs(CLI::App& app, const std::string& verb,
                             const std::vector<std::string>& args);

// Numeric flag checks whose usage errors say the range in words and name the
// value given ("must be a whole number of at least 1, not '0'"), never
// CLI11's own range with the type's largest double written out. Each checks
// the text before CLI11 converts it, so a value that does not fit the flag's
// type is refused with the type's bounds too.
CLI::Validator WholeAtLeast(int64_t min, int64_t max = std::numeric_limits<int>::max());

// The default of --profile-steps as help states it, from the code's own
// default (aggregate::kDefaultProfileSteps): not set, the window's markers,
// the log's profiler_steps, NVTX step ranges, else that count. The option
// captures no default value: the variable's initial value is not what an
// absent flag means (issue #65: help said 3).
std::string ProfileStepsDefaultHelp();
CLI::Validator WholeAtLeastU64(uint64_t min);
// A finite number greater than `above` ("must be a number above 0").
CLI::Validator NumberAbove(double above);
// A finite number of at least `min`; `zero_means` says what 0 does, when
// 0 is the flag's "off" ("0: none").
CLI::Validator NumberAtLeast(double min, const std::string& zero_means = "");

// --skew of `analyze`/`compare`: a duration as serve takes it ("30s", "2m";
// a bare number is seconds), in whole seconds. nullopt after printing
// "profwatch VERB: --skew: ..." (a usage error, exit 2).
std::optional<int64_t> SkewSeconds(const std::string& verb, const std::string& text);

// Default of --spill-dir: $TMPDIR when set and not empty, else /tmp. The one
// place the environment chooses a directory; the engine gets the value.
std::string DefaultSpillDir();

// Adds --spill-dir (bound to `dir`) to a verb.
void AddSpillDirOption(CLI::App& app, std::string& dir);

// --file-max-bytes and --file-max-seconds (core/budget.h; 0: no limit).
struct FileBudgetFlags {
  uint64_t max_bytes = FileLimits{}.max_bytes;
  double max_seconds = std::chrono::duration<double>(FileLimits{}.max_time).count();
  FileLimits ToLimits() const;
};
void AddFileBudgetOptions(CLI::App& app, FileBudgetFlags& flags);

// The options `analyze` and `compare` share, defined once: base rule set,
// rules file, source, --skew, thread budget, spill directory, file budget.
struct AnalysisFlags {
  std::string rules = "auto";
  std::string families_file;
  std::string source = "auto";
  std::string skew = "120s";
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string spill_dir = DefaultSpillDir();
  FileBudgetFlags file_budget;
  // Sets threads, spill_dir, limits and source; the rule set and classifier
  // are each verb's choice.
  void ApplyTo(analysis::AnalyzeOptions& options) const;
};
void AddAnalysisOptions(CLI::App& app, AnalysisFlags& flags);

// --region-depth, --peak-flops and --peak-hbm-bandwidth: how a window's
// regions, MFU and roofline are modelled. Defined once; `analyze` and
// `serve` take them (`compare` analyses with the defaults).
struct ModelFlags {
  int region_depth = 3;
  double peak_flops = 0;          // per GPU for MFU; 0: the device's datasheet peak
  double peak_hbm_bandwidth = 0;  // bytes/s per GPU for the roofline; 0: the datasheet's
  void ApplyTo(aggregate::AggregateOptions& options) const;
};
void AddModelOptions(CLI::App& app, ModelFlags& flags);

// Builds a classifier from a built-in set plus an optional user rules file.
Result<std::shared_ptr<const classify::Classifier>> LoadClassifier(const std::string& base_set,
                                                                   const std::string& rules_file);

}  // namespace profwatch::cli
