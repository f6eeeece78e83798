// Fuzzes the rocprofv3 JSON reader on the input as a file's bytes: it must
// end with events or an error, never a crash; every event it emits carries
// a device (kernels, copies), a non-negative duration and exact times; and
// the events do not depend on where reads end (whole input vs 7-byte reads).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "parse/rocprof_reader.h"
#include "read/byte_source.h"

namespace {

class CheckSink : public profwatch::parse::EventSink {
 public:
  void OnEvent(const profwatch::parse::TraceEvent& e) override {
    if (e.ph != 'X' || !e.has_ts || !e.has_dur || !e.dur_exact || e.dur_ps < 0) __builtin_trap();
    if (e.cat != profwatch::parse::kNsysStepCat && !e.has_args_device) __builtin_trap();
    seen.push_back(e.ts_ps ^ (e.dur_ps << 1) ^ static_cast<int64_t>(e.name.size()));
  }
  std::vector<int64_t> seen;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  (void)profwatch::parse::LooksLikeRocprofJson(input);
  CheckSink whole, pieces;
  profwatch::read::MemorySource a(input);
  const auto ra = profwatch::parse::ReadRocprofJson(a, whole);
  profwatch::read::MemorySource b(input);
  b.SetMaxChunk(7);
  profwatch::parse::RocprofOptions small;
  small.chunk_bytes = 64;
  const auto rb = profwatch::parse::ReadRocprofJson(b, pieces, small);
  if (ra.has_value() != rb.has_value() || whole.seen != pieces.seen) __builtin_trap();
  return 0;
}
