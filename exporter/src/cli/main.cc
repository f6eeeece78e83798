// profwatch entry point: dispatches to the analyze / serve / compare verbs.
// Only this file (through the verbs' return values) picks exit codes.
//
// `serve` runs the daemon binary installed next to this one (profwatch-serve,
// serve_main.cc) in this process (exec): only it links the daemon's libraries
// (prometheus-cpp, civetweb, spdlog, fmt), so the one-shot verbs do not load
// them, ~0.9 ms of every `analyze` start (and `-Wl,--as-needed` drops them).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli/commands.h"
#include "core/build_revision.h"
#include "core/heap_tuning.h"

namespace {

constexpr const char* kUsage =
    "usage: profwatch <command> [options]\n"
    "\n"
    "commands:\n"
    "  analyze PATH...   one-shot report for trace files, a <ts> dir, or a run/job dir\n"
    "  serve             watch job directories and expose Prometheus metrics\n"
    "  compare PATH...   variants side by side\n"
    "  version           print the version\n"
    "\n"
    "Run 'profwatch <command> --help' for the command's options.\n";

constexpr const char* kServeBinary = "profwatch-serve";

// Replaces this process with `<dir of this executable>/profwatch-serve ARGS`;
// returns only on failure (exit code 2, as for a usage error: nothing ran).
int ExecServe(char** args) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string path = ec ? std::string(kServeBinary)  // then found through PATH
                              : (self.parent_path() / kServeBinary).string();
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  for (char** a = args; *a != nullptr; ++a) argv.push_back(*a);
  argv.push_back(nullptr);
  if (ec) {
    execvp(path.c_str(), argv.data());
  } else {
    execv(path.c_str(), argv.data());
  }
  std::fprintf(stderr,
               "profwatch: cannot run the daemon %s: %s\n"
               "(`profwatch serve` runs %s, installed in the same directory as profwatch)\n",
               path.c_str(), std::strerror(errno), kServeBinary);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  profwatch::KeepBuffersInHeap();  // see core/heap_tuning.h
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string_view verb = argv[1];
  if (verb == "serve") return ExecServe(argv + 2);
  std::vector<std::string> args(argv + 2, argv + argc);
  if (verb == "analyze" || verb == "compare") {
    profwatch::BackHeapWithHugePages();  // one-shot runs only: see core/heap_tuning.h
    return verb == "analyze" ? profwatch::cli::RunAnalyze(args) : profwatch::cli::RunCompare(args);
  }
  if (verb == "version" || verb == "--version") {
    std::printf("profwatch %s (revision %s)\n", PROFWATCH_VERSION, profwatch::BuildRevision());
    return 0;
  }
  if (verb == "help" || verb == "--help" || verb == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "profwatch: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
