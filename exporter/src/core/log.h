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
// kText writes "<time> <level> <message>", the message's control characters
// and invalid UTF-8 escaped as \xNN (EscapeControl): one message, one line.
// kJson writes one object per line: {"ts":..,"level":..,"msg":<text>, and one
// string member per key=value field}, so log stores can filter on fields;
// invalid UTF-8 in a message becomes U+FFFD, so each line is valid JSON.
Status SetupLogging(std::string_view level, LogFormat format);

// The JSON members for one message: `"msg":"<text>"` then `,"key":"value"`
// per field, escaped and valid UTF-8. A field starts at a ` key=` (key: [a-z0-9_]+, first a
// letter) and its value runs to the next field, so values may hold spaces.
std::string JsonLogMembers(std::string_view message);

}  // namespace profwatch
