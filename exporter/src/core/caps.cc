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

std::string RenderOwnerCapsTable() {
  std::string out = "| Cap | Default | What is past it | Why this default |\n|---|---|---|---|\n";
  for (const Cap* c : kOwnerCaps) {
    out += "| `" + std::string(c->flag) + "`";
    if (!c->reason.empty()) out += " (`reason=\"" + std::string(c->reason) + "\"`)";
    out += " | ";
    out += c->bytes ? Thousands(c->value >> 20) + " MiB" : Thousands(c->value);
    out += " | " + std::string(c->past) + " | " + std::string(c->why) + " |\n";
  }
  return out;
}

}  // namespace profwatch::caps
