#include "parse/sniff.h"

#include <gtest/gtest.h>

#include <string>

#include "parse/trace_event.h"

namespace profwatch::parse {
namespace {

TEST(SniffFormatTest, JsonStartsWithBraceOrBracketAfterWhitespace) {
  EXPECT_EQ(SniffFormat("{\"traceEvents\":[]}"), FileFormat::kJson);
  EXPECT_EQ(SniffFormat(" \n\t[1]"), FileFormat::kJson);
  EXPECT_EQ(SniffFormat("\xEF\xBB\xBF{"), FileFormat::kJson);
}

TEST(SniffFormatTest, XSpaceStartsWithALengthDelimitedField) {
  EXPECT_EQ(SniffFormat(std::string("\x0a\x96\x01\x08\x01", 5)), FileFormat::kXplane);
  EXPECT_EQ(SniffFormat(std::string("\x22\x05host0", 7)), FileFormat::kXplane);
  EXPECT_EQ(SniffFormat(std::string("\x0a", 1)), FileFormat::kXplane);  // too short to refute
}

TEST(SniffFormatTest, OtherBytesAreUnknown) {
  EXPECT_EQ(SniffFormat(""), FileFormat::kUnknown);
  EXPECT_EQ(SniffFormat("   "), FileFormat::kUnknown);
  EXPECT_EQ(SniffFormat("\x1f\x8b\x08"), FileFormat::kUnknown);  // still gzip
  EXPECT_EQ(SniffFormat("hello"), FileFormat::kUnknown);
  EXPECT_EQ(SniffFormat(std::string("\x08\x01", 2)), FileFormat::kUnknown);  // varint field
  EXPECT_EQ(SniffFormat(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12)),
            FileFormat::kUnknown);  // endless varint
}

TEST(TraceSchemaNameTest, NamesEverySchema) {
  EXPECT_EQ(TraceSchemaName(TraceSchema::kJaxTraceEvents), "jax");
  EXPECT_EQ(TraceSchemaName(TraceSchema::kKineto), "kineto");
  EXPECT_EQ(TraceSchemaName(TraceSchema::kXPlane), "xplane");
  EXPECT_EQ(TraceSchemaName(TraceSchema::kUnknown), "unknown");
}

}  // namespace
}  // namespace profwatch::parse
