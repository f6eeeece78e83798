// Model regions from JAX scope paths (issue #22). A kernel's `args.name` is
// the scope of the op that launched it, e.g.
//   jit(train_step)/jit(main)/transpose(jvp(decoder))/layers/mlp/dot_general
// Its region drops the jit(...) frames, unwraps transformation wrappers
// (jvp(..), transpose(..), vmap(..), remat(..), any `name(...)` but jit and
// pjit) and keeps the first `depth` components: decoder/layers/mlp.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace profwatch::aggregate {

inline constexpr int kDefaultRegionDepth = 3;

// "" when nothing is left (only jit frames, or an empty scope).
std::string RegionOfScope(std::string_view scope, int depth = kDefaultRegionDepth);

}  // namespace profwatch::aggregate
