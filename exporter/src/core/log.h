// Logging setup (spdlog). Messages are short lower-case text plus stable
// key=value fields (path=, stage=, reason=). Log an error once, where handled.
#pragma once

#include <string_view>

#include "core/result.h"

namespace profwatch {

enum class LogFormat { kText, kJson };

// Configures the default spdlog logger on stderr. Thread-safe after return.
Status SetupLogging(std::string_view level, LogFormat format);

}  // namespace profwatch
