#include "core/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>

#include "core/text.h"

namespace profwatch {
namespace {

bool IsKeyChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

// Where the field starting at `pos` (a key's first char) has its '=';
// npos when `pos` does not start a key=value field.
size_t FieldEquals(std::string_view m, size_t pos) {
  if (pos >= m.size() || m[pos] < 'a' || m[pos] > 'z') return std::string_view::npos;
  size_t i = pos;
  while (i < m.size() && IsKeyChar(m[i])) ++i;
  return i < m.size() && m[i] == '=' ? i : std::string_view::npos;
}

// The start of the next field at or after `from` (at 0 or after a space).
size_t NextField(std::string_view m, size_t from) {
  for (size_t i = from; i < m.size(); ++i) {
    if ((i == 0 || m[i - 1] == ' ') && FieldEquals(m, i) != std::string_view::npos) return i;
  }
  return std::string_view::npos;
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
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
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

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// spdlog flag %* : the message as JSON members (see JsonLogMembers).
class JsonMembersFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string members =
        JsonLogMembers(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(members.data(), members.data() + members.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMembersFlag>();
  }
};

// spdlog flag %* in the text format: the message with control characters
// and invalid UTF-8 escaped (core/text.h), so a directory name cannot end
// the line and forge another.
class TextMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text =
        EscapeControl(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<TextMessageFlag>();
  }
};

}  // namespace

std::string JsonLogMembers(std::string_view message) {
  std::string out = "\"msg\":";
  size_t field = NextField(message, 0);
  AppendJsonString(out, TrimRight(message.substr(0, field)));
  while (field != std::string_view::npos) {
    const size_t eq = FieldEquals(message, field);
    const size_t next = NextField(message, eq + 1);
    const std::string_view value = message.substr(
        eq + 1, next == std::string_view::npos ? std::string_view::npos : next - eq - 1);
    out += ',';
    AppendJsonString(out, message.substr(field, eq - field));
    out += ':';
    AppendJsonString(out, next == std::string_view::npos ? value : TrimRight(value));
    field = next;
  }
  return out;
}

Status SetupLogging(std::string_view level, LogFormat format) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") {
    return MakeError(ErrorCode::kConfig, "unknown log level '" + std::string(level) +
                                             "' (trace, debug, info, warn, error, critical, off)");
  }
  auto logger = std::make_shared<spdlog::logger>("profwatch",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
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
