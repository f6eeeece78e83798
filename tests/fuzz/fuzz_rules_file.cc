// Fuzzes the family rules file parser and compiler: any bytes must give a
// RuleSet or a kConfig error, never a crash, hang or exception; a parsed set
// must compile (or fail cleanly) and classify a few names.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "classify/classifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profwatch::classify;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto base = BuiltinRuleSet(size % 2 == 0 ? "drill" : "nvidia");
  if (!base) return 0;
  auto set = ParseRulesText(text, "fuzz.yaml", std::move(*base));
  if (!set) {
    if (set.error().code != profwatch::ErrorCode::kConfig) __builtin_trap();
    return 0;
  }
  auto classifier = Classifier::Create(std::move(*set));
  if (!classifier) return 0;
  for (std::string_view name : {"Cijk_Ailk", "loop_add_fusion.kd", "", "nvjet_tst"}) {
    const FamilyId id = (*classifier)->Classify(name);
    if (id > (*classifier)->OtherId()) __builtin_trap();
  }
  return 0;
}
