#include "core/budget.h"

#include <cstdio>

namespace profwatch {
namespace {

std::string Bytes(uint64_t n) {
  char buf[64];
  if (n >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(n) / (1 << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  }
  return buf;
}

std::string SecondsText(std::chrono::nanoseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

FileBudget::FileBudget(FileLimits limits)
    : limits_(limits),
      deadline_(limits.max_time.count() > 0 ? std::chrono::steady_clock::now() + limits.max_time
                                            : std::chrono::steady_clock::time_point::max()) {}

Status FileBudget::AddRead(uint64_t n) {
  const uint64_t total = read_.fetch_add(n, std::memory_order_relaxed) + n;
  if (limits_.max_bytes > 0 && total > limits_.max_bytes) {
    return Trip("over budget: more than " + Bytes(limits_.max_bytes) +
                " read after decompression (--file-max-bytes)");
  }
  return Check();
}

Status FileBudget::AddSpill(uint64_t n) {
  const uint64_t total = spill_.fetch_add(n, std::memory_order_relaxed) + n;
  if (limits_.max_bytes > 0 && total > limits_.max_bytes) {
    return Trip("over budget: more than " + Bytes(limits_.max_bytes) +
                " of intervals to spill to disk (--file-max-bytes)");
  }
  return Check();
}

Status FileBudget::Check() {
  if (exceeded_.load(std::memory_order_relaxed)) return Trip("");
  if (limits_.stop != nullptr && limits_.stop->load(std::memory_order_relaxed)) {
    return Trip("stopped: the daemon is shutting down");
  }
  const auto now = std::chrono::steady_clock::now();
  if (now > deadline_) {
    return Trip("over budget: still reading after " + SecondsText(limits_.max_time) +
                " s (--file-max-seconds)");
  }
  if (now > limits_.window_deadline) {
    return Trip("over budget: its window still being read after " +
                SecondsText(limits_.window_max_time) + " s (--window-max-seconds)");
  }
  return {};
}

Status FileBudget::Trip(std::string why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_) error_ = Error{ErrorCode::kOverBudget, std::move(why)};
  exceeded_.store(true, std::memory_order_relaxed);
  return tl::unexpected(*error_);
}

}  // namespace profwatch
