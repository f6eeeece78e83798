#include "drill/drill_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "classify/classifier.h"

namespace profwatch::drill {
namespace {

// Drill-down tags, in the script's order (loop_gather_fusion is not one).
constexpr std::array<std::string_view, 7> kDrillTags = {
    "input_scatter_fusion",         "loop_select_fusion", "loop_convert_fusion",
    "loop_transpose_fusion",        "loop_reduce_fusion", "input_reduce_select",
    "input_broadcast_reduce_select"};

// Family aggregates, exclusive, first match wins, in the script's order.
constexpr std::array<std::string_view, 13> kFamilies = {
    "RaggedAllToAllKernelImpl", "primus_turbo::deep_ep",
    "input_scatter_fusion",     "loop_select_fusion",
    "loop_gather_fusion",       "loop_reduce_fusion",
    "loop_convert_fusion",      "loop_transpose_fusion",
    "input_reduce_select",      "input_broadcast_reduce_select",
    "RCCL ncclDevKernel",       "CK+primus GEMM (non-DeepEP)",
    "flash_attn (fmha)"};

bool Contains(std::string_view s, std::string_view t) {
  return s.find(t) != std::string_view::npos;
}

// Index into kFamilies, or -1 for "Other kernels".
int DrillFamilyOf(std::string_view name) {
  if (Contains(name, "RaggedAllToAllKernelImpl")) return 0;
  if (Contains(name, "primus_turbo::deep_ep")) return 1;
  for (int i = 2; i <= 9; ++i) {
    if (Contains(name, kFamilies[i])) return i;
  }
  if (name.starts_with("ncclDevKernel")) return 10;
  if (!Contains(name, "primus_turbo::deep_ep") &&
      (Contains(name, "ck_tile::") || Contains(name, "primus_turbo::") || Contains(name, "Cijk_")))
    return 11;
  if (Contains(name, "aiter") && Contains(name, "fmha")) return 12;
  return -1;
}

// Python's set key of (file argument, pid): 1, 1.0 and True are one key;
// a missing pid and null are both None.
std::string GpuKey(const std::string& file, const parse::Id& pid) {
  std::string key = file;
  key.push_back('\0');
  // append() rather than operator+ temporaries: GCC 12 -O3 reports a false
  // -Wrestrict on `key += "i" + std::to_string(...)`.
  switch (pid.kind) {
    case parse::IdKind::kMissing:
      key.append("n");
      break;
    case parse::IdKind::kInt:
      key.append("i").append(std::to_string(pid.num));
      break;
    case parse::IdKind::kString:
      key.append("s").append(pid.str);
      break;
    case parse::IdKind::kOther:
      key.append("o").append(pid.str);
      break;
  }
  return key;
}

std::string Format(const char* fmt, auto... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string s(static_cast<size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

// Python floor division of non-negative ints (counts and divisors are > 0).
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

class DrillTally::Sink final : public parse::EventSink {
 public:
  explicit Sink(DrillTally* tally) : tally_(tally) {}
  void OnEvent(const parse::TraceEvent& e) override { tally_->Add(e); }

 private:
  DrillTally* tally_;
};

DrillTally::DrillTally() : sink_(std::make_unique<Sink>(this)) {}
DrillTally::~DrillTally() = default;

parse::EventSink& DrillTally::BeginFile(const std::string& file_arg) {
  current_file_ = file_arg;
  return *sink_;
}

void DrillTally::Add(const parse::TraceEvent& e) {
  if (e.ph != 'X' || !e.has_name || e.name.empty()) return;
  if (!classify::DrillIsKernelName(e.name)) return;
  std::string name(e.name);
  auto [it, inserted] = index_.try_emplace(name, names_.size());
  if (inserted) {
    names_.push_back(name);
    stats_.emplace_back();
  }
  NameStat& st = stats_[it->second];
  st.time_ms += (e.has_dur ? e.dur_us : 0.0) / 1000.0;
  st.count += 1;
  gpus_.insert(GpuKey(current_file_, e.pid));
}

DrillTally::Output DrillTally::Render(int file_count, int64_t profile_steps,
                                      int64_t family_top_n) const {
  Output o;
  const int64_t gpus = static_cast<int64_t>(gpus_.size());
  const int64_t divisor = gpus * profile_steps;
  if (divisor == 0) {
    o.err = "No GPU kernel events found \xe2\x80\x94 is this an xplane trace?\n";
    o.exit_code = 1;
    return o;
  }
  const double div = static_cast<double>(divisor);
  const double per_file = static_cast<double>(gpus) / static_cast<double>(file_count);
  std::string hint;
  if (per_file >= 2.0) {
    hint = Format("(looks like 1-node/proc, %.1f GPUs/file)", per_file);
  } else if (std::fabs(per_file - 1.0) < 0.05) {
    hint = "(looks like 1-GPU/proc, 1.0 GPU/file)";
  } else {
    hint = Format(
        "(%.2f GPUs/file \xe2\x80\x94 unusual, possibly missing trace files or mixed launcher)",
        per_file);
  }
  o.out += Format("trace_files=%d, GPUs auto-detected=%lld, profile_steps=%lld, divisor=%lld  ",
                  file_count, static_cast<long long>(gpus), static_cast<long long>(profile_steps),
                  static_cast<long long>(divisor));
  o.out += hint;
  o.out += "\n";

  for (std::string_view tag : kDrillTags) {
    std::vector<size_t> hits;
    for (size_t i = 0; i < names_.size(); ++i) {
      if (Contains(names_[i], tag)) hits.push_back(i);
    }
    std::stable_sort(hits.begin(), hits.end(),
                     [&](size_t a, size_t b) { return stats_[a].time_ms > stats_[b].time_ms; });
    if (family_top_n >= 0 && hits.size() > static_cast<size_t>(family_top_n)) {
      hits.resize(static_cast<size_t>(family_top_n));
    }
    if (hits.empty()) continue;
    o.out += "\n";
    o.out += std::string(tag) + "* kernels:\n";
    for (size_t i : hits) {
      o.out +=
          Format("  %8.1f ms/gpu/step  %7lld launches (%lld per gpu-step)  %s\n",
                 stats_[i].time_ms / div, static_cast<long long>(stats_[i].count),
                 static_cast<long long>(FloorDiv(stats_[i].count, divisor)), names_[i].c_str());
    }
  }

  std::array<double, kFamilies.size()> family_ms{};
  double other_ms = 0.0;  // Python sum(): left to right from 0
  double total_ms = 0.0;
  for (size_t i = 0; i < names_.size(); ++i) {
    int f = DrillFamilyOf(names_[i]);
    if (f >= 0) {
      family_ms[static_cast<size_t>(f)] += stats_[i].time_ms;
    } else {
      other_ms += stats_[i].time_ms;
    }
    total_ms += stats_[i].time_ms;
  }
  o.out += "\n--- Per-family aggregates (s/gpu/step) ---\n";
  for (size_t f = 0; f < kFamilies.size(); ++f) {
    o.out += Format("  %-32s %8.3f s/gpu/step\n", std::string(kFamilies[f]).c_str(),
                    family_ms[f] / div / 1000);
  }
  o.out += Format("  %-32s %8.3f s/gpu/step\n", "Other kernels", other_ms / div / 1000);
  o.out += Format("\nTotal kernel time: %.3f s/gpu/step\n", total_ms / div / 1000);
  return o;
}

}  // namespace profwatch::drill
