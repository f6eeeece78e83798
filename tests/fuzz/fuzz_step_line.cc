// Fuzzes the training-log line parsers and the step-time source on arbitrary
// bytes: each input is split into lines and fed through everything a log
// line can reach. Must never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/clock.h"
#include "steplog/log_tailer.h"
#include "steplog/step_line_parser.h"
#include "steplog/step_time_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // The whole input as one (possibly huge, binary) line.
  (void)profwatch::steplog::ParseStepLine(input);
  (void)profwatch::steplog::ParseConfigParamLine(input);
  // Persisted tailer state is read back from disk too: it must round-trip.
  if (auto state = profwatch::steplog::TailerState::Parse(input)) {
    auto again = profwatch::steplog::TailerState::Parse(state->Serialize());
    if (!again || !(*again == *state)) __builtin_trap();
  }

  profwatch::FakeClock clock;
  profwatch::steplog::StepTimeOptions options;
  options.max_retained_steps = 64;
  options.steady_window = 8;
  profwatch::steplog::StepTimeSource source(clock, options);
  while (!input.empty()) {
    size_t nl = input.find('\n');
    std::string_view line = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
    if (auto step = profwatch::steplog::ParseStepLine(line)) {
      if (step->seconds < 0 || step->step < 0) __builtin_trap();
    }
    source.AddLine(line);
  }
  (void)source.steady_step_seconds();
  if (auto last = source.last_step()) {
    (void)source.Classify(*last);
    (void)source.ProfiledRanges(*last);
  }
  (void)source.Steps();
  if (auto window = source.LatestWindow()) {
    const auto t = source.WindowSteadySeconds(*window);
    if (t.steps > 0 && !t.seconds) __builtin_trap();
    (void)source.LatestWindow(&*window);
  }
  return 0;
}
