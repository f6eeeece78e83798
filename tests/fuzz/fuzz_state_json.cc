// Fuzzes the --state file reader (expose/state_json) on arbitrary bytes: it
// must never crash or throw, and whatever it accepts must survive a
// serialize/parse round trip unchanged (the daemon rewrites what it read).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "expose/state_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  (void)profwatch::expose::ParseRunState(input);
  auto snap = profwatch::expose::ParseState(input);
  if (!snap) return 0;
  const std::string once = profwatch::expose::SerializeState(*snap);
  auto again = profwatch::expose::ParseState(once);
  if (!again) __builtin_trap();
  if (profwatch::expose::SerializeState(*again) != once) __builtin_trap();
  return 0;
}
