// profwatch entry point: dispatches to the analyze / serve / compare / probe verbs.
// Only this file (through the verbs' return values) picks exit codes.
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "core/build_revision.h"
#include "core/log.h"

namespace {

constexpr const char* kUsage =
    "usage: profwatch <command> [options]\n"
    "\n"
    "commands:\n"
    "  analyze PATH...   one-shot report for trace files, a <ts> dir, or a run/job dir\n"
    "  serve             watch job directories and expose Prometheus metrics\n"
    "  compare PATH...   variants side by side\n"
    "  probe             exit 0 once a running daemon's /-/healthy (or --path) answers 200\n"
    "  version           print the version (also: --version, on any command)\n"
    "\n"
    "Run 'profwatch <command> --help' for the command's options.\n";

int PrintVersion() {
  std::printf("profwatch %s (revision %s)\n", PROFWATCH_VERSION, profwatch::BuildRevision());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string_view verb = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  const bool is_verb = verb == "analyze" || verb == "compare" || verb == "serve" || verb == "probe";
  if (verb == "version" || verb == "--version" ||
      (is_verb && std::find(args.begin(), args.end(), "--version") != args.end())) {
    return PrintVersion();
  }
  if (verb == "serve") return profwatch::cli::RunServe(args);
  if (verb == "probe") return profwatch::cli::RunProbe(args);
  if (verb == "analyze" || verb == "compare") {
    // Warnings of the analysis (a module skipped as too complex) go to
    // stderr: stdout is the report.
    (void)profwatch::SetupLogging("warn", profwatch::LogFormat::kText);
    return verb == "analyze" ? profwatch::cli::RunAnalyze(args) : profwatch::cli::RunCompare(args);
  }
  if (verb == "help" || verb == "--help" || verb == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "profwatch: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
