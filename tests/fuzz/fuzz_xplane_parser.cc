// Fuzz entry: arbitrary bytes as an .xplane.pb. The first byte picks the read
// size (so reads split varints and planes at every position) and whether host
// events are emitted; the rest is the XSpace, also read for its HLO modules and
// its device name. Must never crash, hang or allocate beyond the plane limit;
// every event handed out must be sane, and every HLO module kept within
// parse::HloLimits (scripts/fuzz.sh runs it under a per-input time and memory
// limit; the corpus holds crafted modules that call themselves or expand
// without end).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "parse/xplane_parser.h"
#include "read/byte_source.h"

namespace {

class CheckingSink final : public profwatch::parse::EventSink {
 public:
  void OnEvent(const profwatch::parse::TraceEvent& e) override {
    if (e.ph != 'X' && e.ph != 'M') std::abort();
    if (e.ph == 'X' && !(e.has_ts && e.has_dur && e.dur_exact)) std::abort();
    // Touch every view so ASan sees dangling ones.
    for (char c : e.name) sum_ += static_cast<unsigned char>(c);
    for (char c : e.args_name) sum_ += static_cast<unsigned char>(c);
  }
  uint64_t sum_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  profwatch::read::MemorySource source(
      std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  source.SetMaxChunk(1 + (control & 0x3f));
  profwatch::parse::ParseOptions options;
  options.chunk_bytes = 64 + (control & 0x3f);
  profwatch::parse::XPlaneOptions xplane;
  xplane.host_events = (control & 0x40) != 0;
  xplane.max_plane_bytes = 1 << 20;
  CheckingSink sink;
  auto parser = profwatch::parse::MakeXPlaneParser(options, xplane);
  auto result = parser->Parse(source, sink);
  if (result && result->events == 0 && result->drops.empty() && !result->has_trace_events)
    std::abort();
  // The same bytes as the HLO modules of a CUDA-graph window.
  profwatch::read::MemorySource again(
      std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  again.SetMaxChunk(1 + (control & 0x3f));
  auto index = profwatch::parse::ReadXPlaneHloModules(again, 64 + (control & 0x3f), 1 << 20);
  if (index) {
    // A kept module stayed within every bound; a skipped one holds nothing.
    const profwatch::parse::HloLimits limits;
    for (const auto& [name, module] : index->modules) {
      if (!module.too_complex.empty() || module.cost.instructions > limits.max_instructions ||
          module.cost.expanded > limits.max_expanded || module.cost.depth > limits.max_depth ||
          module.launches.size() > module.cost.expanded) {
        std::abort();
      }
      for (const auto& launch : module.launches) {
        if (launch.scope >= module.scopes.size()) std::abort();
        // Bytes from untrusted shapes: unknown (nullopt) or a real count.
        if (launch.bytes && *launch.bytes < 0) std::abort();
      }
    }
    for (const auto& [name, why] : index->too_complex) {
      if (index->modules.count(name) != 0 || !why.starts_with("too_complex: ")) std::abort();
    }
  }
  // The same bytes as the xplane beside a JAX JSON: its device name.
  profwatch::read::MemorySource third(
      std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  third.SetMaxChunk(1 + (control & 0x3f));
  auto names = profwatch::parse::ReadXPlaneDeviceNames(third, 64 + (control & 0x3f));
  if (names) {
    for (const std::string& n : *names) {
      if (n.empty()) std::abort();
    }
  }
  return 0;
}
