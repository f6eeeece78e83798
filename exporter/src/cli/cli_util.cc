#include "cli/cli_util.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "aggregate/profile_steps.h"
#include "cli/serve_flags.h"

namespace profwatch::cli {

namespace {

// A bound as a person writes it: 0, 1, 0.5 (at most 6 significant digits).
std::string Bound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The value as the user typed it, quoted, so an empty or odd value is visible.
std::string Quoted(const std::string& text) { return "'" + text + "'"; }

// `text` as a whole number in [min, max]: "" when it is one, else the reason.
// The bound named is the one a person needs: "at least MIN", and the whole
// range only for a value too large for the flag.
template <typename T>
std::string CheckWhole(const std::string& text, T min, T max) {
  T v{};
  const char* end = text.data() + text.size();
  // A leading '+' is a number too; from_chars takes none.
  const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(begin, end, v);
  const bool digits =
      !text.empty() && ptr == end && (ec == std::errc() || ec == std::errc::result_out_of_range);
  if (digits && ec == std::errc() && v >= min && v <= max) return "";
  const bool too_large =
      digits && (ec == std::errc::result_out_of_range ? text[0] != '-' : v > max);
  if (too_large) {
    return "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
           ", not " + Quoted(text);
  }
  return "must be a whole number of at least " + std::to_string(min) + ", not " + Quoted(text);
}

// `text` as a finite double: nullopt when it is not one.
std::optional<double> FiniteNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

CLI::Validator WholeAtLeast(int64_t min, int64_t max) {
  return CLI::Validator([min, max](std::string& text) { return CheckWhole(text, min, max); },
                        ">= " + std::to_string(min));
}

std::string ProfileStepsDefaultHelp() {
  return "default: not set: the window's Kineto ProfilerStep# markers, the training log's "
         "profiler_steps, Nsight NVTX step ranges, else " +
         std::to_string(aggregate::kDefaultProfileSteps);
}

CLI::Validator WholeAtLeastU64(uint64_t min) {
  return CLI::Validator(
      [min](std::string& text) {
        return CheckWhole<uint64_t>(text, min, std::numeric_limits<uint64_t>::max());
      },
      ">= " + std::to_string(min));
}

CLI::Validator NumberAbove(double above) {
  return CLI::Validator(
      [above](std::string& text) -> std::string {
        auto v = FiniteNumber(text);
        if (!v || *v <= above) {
          return "must be a number above " + Bound(above) + ", not " + Quoted(text);
        }
        return "";
      },
      "> " + Bound(above));
}

CLI::Validator NumberAtLeast(double min, const std::string& zero_means) {
  const std::string note = zero_means.empty() ? "" : " (0: " + zero_means + ")";
  return CLI::Validator(
      [min, note](std::string& text) -> std::string {
        auto v = FiniteNumber(text);
        if (!v || *v < min) {
          return "must be a number of at least " + Bound(min) + note + ", not " + Quoted(text);
        }
        return "";
      },
      ">= " + Bound(min));
}

std::optional<int64_t> SkewSeconds(const std::string& verb, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d) {
    std::fprintf(stderr, "profwatch %s: --skew: %s\n", verb.c_str(), d.error().context.c_str());
    return std::nullopt;
  }
  return std::chrono::duration_cast<std::chrono::seconds>(*d).count();
}

std::string DefaultSpillDir() {
  const char* d = std::getenv("TMPDIR");
  return d != nullptr && *d != '\0' ? std::string(d) : std::string("/tmp");
}

void AddSpillDirOption(CLI::App& app, std::string& dir) {
  app.add_option("--spill-dir", dir,
                 "Directory for the unlinked temp files that keep memory bounded on large "
                 "traces (default: $TMPDIR, else /tmp)")
      ->capture_default_str();
}

FileLimits FileBudgetFlags::ToLimits() const {
  FileLimits limits;
  limits.max_bytes = max_bytes;
  limits.max_time = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(max_seconds));
  return limits;
}

