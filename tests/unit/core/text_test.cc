#include "core/text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

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

// --- ReversibleUtf8: the names written to files, JSON and labels ----------

TEST(ReversibleUtf8Test, EverySingleByteRoundTripsAndComesOutValidUtf8) {
  std::set<std::string> written;
  for (int b = 0; b < 256; ++b) {
    const std::string raw(1, static_cast<char>(b));
    const std::string out = ReversibleUtf8(raw);
    EXPECT_EQ(ValidUtf8(out), out) << b;
    EXPECT_EQ(FromReversibleUtf8(out), raw) << b;
    EXPECT_TRUE(written.insert(out).second) << b;
    if (b >= 0x80) {
      char want[5];
      std::snprintf(want, sizeof want, "\\x%02x", b);
      EXPECT_EQ(out, want);
    }
  }
  // Two bytes of every kind after a backslash and an `x`: still one to one.
  for (int b = 0; b < 256; ++b) {
    for (const std::string head : {"\\", "\\x", "\\\\", "x"}) {
      const std::string raw = head + std::string(1, static_cast<char>(b)) + "f";
      EXPECT_EQ(FromReversibleUtf8(ReversibleUtf8(raw)), raw) << head << b;
    }
  }
}

TEST(ReversibleUtf8Test, ValidUtf8WithoutTheEscapeIsKeptByteForByte) {
  for (const std::string s :
       {"", "jobA", "run 1/2024_03_01", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "\xEF\xBF\xBD",
        "a\\b", "trailing\\", "C:\\Users", "\\n"}) {
    std::string out;
    EXPECT_EQ(ReversibleUtf8Into(s, out), 0u) << s;
    EXPECT_EQ(out, s);
    EXPECT_EQ(FromReversibleUtf8(s), s) << "a name of an earlier version reads as before";
  }
}

TEST(ReversibleUtf8Test, MixedStringsRoundTripAndCountTheirEscapedBytes) {
  const std::string raw = "x\xff/caf\xC3\xA9\xfe\\b\\";
  std::string out;
  EXPECT_EQ(ReversibleUtf8Into(raw, out), 2u);
  EXPECT_EQ(out, "x\\xff/caf\xC3\xA9\\xfe\\b\\");
  EXPECT_EQ(FromReversibleUtf8(out), raw);
  // A backslash right before an escaped byte is doubled.
  EXPECT_EQ(ReversibleUtf8("\\\xff"), "\\\\\\xff");
  EXPECT_EQ(FromReversibleUtf8("\\\\\\xff"), "\\\xff");
}

// The escape text written literally in a valid name never meets the name
// that holds the byte: the pairs differ once written and read back exact.
TEST(ReversibleUtf8Test, NamesHoldingTheEscapeTextLiterallyNeverCollide) {
  const std::vector<std::string> names = {
      "x\xff", "x\\xff", "x\\\\xff", "x\\\xff",  "x\\\\\xff",  "x\xfe",        "x\\xfe", "x\\xFF",
      "\\",    "\\\\",   "\\\\\\",   "\\x",      "\\x4",       "\\x41",        "A",      "x\\",
      "x\\\\", "\xc3",   "\\xc3",    "\xc3\xa9", "\\xc3\\xa9", "\xEF\xBF\xBD", "x?"};
  std::set<std::string> written;
  for (const std::string& n : names) {
    const std::string out = ReversibleUtf8(n);
    EXPECT_TRUE(written.insert(out).second) << "collision on " << out;
    EXPECT_EQ(FromReversibleUtf8(out), n) << out;
    EXPECT_EQ(ValidUtf8(out), out);
  }
  EXPECT_EQ(ReversibleUtf8("x\\xff"), "x\\\\xff");
  EXPECT_EQ(ReversibleUtf8("x\xff"), "x\\xff");
}

TEST(ReversibleUtf8Test, InvalidSequencesAreEscapedByteByByte) {
  struct Case {
    std::string raw, written;
  };
  for (const Case& c : std::vector<Case>{
           {"\xC0\xAF", "\\xc0\\xaf"},                    // overlong '/'
           {"\xE0\x80\xAF", "\\xe0\\x80\\xaf"},           // overlong, three bytes
           {"\xF0\x80\x80\xAF", "\\xf0\\x80\\x80\\xaf"},  // overlong, four bytes
           {"\xE2\x82", "\\xe2\\x82"},                    // cut euro sign
           {"a\xF0\x9F\x98", "a\\xf0\\x9f\\x98"},         // cut emoji
           {"\xED\xA0\x80", "\\xed\\xa0\\x80"},           // surrogate U+D800 in UTF-8
           {"\xED\xBF\xBF", "\\xed\\xbf\\xbf"},           // surrogate U+DFFF
           {"\xF4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},  // above U+10FFFF
           {"\x80\xBF", "\\x80\\xbf"},                    // stray continuation bytes
           {"\xE2\x82\xAC\x80", "\xE2\x82\xAC\\x80"},     // valid, then a stray byte
       }) {
    std::string out;
    EXPECT_GT(ReversibleUtf8Into(c.raw, out), 0u);
    EXPECT_EQ(out, c.written);
    EXPECT_EQ(FromReversibleUtf8(out), c.raw);
  }
}

TEST(ReversibleUtf8Test, DecodingKeepsABackslashThatStartsNoEscape) {
  // Text written without the escape (earlier versions): only `\\` and a full
  // `\xHH` are read as escapes; either hex case.
  EXPECT_EQ(FromReversibleUtf8("a\\b\\x\\xg1\\x4"), "a\\b\\x\\xg1\\x4");
  EXPECT_EQ(FromReversibleUtf8("\\xFF\\xfe"), "\xff\xfe");
}

}  // namespace
}  // namespace profwatch
