#include "cli/cli_util.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cli/serve_flags.h"

namespace profwatch::cli {

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
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--file-max-seconds", flags.max_seconds,
                 "Per trace file: most seconds of reading; a file past it fails with reason "
                 "over_budget (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
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
    app.exit(e);
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
