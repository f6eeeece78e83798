#include "core/caps.h"

namespace profwatch::caps {
namespace {

// 1000000 -> "1,000,000".
std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string RenderCapsTable(const Cap* const* caps, size_t n) {
  std::string out = "| Cap | Default | What is past it | Why this default |\n|---|---|---|---|\n";
  for (size_t i = 0; i < n; ++i) {
    const Cap* c = caps[i];
    out += "| `" + std::string(c->flag) + "`";
    if (!c->reason.empty()) out += " (`reason=\"" + std::string(c->reason) + "\"`)";
    out += " | ";
    switch (c->unit) {
      case Unit::kBytes:
        out += c->value >= (int64_t{1} << 30) && c->value % (int64_t{1} << 30) == 0
                   ? Thousands(c->value >> 30) + " GiB"
                   : Thousands(c->value >> 20) + " MiB";
        break;
      case Unit::kSeconds:
        out += Thousands(c->value) + " s";
        break;
      case Unit::kCount:
        out += Thousands(c->value);
        break;
    }
    out += " | " + std::string(c->past) + " | " + std::string(c->why) + " |\n";
  }
  return out;
}

}  // namespace profwatch::caps
