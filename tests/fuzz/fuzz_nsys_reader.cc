// Fuzzes the SQLite trace readers (an nsys export, or a rocpd database when
// it holds a rocpd_kernel_dispatch table: ReadSqliteTrace): the NVTX text
// rules on the input as text, and the whole reader on the input as a
// database file (SQLite checks the
// pages; the reader must turn whatever it reports into an error, never a
// crash). Every kernel event must carry a device and a valid duration flag.
// Each input is read within a budget of one second (the reader's progress
// handler): a view or query that never ends is refused or cut, never a
// libFuzzer -timeout. The corpus keeps such hostile databases (recursive-CTE
// views in the kernel, NVTX and StringIds tables' places, and in a rocpd
// agent table's).
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "parse/nsys_reader.h"
#include "parse/rocpd_reader.h"

namespace {

class CheckSink : public profwatch::parse::EventSink {
 public:
  void OnEvent(const profwatch::parse::TraceEvent& e) override {
    if (e.ph != 'X') __builtin_trap();
    if (e.cat == profwatch::parse::kNsysKernelCat && !e.has_args_device) __builtin_trap();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto rank = profwatch::parse::RankOfNvtxText(input); rank && *rank < 0) __builtin_trap();
  if (auto step = profwatch::parse::StepOfNvtxText(input); step && *step < 0) __builtin_trap();

  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir != nullptr ? dir : "/tmp") + "/fuzz_nsys_" + std::to_string(getpid()) +
           ".sqlite";
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  CheckSink sink;
  profwatch::FileLimits limits;
  limits.max_bytes = 64 << 20;
  limits.max_time = std::chrono::seconds(1);
  profwatch::FileBudget budget(limits);
  (void)profwatch::parse::ReadSqliteTrace(path, sink, &budget);
  std::remove(path.c_str());
  return 0;
}
