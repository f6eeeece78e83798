// Logging (spdlog underneath). A line is a short constant message plus
// typed fields: Log(LogLevel::kInfo, "window analysed", {{"training_job",
// job}, {"run", run}, {"seconds", 1.5}}). Values never go inside the
// message: a field is a field whatever bytes its value holds, so a
// directory name cannot forge another field or another line. Field names
// are constants of the code (path, training_job, run, window, reason, ...),
// never ts, level or msg. Log an error once, where handled.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/result.h"

namespace profwatch {

enum class LogFormat { kText, kJson };
enum class LogLevel { kDebug, kInfo, kWarn, kError };

// One field of a log line: a key and a typed value (text, integer, number,
// bool, or none). Constructible from any string-like, integral,
// floating-point or bool value, or nullptr (none), so call sites stay
// {"key", value}. The type decides how the JSON log writes it: a number is
// a JSON number because it is passed as one, never because its text looks
// like one (a job named "4343", a window id, "1e5" or "0x10" stay strings:
// a field keeps one JSON type whatever the input names). So a figure is
// passed as its number, never as text made from it (watch::OwnerField).
struct LogField {
  using Value = std::variant<std::string, int64_t, uint64_t, double, bool, std::monostate>;
  std::string key;
  Value value;

  // None: JSON null, logfmt `none` (a figure or id that is not known).
  LogField(std::string_view k, std::nullptr_t) : key(k), value(std::monostate{}) {}

  template <typename T>
  requires std::same_as < std::remove_cvref_t<T>,
  bool > LogField(std::string_view k, T v) : key(k), value(static_cast<bool>(v)) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) LogField(std::string_view k, T v)
      : key(k),
        value(std::is_signed_v<T> ? Value(static_cast<int64_t>(v))
                                  : Value(static_cast<uint64_t>(v))) {}
  template <std::floating_point T>
  LogField(std::string_view k, T v) : key(k), value(static_cast<double>(v)) {}
  template <typename T>
  requires std::convertible_to<const T&, std::string_view> LogField(std::string_view k, const T& v)
      : key(k), value(std::string(std::string_view(v))) {}

  bool operator==(const LogField&) const = default;
};

// `v` rounded to `digits` decimals, for a field whose precision beyond
// that is noise (a duration, a unix time): the log writes the shortest
// text that reads back as the value.
inline double Rounded(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::isfinite(v) ? std::round(v * scale) / scale : v;
}

// Configures the default spdlog logger on stderr (or `out`, for tests).
// Thread-safe after return.
// kText writes logfmt: "<time> <level> <msg> key=value ...": the message with
// its control characters and invalid UTF-8 escaped as \xNN (EscapeControl);
// a value that is empty or holds a space, '=', '"', '\', a control character
// or invalid UTF-8 is double-quoted with \" \\ \n \r \t and \xNN escapes
// (LogfmtLine): one line, one field per key=value.
// kJson writes one object per line: {"ts":..,"level":..,"msg":<text>, then
// one member per field}: strings as JSON strings (invalid UTF-8 as U+FFFD),
// numbers as JSON numbers (non-finite ones and none as null), bools as
// true/false (JsonLogMembers), so each
// line is valid JSON and log stores can filter on fields.
Status SetupLogging(std::string_view level, LogFormat format, std::ostream* out = nullptr);

// Writes one line through the logger SetupLogging configured.
void Log(LogLevel level, std::string_view msg, std::span<const LogField> fields);
inline void Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {}) {
  Log(level, msg, std::span<const LogField>(fields.begin(), fields.size()));
}
inline void LogDebug(std::string_view msg, std::initializer_list<LogField> fields = {}) {
  Log(LogLevel::kDebug, msg, fields);
}
inline void LogInfo(std::string_view msg, std::initializer_list<LogField> fields = {}) {
  Log(LogLevel::kInfo, msg, fields);
}
inline void LogWarn(std::string_view msg, std::initializer_list<LogField> fields = {}) {
  Log(LogLevel::kWarn, msg, fields);
}
inline void LogError(std::string_view msg, std::initializer_list<LogField> fields = {}) {
  Log(LogLevel::kError, msg, fields);
}

// One log line kept to be written later (by a pure function's caller, or
// after a lock is released): Emit writes it.
struct LogEvent {
  LogLevel level = LogLevel::kInfo;
  std::string msg;
  std::vector<LogField> fields;
  bool operator==(const LogEvent&) const = default;
  // The line's text as the text log writes it (LogfmtLine), for tests.
  std::string Text() const;
};
// Appends one line to `logs`.
inline void Log(std::vector<LogEvent>& logs, LogLevel level, std::string msg,
                std::vector<LogField> fields = {}) {
  logs.push_back({level, std::move(msg), std::move(fields)});
}
inline void Emit(const LogEvent& e) { Log(e.level, e.msg, e.fields); }

// The text line's body: "<msg> key=value ..." (logfmt, as above).
std::string LogfmtLine(std::string_view msg, std::span<const LogField> fields);
// One value as logfmt writes it: bare when it can be, else quoted.
std::string LogfmtValue(const LogField::Value& value);
// The JSON line's members: `"msg":"<text>"` then `,"key":<value>` per field.
std::string JsonLogMembers(std::string_view msg, std::span<const LogField> fields);

}  // namespace profwatch
