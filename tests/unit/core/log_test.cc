#include "core/log.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "watch/owner.h"

namespace profwatch {
namespace {

// A job directory named to forge fields (issue 60).
constexpr const char* kForged = "evil reason=crashed training_job=victim";

// A logfmt reader as log stores split a line: key=value pairs separated by
// spaces, a value bare or double-quoted with backslash escapes.
std::vector<std::pair<std::string, std::string>> ParseLogfmt(std::string_view line) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t key_start = i;
    while (i < line.size() && line[i] != '=' && line[i] != ' ') ++i;
    if (i >= line.size() || line[i] != '=') continue;  // a bare word (the message)
    std::string key(line.substr(key_start, i - key_start));
    ++i;
    std::string value;
    if (i < line.size() && line[i] == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        value += line[i];
      }
      ++i;
    } else {
      while (i < line.size() && line[i] != ' ') value += line[i++];
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

TEST(LogfmtLineTest, PlainValuesAreBareAndTyped) {
  const std::vector<LogField> fields = {
      {"training_job", "jobA"}, {"run", std::string("r1")}, {"gpus", 8},
      {"seconds", 1.5},         {"big", uint64_t{1} << 63}, {"reanalysis", false}};
  EXPECT_EQ(LogfmtLine("window analysed", fields),
            "window analysed training_job=jobA run=r1 gpus=8 seconds=1.5 "
            "big=9223372036854775808 reanalysis=false");
  EXPECT_EQ(JsonLogMembers("window analysed", fields),
            R"("msg":"window analysed","training_job":"jobA","run":"r1","gpus":8,)"
            R"("seconds":1.5,"big":9223372036854775808,"reanalysis":false)");
}

// The forged name is one quoted value: a logfmt reader sees one
// training_job holding the whole name and no reason.
TEST(LogfmtLineTest, AValueWithSpacesAndEqualsIsOneQuotedField) {
  const std::vector<LogField> fields = {{"training_job", kForged}, {"run", "r1"}};
  const std::string line = LogfmtLine("window analysed", fields);
  EXPECT_EQ(line,
            R"(window analysed training_job="evil reason=crashed training_job=victim" run=r1)");
  const auto parsed = ParseLogfmt(line);
  ASSERT_EQ(parsed.size(), 2u) << line;
  EXPECT_EQ(parsed[0], (std::pair<std::string, std::string>{"training_job", kForged}));
  EXPECT_EQ(parsed[1], (std::pair<std::string, std::string>{"run", "r1"}));
}

TEST(LogfmtLineTest, QuotesBackslashesControlCharsAndBadUtf8AreEscaped) {
  EXPECT_EQ(LogfmtValue(std::string("")), R"("")");
  EXPECT_EQ(LogfmtValue(std::string("a\"b")), R"("a\"b")");
  EXPECT_EQ(LogfmtValue(std::string("C:\\x")), R"("C:\\x")");
  EXPECT_EQ(LogfmtValue(std::string("a\nfake=1\tb\r")), R"("a\nfake=1\tb\r")");
  EXPECT_EQ(LogfmtValue(std::string("a\x01\x7f")), R"("a\x01\x7f")");
  EXPECT_EQ(LogfmtValue(std::string("jobY\xff\xfe")), R"("jobY\xff\xfe")");
  EXPECT_EQ(LogfmtValue(std::string("c1\xC2\x85")), R"("c1\xc2\x85")");  // U+0085 (NEL)
  EXPECT_EQ(LogfmtValue(std::string("caf\xC3\xA9")), "caf\xC3\xA9");     // valid UTF-8 kept
  EXPECT_EQ(LogfmtValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  // The message's own control characters are escaped too: one line.
  EXPECT_EQ(LogfmtLine("a\nb", {}), "a\\x0ab");
}

// The JSON members come from the fields, never from the message's text: a
// message holding key=value stays one msg.
TEST(JsonLogMembersTest, FieldsAreMembersAndTheMessageIsNeverParsed) {
  const std::vector<LogField> fields = {{"training_job", kForged}};
  const nlohmann::json j =
      nlohmann::json::parse("{" + JsonLogMembers("found reason=x", fields) + "}");
  EXPECT_EQ(j.size(), 2u) << j.dump();
  EXPECT_EQ(j["msg"], "found reason=x");
  EXPECT_EQ(j["training_job"], kForged);
}

TEST(JsonLogMembersTest, StringsAreEscapedValidUtf8AndNumbersTyped) {
  const std::vector<LogField> fields = {{"path", "C:\\x\n\x01\"q\""},
                                        {"run", "r\xC3"},
                                        {"n", -3},
                                        {"inf", std::numeric_limits<double>::infinity()},
                                        {"ok", true}};
  const std::string members = JsonLogMembers("bad", fields);
  EXPECT_EQ(members, R"("msg":"bad","path":"C:\\x\n\u0001\"q\"","run":"r)"
                     "\xEF\xBF\xBD"
                     R"(","n":-3,"inf":null,"ok":true)");
  const nlohmann::json j = nlohmann::json::parse("{" + members + "}");
  EXPECT_EQ(j["path"], "C:\\x\n\x01\"q\"");
  EXPECT_TRUE(j["n"].is_number_integer());
  EXPECT_TRUE(j["inf"].is_null());
  EXPECT_TRUE(j["ok"].is_boolean());
}

// A field's JSON type is its value's type (issue #65): numbers passed as
// numbers are JSON numbers, whatever their size; none is null; text is a
// string even when it reads as a number (a job named 4343, a window id,
// 1e5, 0x10), so a field keeps one type whatever the input names.
TEST(JsonLogMembersTest, NumbersAreNumbersAndTextStaysText) {
  const std::vector<LogField> fields = {{"runs", size_t{1000}},
                                        {"max", std::numeric_limits<uint64_t>::max()},
                                        {"min", std::numeric_limits<int64_t>::min()},
                                        {"seconds", 0.25},
                                        {"owner", nullptr},
                                        {"training_job", "4343"},
                                        {"e", "1e5"},
                                        {"hex", "0x10"}};
  const std::string members = JsonLogMembers("m", fields);
  EXPECT_EQ(members,
            R"("msg":"m","runs":1000,"max":18446744073709551615,"min":-9223372036854775808,)"
            R"("seconds":0.25,"owner":null,"training_job":"4343","e":"1e5","hex":"0x10")");
  const nlohmann::json j = nlohmann::json::parse("{" + members + "}");
  EXPECT_EQ(j["runs"].get<uint64_t>(), 1000u);
  EXPECT_EQ(j["max"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(j["min"].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(j["seconds"].get<double>(), 0.25);
  EXPECT_TRUE(j["owner"].is_null());
  EXPECT_TRUE(j["training_job"].is_string());
  // The text log writes none as `none`, numbers bare.
  EXPECT_EQ(LogfmtLine("m", fields),
            "m runs=1000 max=18446744073709551615 min=-9223372036854775808 seconds=0.25 "
            "owner=none training_job=4343 e=1e5 hex=0x10");
}

// The owner of a log line is its uid as a number, none when not known
// (before: the uid's decimal text, a JSON string).
TEST(JsonLogMembersTest, OwnerIsANumber) {
  const std::vector<LogField> fields = {watch::OwnerField(1000), {"path", "/x"}};
  const nlohmann::json j = nlohmann::json::parse("{" + JsonLogMembers("m", fields) + "}");
  ASSERT_TRUE(j["owner"].is_number_unsigned()) << j.dump();
  EXPECT_EQ(j["owner"].get<uint64_t>(), 1000u);
  EXPECT_EQ(LogfmtLine("m", fields), "m owner=1000 path=/x");
  const std::vector<LogField> none = {watch::OwnerField(watch::kNoOwner)};
  EXPECT_EQ(JsonLogMembers("m", none), R"("msg":"m","owner":null)");
  EXPECT_EQ(LogfmtLine("m", none), "m owner=none");
}

// Through the real logger (SetupLogging's formatter): the JSON line for a
// forged job name parses to exactly one training_job, the whole name, and
// no reason; the text line quotes it.
TEST(SetupLoggingTest, ForgedNameGivesOneFieldInBothFormats) {
  std::ostringstream json_out;
  ASSERT_TRUE(SetupLogging("info", LogFormat::kJson, &json_out));
  LogInfo("window analysed", {{"training_job", kForged}, {"run", "r1"}, {"gpus", 2}});
  LogDebug("below the level", {{"x", 1}});
  std::string line = json_out.str();
  ASSERT_FALSE(line.empty());
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  ASSERT_EQ(line.find('\n'), std::string::npos) << line;
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "window analysed");
  EXPECT_EQ(j["level"], "info");
  EXPECT_TRUE(j.contains("ts"));
  EXPECT_EQ(j["training_job"], kForged);
  EXPECT_FALSE(j.contains("reason")) << line;
  EXPECT_EQ(j["gpus"], 2);
  // A duplicate key would be kept last by nlohmann: count them in the text.
  size_t keys = 0;
  for (size_t at = line.find("\"training_job\":"); at != std::string::npos;
       at = line.find("\"training_job\":", at + 1)) {
    ++keys;
  }
  EXPECT_EQ(keys, 1u) << line;

  std::ostringstream text_out;
  ASSERT_TRUE(SetupLogging("info", LogFormat::kText, &text_out));
  LogWarn("window analysed", {{"training_job", kForged}});
  const std::string text = text_out.str();
  EXPECT_NE(text.find(R"( warning window analysed training_job="evil reason=crashed )"
                      R"(training_job=victim")"),
            std::string::npos)
      << text;
  spdlog::drop_all();
  ASSERT_TRUE(SetupLogging("warn", LogFormat::kText));  // back to stderr
}

}  // namespace
}  // namespace profwatch
