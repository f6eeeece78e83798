// Logging setup (spdlog). Messages are short lower-case text plus stable
// key=value fields (path=, training_job=, run=, window=, reason=). Log an
// error once, where handled.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace profwatch {

enum class LogFormat { kText, kJson };

// Configures the default spdlog logger on stderr. Thread-safe after return.
// kJson writes one object per line: {"ts":..,"level":..,"msg":<text>, and one
// string member per key=value field}, so log stores can filter on fields.
Status SetupLogging(std::string_view level, LogFormat format);

// The JSON members for one message: `"msg":"<text>"` then `,"key":"value"`
// per field, escaped. A field starts at a ` key=` (key: [a-z0-9_]+, first a
// letter) and its value runs to the next field, so values may hold spaces.
std::string JsonLogMembers(std::string_view message);

}  // namespace profwatch
