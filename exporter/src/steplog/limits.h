// The steplog stage's fixed bounds, in one place (issue 62): the numbers a
// training log may state and what is kept of it.
//
// Thread-safety: constants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace profwatch::steplog {

// Step numbers above this are rejected as garbage; keeps step arithmetic far
// from int64 overflow.
inline constexpr int64_t kMaxStepNumber = 1'000'000'000'000'000;
// Config integers beyond this are not step counts; rejecting them keeps every
// step sum far from int64 overflow.
inline constexpr int64_t kMaxConfigInt = 1'000'000'000'000;
// Profiled step ranges a StepTimeSource lists (a periodic schedule).
inline constexpr size_t kMaxProfiledRanges = 10000;
// Warnings a StepTimeSource keeps (each reported once, oldest first).
inline constexpr size_t kMaxWarnings = 64;
// The longest fingerprint a saved log position may claim (LogTailer);
// a longer one is a corrupt position.
inline constexpr uint32_t kMaxFingerprintBytes = 1 << 20;

}  // namespace profwatch::steplog
