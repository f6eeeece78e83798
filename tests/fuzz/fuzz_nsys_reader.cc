// Fuzzes the nsys export reader: the NVTX text rules on the input as text,
// and the whole reader on the input as a database file (SQLite checks the
// pages; the reader must turn whatever it reports into an error, never a
// crash). Every kernel event must carry a device and a valid duration flag.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "parse/nsys_reader.h"

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
  (void)profwatch::parse::ReadNsysExport(path, sink);
  std::remove(path.c_str());
  return 0;
}
