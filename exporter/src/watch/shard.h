// Sharding of the watched job directories between N daemons (serve --shard
// I/N): a daemon owns the jobs whose job directory name (the training_job
// label value) hashes to I under Prometheus' `hashmod` relabel action with
// modulus N, so an operator can check the owner of a job with the same rule
// in Prometheus: the MD5 digest of the value, its last 8 bytes read as a
// big-endian unsigned integer, modulo N.
//
// Thread-safety: pure functions and a value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace profwatch::watch {

// Prometheus' hashmod of `value` with `modulus` (> 0).
uint64_t HashMod(std::string_view value, uint64_t modulus);

struct Shard {
  // Constructors (not an aggregate), so a designated initializer of a struct
  // holding a Shard may leave it out.
  Shard() = default;
  Shard(uint64_t i, uint64_t n) : index(i), count(n) {}
  uint64_t index = 0;
  uint64_t count = 0;  // 0: not sharded, every job is owned
  bool enabled() const { return count > 0; }
  // True when this shard exports `training_job`.
  bool Owns(std::string_view training_job) const {
    return count == 0 || HashMod(training_job, count) == index;
  }
  bool operator==(const Shard&) const = default;
};

// "I/N" with 0 <= I < N, where I may also be a name ending in "-I" (a
// StatefulSet pod name such as "profwatch-2", so one manifest serves every
// replica: --shard "$(POD_NAME)/3"). "" is not sharded. kConfig with a
// message on anything else.
Result<Shard> ParseShard(std::string_view text);

}  // namespace profwatch::watch
