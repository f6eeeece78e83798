// Injectable clock so time-dependent stages (window assembly, retention,
// retries, log steady state) are unit-testable without sleeping.
// SystemClock is thread-safe; FakeClock is safe for concurrent reads/advances.
#pragma once

#include <atomic>
#include <chrono>

namespace profwatch {

using Seconds = std::chrono::duration<double>;
using TimePoint = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{} + std::chrono::hours(24 * 365 * 50))
      : now_ns_(start.time_since_epoch() / std::chrono::nanoseconds(1)) {}
  TimePoint Now() const override {
    return TimePoint{} + std::chrono::duration_cast<TimePoint::duration>(
                             std::chrono::nanoseconds(now_ns_.load()));
  }
  void Advance(std::chrono::nanoseconds d) { now_ns_ += d.count(); }
  void Set(TimePoint t) { now_ns_ = t.time_since_epoch() / std::chrono::nanoseconds(1); }

 private:
  std::atomic<long long> now_ns_;
};

inline double ToUnixSeconds(TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace profwatch
