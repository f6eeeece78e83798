// The HLO modules of the real H200 command-buffer capture (the shared
// fixtures): its xplane, read as the analysis reads it. Tests of the
// schedule (parse) and of its FLOPs (aggregate) read the same modules.
#pragma once

#include <string>

#include "parse/xplane_parser.h"
#include "read/byte_source.h"

namespace profwatch::testing {

// Relative to the shared fixtures (PROFWATCH_REQUIRE_SHARED_FIXTURE).
inline constexpr const char* kRealCommandBufferXplane =
    "real/h200/jobs/4242-llama-h200/base/tensorboard/plugins/profile/2026_11_26_00_29_00/"
    "vm.xplane.pb";

inline Result<parse::HloIndex> ReadHloModulesOf(const std::string& path) {
  auto source = read::OpenTraceSource(path, read::InflateBackend::kZlib);
  if (!source) return tl::unexpected(source.error());
  return parse::ReadXPlaneHloModules(**source);
}

}  // namespace profwatch::testing
