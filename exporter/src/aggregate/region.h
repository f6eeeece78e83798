// Model regions (issue #22), from JAX scope paths or PyTorch annotations.
//
// JAX: a kernel's `args.name` is
// the scope of the op that launched it, e.g.
//   jit(train_step)/jit(main)/transpose(jvp(decoder))/layers/mlp/dot_general
// Its region drops the jit(...) frames, unwraps transformation wrappers
// (jvp(..), transpose(..), vmap(..), remat(..), any `name(...)` but jit and
// pjit) and keeps the first `depth` components: decoder/layers/mlp.
// Pure function; thread-safe.
//
// PyTorch: a kernel's region is the innermost gpu_user_annotation range of
// its device that contains it (AnnotationMatcher; one per device and thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace profwatch::aggregate {

inline constexpr int kDefaultRegionDepth = 3;

// "" when nothing is left (only jit frames, or an empty scope).
std::string RegionOfScope(std::string_view scope, int depth = kDefaultRegionDepth);

struct Annotation {
  int64_t start = 0, end = 0;
  uint32_t region = 0;  // the caller's id of the annotation's name
};

// The region a PyTorch annotation names: its name, except that
// torch.compile's `## Call CompiledFxGraph <cache key> ##` loses the key,
// which changes on every recompile: `## Call CompiledFxGraph ##`.
std::string_view AnnotationRegion(std::string_view name);

class AnnotationMatcher {
 public:
  explicit AnnotationMatcher(std::vector<Annotation> annotations);
  // The region of the innermost (latest-starting, then shortest) annotation
  // with start <= `start` and `end` <= its end; none when no annotation
  // contains the kernel. REQUIRES: calls in non-decreasing `start`.
  std::optional<uint32_t> RegionOf(int64_t start, int64_t end);

 private:
  std::vector<Annotation> sorted_;  // by start, then longest first
  size_t next_ = 0;                 // first annotation not yet open
  std::vector<Annotation> open_;    // started by now, in start order
};

}  // namespace profwatch::aggregate
