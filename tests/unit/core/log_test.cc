#include "core/log.h"

#include <gtest/gtest.h>

namespace profwatch {
namespace {

TEST(JsonLogMembersTest, FieldsBecomeKeysAndTheTextStaysMsg) {
  EXPECT_EQ(JsonLogMembers("window analysed training_job=jobA run=r1 window=w1 gpus=8"),
            R"("msg":"window analysed","training_job":"jobA","run":"r1","window":"w1","gpus":"8")");
}

TEST(JsonLogMembersTest, ValuesKeepSpacesUntilTheNextField) {
  EXPECT_EQ(
      JsonLogMembers("cannot read path=/data/my run/h0.json error=No such file reason=io"),
      R"("msg":"cannot read","path":"/data/my run/h0.json","error":"No such file","reason":"io")");
}

TEST(JsonLogMembersTest, TextWithoutFieldsAndFieldsWithoutText) {
  EXPECT_EQ(JsonLogMembers("shutting down"), R"("msg":"shutting down")");
  EXPECT_EQ(JsonLogMembers("path=/x"), R"("msg":"","path":"/x")");
  EXPECT_EQ(JsonLogMembers(""), R"("msg":"")");
  // A key starts with a lower-case letter after a space: others are text.
  EXPECT_EQ(JsonLogMembers("sum 3=x X=1 a-b=2"), R"("msg":"sum 3=x X=1 a-b=2")");
}

TEST(JsonLogMembersTest, QuotesBackslashesAndControlCharsAreEscaped) {
  EXPECT_EQ(JsonLogMembers("bad \"name\" path=C:\\x\n\x01"),
            R"("msg":"bad \"name\"","path":"C:\\x\n\u0001")");
}

// Directory names are anyone's bytes: invalid UTF-8 becomes U+FFFD, so each
// JSON log line stays valid JSON.
TEST(JsonLogMembersTest, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(JsonLogMembers("found training_job=jobY\xff\xfe run=r\xC3"),
            "\"msg\":\"found\",\"training_job\":\"jobY\xEF\xBF\xBD\xEF\xBF\xBD\","
            "\"run\":\"r\xEF\xBF\xBD\"");
}

}  // namespace
}  // namespace profwatch
