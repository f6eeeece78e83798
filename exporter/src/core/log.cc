#include "core/log.h"

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/text.h"

namespace profwatch {
namespace {

// The fields of the line being logged on this thread, read by the
// formatter flags below: spdlog's message carries text only, and a logger
// without an async sink formats in the calling thread, inside Log.
thread_local std::span<const LogField> tl_fields;

spdlog::level::level_enum SpdLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::err;
}

// A JSON string of `s` made valid UTF-8 (bad bytes as U+FFFD), so every
// line stays valid JSON whatever bytes a name holds.
void AppendJsonString(std::string& out, std::string_view raw) {
  const std::string s = ValidUtf8(raw);
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string NumberText(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", d);
}

// Whether logfmt must quote `s`: empty, or a byte that would end the value,
// start another field or be misread (space, '=', '"', '\', control
// characters, invalid UTF-8).
bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f) return true;
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return true;
    // C1 controls (U+0080..U+009F) are control characters too.
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) return true;
    i += n;
  }
  return false;
}

void AppendQuoted(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = Utf8SequenceLength(s, i);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (n == 0 || c < 0x20 || c == 0x7f ||
               (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)) {
      // Control characters and each byte of an invalid sequence as \xNN.
      const size_t bytes = n == 0 ? 1 : n;
      for (size_t k = 0; k < bytes; ++k) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i + k]));
        out += buf;
      }
      i += bytes;
      continue;
    } else {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  out += '"';
}

void AppendJsonValue(std::string& out, const LogField::Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) {
    AppendJsonString(out, *s);
  } else if (const auto* d = std::get_if<double>(&v)) {
    out += std::isfinite(*d) ? NumberText(*d) : "null";
  } else if (const auto* b = std::get_if<bool>(&v)) {
    out += *b ? "true" : "false";
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    out += std::to_string(*i);
  } else if (const auto* u = std::get_if<uint64_t>(&v)) {
    out += std::to_string(*u);
  } else {
    out += "null";
  }
}

std::string_view Payload(const spdlog::details::log_msg& msg) {
  return {msg.payload.data(), msg.payload.size()};
}

// spdlog flag %* in the JSON format: the message and the fields as members.
class JsonMembersFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string members = JsonLogMembers(Payload(msg), tl_fields);
    dest.append(members.data(), members.data() + members.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMembersFlag>();
  }
};

// spdlog flag %* in the text format: the message and its fields in logfmt.
class TextMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text = LogfmtLine(Payload(msg), tl_fields);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<TextMessageFlag>();
  }
};

}  // namespace

std::string LogfmtValue(const LogField::Value& value) {
  std::string out;
  if (const auto* s = std::get_if<std::string>(&value)) {
    if (NeedsQuotes(*s)) {
      AppendQuoted(out, *s);
    } else {
      out = *s;
    }
  } else if (const auto* d = std::get_if<double>(&value)) {
    out = NumberText(*d);
  } else if (const auto* b = std::get_if<bool>(&value)) {
    out = *b ? "true" : "false";
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    out = std::to_string(*i);
  } else if (const auto* u = std::get_if<uint64_t>(&value)) {
    out = std::to_string(*u);
  } else {
    out = "none";
  }
  return out;
}

std::string LogEvent::Text() const { return LogfmtLine(msg, fields); }

std::string LogfmtLine(std::string_view msg, std::span<const LogField> fields) {
  std::string out = EscapeControl(msg);
  for (const LogField& f : fields) {
    out += ' ';
    out += EscapeControl(f.key);
    out += '=';
    out += LogfmtValue(f.value);
  }
  return out;
}

std::string JsonLogMembers(std::string_view msg, std::span<const LogField> fields) {
  std::string out = "\"msg\":";
  AppendJsonString(out, msg);
  for (const LogField& f : fields) {
    out += ',';
    AppendJsonString(out, f.key);
    out += ':';
    AppendJsonValue(out, f.value);
  }
  return out;
}

void Log(LogLevel level, std::string_view msg, std::span<const LogField> fields) {
  spdlog::logger* logger = spdlog::default_logger_raw();
  const spdlog::level::level_enum lvl = SpdLevel(level);
  if (logger == nullptr || !logger->should_log(lvl)) return;
  struct Reset {
    ~Reset() { tl_fields = {}; }
  } reset;
  tl_fields = fields;
  logger->log(lvl, spdlog::string_view_t(msg.data(), msg.size()));
}

Status SetupLogging(std::string_view level, LogFormat format, std::ostream* out) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") {
    return MakeError(ErrorCode::kConfig, "unknown log level '" + std::string(level) +
                                             "' (trace, debug, info, warn, error, critical, off)");
  }
  spdlog::sink_ptr sink;
  if (out != nullptr) {
    sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*out, /*force_flush=*/true);
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  }
  auto logger = std::make_shared<spdlog::logger>("profwatch", std::move(sink));
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == LogFormat::kJson) {
    formatter->add_flag<JsonMembersFlag>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%*})");
  } else {
    formatter->add_flag<TextMessageFlag>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %*");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return {};
}

}  // namespace profwatch
