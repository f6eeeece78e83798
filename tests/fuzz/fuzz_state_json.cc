// Fuzzes the --state file reader (store/state_json) on arbitrary bytes: it
// must never crash or throw, and whatever it accepts must survive a
// serialize/parse round trip unchanged (the daemon rewrites what it read).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "store/state_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  (void)profwatch::store::ParseRunState(input);
  auto snap = profwatch::store::ParseState(input);
  if (!snap) return 0;
  const std::string once = profwatch::store::SerializeState(*snap);
  auto again = profwatch::store::ParseState(once);
  if (!again) __builtin_trap();
  if (profwatch::store::SerializeState(*again) != once) __builtin_trap();
  return 0;
}
