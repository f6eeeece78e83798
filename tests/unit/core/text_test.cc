#include "core/text.h"

#include <gtest/gtest.h>

namespace profwatch {
namespace {

TEST(EscapeControlTest, PrintableTextAndValidUtf8AreKept) {
  EXPECT_EQ(EscapeControl("jobA/run 1 \\x0a path=/d"), "jobA/run 1 \\x0a path=/d");
  EXPECT_EQ(EscapeControl("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(EscapeControl(""), "");
}

// A newline cannot end the line, ESC cannot reach a terminal, a C1 control
// (U+009B, CSI) neither, and each bad byte is told by its own escape.
TEST(EscapeControlTest, ControlsAndInvalidBytesBecomeHexEscapes) {
  EXPECT_EQ(EscapeControl("a\nb\rc\td\x1b[2J\x7f"), "a\\x0ab\\x0dc\\x09d\\x1b[2J\\x7f");
  EXPECT_EQ(EscapeControl(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(EscapeControl("\xC2\x9B"
                          "31m"),
            "\\xc2\\x9b31m");
  EXPECT_EQ(EscapeControl("jobY\xff\xfe"), "jobY\\xff\\xfe");
  EXPECT_EQ(EscapeControl("\xC3"), "\\xc3");                    // cut sequence
  EXPECT_EQ(EscapeControl("\xC0\xAF"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(EscapeControl("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // surrogate
}

TEST(ValidUtf8Test, BadBytesBecomeReplacementCharacters) {
  EXPECT_EQ(ValidUtf8("ok"), "ok");
  EXPECT_EQ(ValidUtf8("a\xff"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");
  std::string out;
  EXPECT_FALSE(ValidUtf8Into("\xE2\x82\xAC", out));
  EXPECT_EQ(out, "\xE2\x82\xAC");
  EXPECT_TRUE(ValidUtf8Into("\xF4\x90\x80\x80", out));  // above U+10FFFF
  EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace profwatch
