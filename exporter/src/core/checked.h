// Overflow-checked int64 arithmetic on counts (shape products, FLOPs, byte
// counts): the one definition every stage uses.
#pragma once

#include <cstdint>

namespace profwatch::core {

// acc *= v; false when v is negative or the product overflows int64 (acc is
// then unspecified).
inline bool CheckedMul(int64_t& acc, int64_t v) {
  return v >= 0 && !__builtin_mul_overflow(acc, v, &acc);
}

// acc += v; false when the sum overflows int64 (acc is then unspecified).
inline bool CheckedAdd(int64_t& acc, int64_t v) { return !__builtin_add_overflow(acc, v, &acc); }

}  // namespace profwatch::core
