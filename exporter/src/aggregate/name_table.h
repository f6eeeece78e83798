// Internal to aggregate/ (WindowNames and NameLimits are also set by
// analysis/). The names a window's analysis keeps, bounded where they are
// read (docs/security.md, "What a window keeps"):
//  - a name longer than NameLimits::max_name_bytes is kept cut (CutName:
//    its first bytes, a marker with the whole length and a hash of the
//    whole, so two long names stay two);
//  - each file keeps at most max_names_per_file distinct names per table
//    (kernel names, scopes, ...);
//  - the window keeps at most max_names_per_window distinct names of at
//    most max_name_bytes_per_window bytes together, in one pool
//    (WindowNames) that its files share: a name kept by several files is
//    kept (and charged) once, and every file's table holds views into it.
// Callers put what is over a cap under an "other names" entry with its
// time (KernelTable), never drop it silently.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "classify/classifier.h"
#include "core/caps.h"

namespace profwatch::aggregate {

struct NameLimits {
  // Bytes of one kept name. A real cuDNN kernel name in the fixtures has
  // 5,123 characters; C++ template names can be longer still.
  size_t max_name_bytes = size_t{16} << 10;
  // Distinct names one file keeps in one table (kernel names, scopes,
  // annotation regions). The real fixtures hold at most 194 per window.
  size_t max_names_per_file = size_t{32} << 10;
  // Distinct names the whole window keeps (all tables of all its files).
  size_t max_names_per_window = size_t{64} << 10;
  size_t max_name_bytes_per_window = size_t{64} << 20;
  // (device, kernel name) pairs the window keeps apart, over all its files:
  // each is a slot with its own intervals and counters, so without this a
  // window's memory grew with files x devices x names (100 files of 1,024
  // devices x 128 names: 13 million slots). Past it a device's further
  // names share its "other kernel names" slot of the same family judgement
  // (drops["device_name_limit"]): family figures stay exact, top-kernel
  // lists lose those names. A 1,024-host job of 8 GPUs with 200 kernel names
  // each has 1.6 million pairs.
  size_t max_device_names_per_window = static_cast<size_t>(caps::kDeviceNamesPerWindow.value);
  // Step markers the window keeps over all its files (a file keeps at most
  // kMaxSteps): 24 bytes each, so a window of many files of
  // 65,536 markers stays within 24 MiB; past it "step_limit".
  size_t max_steps_per_window = static_cast<size_t>(caps::kStepsPerWindow.value);
};

// `name` when it fits `max_bytes`, else its first bytes (cut at a UTF-8
// character boundary) and "…[<n> bytes #<hash>]": at most max_bytes bytes
// (max_bytes >= 64), distinct for distinct names of one prefix.
std::string CutName(std::string_view name, size_t max_bytes);

// The pool of a window's kept names and the rule sets its kernels may be
// classified by. Shared by the window's FileAggregators (thread-safe).
class WindowNames {
 public:
  // `candidates`: the classifiers Finish may be given (the one the rules
  // name, or every set `--rules auto` may pick); a cut or uncounted kernel
  // name is classified by each of them on its whole name at intake.
  explicit WindowNames(NameLimits limits = {},
                       std::vector<std::shared_ptr<const classify::Classifier>> candidates = {});
  WindowNames(const WindowNames&) = delete;
  WindowNames& operator=(const WindowNames&) = delete;

  const NameLimits& limits() const { return limits_; }
  const std::vector<std::shared_ptr<const classify::Classifier>>& candidates() const {
    return candidates_;
  }
  // A view of `name` (at most limits().max_name_bytes) that lives as long as
  // the pool: the pool's copy, added when new and within the window's caps;
  // nullopt when the window is full.
  std::optional<std::string_view> Keep(std::string_view name);
  // The same for the few fixed names of the "other" entries: kept whatever
  // the caps.
  std::string_view KeepAlways(std::string_view name);
  size_t names() const;
  uint64_t bytes() const;
  // Takes one (device, name) slot of the window's
  // max_device_names_per_window; false once they are all taken.
  bool TakeDeviceName() {
    return device_names_.fetch_add(1, std::memory_order_relaxed) <
           limits_.max_device_names_per_window;
  }
  // The same for one step marker of max_steps_per_window.
  bool TakeStep() {
    return steps_.fetch_add(1, std::memory_order_relaxed) < limits_.max_steps_per_window;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  const NameLimits limits_;
  const std::vector<std::shared_ptr<const classify::Classifier>> candidates_;
  mutable std::mutex mu_;
  std::unordered_set<std::string, Hash, std::equal_to<>> names_;  // under mu_
  uint64_t bytes_ = 0;                                            // under mu_
  std::atomic<size_t> device_names_{0};                           // TakeDeviceName
  std::atomic<size_t> steps_{0};                                  // TakeStep
};

// Names of one file interned to dense ids 0, 1, 2, ... in first-seen order,
// as views into a WindowNames pool (or into storage of its own when it has
// none). Not thread-safe (one owner).
class NameTable {
 public:
  // `pool` null: the table keeps its own copies, unbounded but for the
  // caller's own caps (short tables such as HLO module names).
  explicit NameTable(WindowNames* pool = nullptr) : pool_(pool) {}
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  // The id of `s` when the table has it.
  std::optional<uint32_t> Find(std::string_view s) const {
    if (auto it = ids_.find(s); it != ids_.end()) return it->second;
    return std::nullopt;
  }
  // Adds `s` (not in the table yet); nullopt when the pool is full.
  std::optional<uint32_t> Add(std::string_view s);
  // Adds an id named `s` that Find never returns (an "other" entry; several
  // may share one name).
  uint32_t AddUnindexed(std::string_view s);
  // The id of `s`, added when new (pool permitting: nullopt when full).
  std::optional<uint32_t> Intern(std::string_view s, bool& added);
  std::string_view operator[](uint32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }
  // Names Find can return (AddUnindexed ones left out).
  size_t indexed() const { return ids_.size(); }

 private:
  std::string_view Store(std::string_view s, bool always);

  WindowNames* pool_;
  std::deque<std::string> own_;  // without a pool
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::vector<std::string_view> names_;
};

}  // namespace profwatch::aggregate