void AddFileBudgetOptions(CLI::App& app, FileBudgetFlags& flags) {
  app.add_option("--file-max-bytes", flags.max_bytes,
                 "Per trace file: most bytes read after decompression, and most bytes of "
                 "intervals spilled to disk; a file past it fails with reason over_budget "
                 "(0: no limit)")
      ->check(WholeAtLeastU64(0))
      ->capture_default_str();
  app.add_option("--file-max-seconds", flags.max_seconds,
                 "Per trace file: most seconds of reading; a file past it fails with reason "
                 "over_budget (0: no limit)")
      ->check(NumberAtLeast(0))
      ->capture_default_str();
}

void AddAnalysisOptions(CLI::App& app, AnalysisFlags& flags) {
  app.add_option("--rules", flags.rules, "Base family rule set: drill | nvidia | amd | auto")
      ->check(CLI::IsMember({"drill", "nvidia", "amd", "auto"}))
      ->capture_default_str();
  app.add_option("--families", flags.families_file,
                 "Family rules file (YAML/JSON) added before the base set");
  app.add_option("--source", flags.source,
                 "auto | json | xplane (auto: xplane when the JSON is capped or absent)")
      ->check(CLI::IsMember({"auto", "json", "xplane"}))
      ->capture_default_str();
  app.add_option("--skew", flags.skew,
                 "Largest gap between <ts> dirs of one window (a duration as serve takes it: "
                 "30s, 2m; a bare number is seconds)")
      ->capture_default_str();
  app.add_option(
         "--threads", flags.threads,
         "Thread budget: workers for files, then read-ahead and decode threads (1: one thread)")
      ->check(WholeAtLeast(1))
      ->capture_default_str();
  AddSpillDirOption(app, flags.spill_dir);
  AddFileBudgetOptions(app, flags.file_budget);
}

void AnalysisFlags::ApplyTo(analysis::AnalyzeOptions& options) const {
  options.threads = threads;
  options.spill_dir = spill_dir;
  options.limits = file_budget.ToLimits();
  options.source = *analysis::ParseSourcePreference(source);
}

void AddModelOptions(CLI::App& app, ModelFlags& flags) {
  app.add_option("--region-depth", flags.region_depth,
                 "Components of a model region (JAX scope path without jit frames)")
      ->check(WholeAtLeast(1))
      ->capture_default_str();
  app.add_option("--peak-flops", flags.peak_flops,
                 "Peak FLOP/s per GPU for MFU (default: the device's dense bf16 datasheet peak)")
      ->check(NumberAbove(0));
  app.add_option("--peak-hbm-bandwidth", flags.peak_hbm_bandwidth,
                 "Peak HBM bandwidth per GPU in bytes/s for the roofline (default: the "
                 "device's datasheet bandwidth)")
      ->check(NumberAbove(0));
}

void ModelFlags::ApplyTo(aggregate::AggregateOptions& options) const {
  options.region_depth = region_depth;
  options.peak_flops = peak_flops;
  options.peak_hbm_bandwidth = peak_hbm_bandwidth;
}

std::optional<int> ParseArgs(CLI::App& app, const std::string& verb,
                             const std::vector<std::string>& args) {
  std::vector<std::string> argv_store;
  argv_store.push_back("profwatch " + verb);
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const auto& a : argv_store) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Named like the verbs' own usage errors ("profwatch analyze: --threads:
    // must be ..."); always exit 2.
    std::fprintf(stderr, "profwatch %s: %s\nRun 'profwatch %s --help' for every flag.\n",
                 verb.c_str(), e.what(), verb.c_str());
    return 2;
  }
  return std::nullopt;
}

Result<std::shared_ptr<const classify::Classifier>> LoadClassifier(const std::string& base_set,
                                                                   const std::string& rules_file) {
  auto base = classify::BuiltinRuleSet(base_set);
  if (!base) return tl::unexpected(base.error());
  classify::RuleSet set = std::move(*base);
  if (!rules_file.empty()) {
    auto loaded = classify::LoadRulesFile(rules_file, std::move(set));
    if (!loaded) return tl::unexpected(loaded.error());
    set = std::move(*loaded);
  }
  return classify::Classifier::Create(std::move(set));
}

}  // namespace profwatch::cli
