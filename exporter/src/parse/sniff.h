// Content sniffing: decides a trace file's format from its first bytes (after
// decompression), not from its name.
#pragma once

#include <string_view>

namespace profwatch::parse {

enum class FileFormat { kUnknown, kJson, kXplane, kSqlite, kRocprofJson };

// `head` = the first bytes of the (decompressed) content, any length.
// JSON: first non-whitespace byte is '{' or '['; rocprofv3's JSON (kRocprofJson)
// when the object's first member is "rocprofiler-sdk-tool" within `head`. XPlane: a protobuf XSpace
// (first tag is a length-delimited field 1..4). SQLite (an nsys export): the
// 16-byte "SQLite format 3" header.
FileFormat SniffFormat(std::string_view head);

}  // namespace profwatch::parse
