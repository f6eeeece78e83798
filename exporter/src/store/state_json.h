// State JSON: lossless (de)serialization of snapshot::RunState (including the
// whole aggregate::WindowStats) and of a whole snapshot::Snapshot, for the
// daemon's --state file. The document is versioned:
//
//   {"schema": "profwatch.state.v1", "last_scan_unix": ..., "pending_windows": ...,
//    "runs": [ {RunState}, ... ]}
//
// Integers (picoseconds, counts) are written as JSON integers, doubles in
// shortest round-trip form; NaN and infinities (a diverged loss) as the strings
// "NaN", "Infinity", "-Infinity". Unset optionals are omitted. Enums are
// written by stable names owned by this file (not display names), so the file
// survives label renames. Keys this version does not know are ignored, which
// leaves room for additive changes within v1. Strings that are not valid UTF-8
// are the one lossy case: bad bytes become U+FFFD (JSON requires UTF-8).
//
// Parsing never throws: malformed, truncated or wrong-schema text gives
// kCorrupt with the JSON path of the first problem ("runs[2].stats.devices[0]:
// busy_ps: missing"); a different "schema" value gives kUnsupported.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"
#include "snapshot/snapshot.h"

namespace profwatch::store {

inline constexpr std::string_view kStateSchema = "profwatch.state.v1";

// Whole snapshot <-> state document (compact JSON, written run by run so
// memory stays near the text's size).
std::string SerializeState(const snapshot::Snapshot& snap);
Result<snapshot::Snapshot> ParseState(std::string_view text);
// The same from a parsed document (the daemon state file embeds one), so a
// large state is not dumped and parsed a second time.
Result<snapshot::Snapshot> ParseStateDocument(const nlohmann::json& doc);

// One run as a standalone JSON object (no schema wrapper), e.g. for logs or a
// per-run cache. ParseRunState accepts exactly what SerializeRunState writes.
std::string SerializeRunState(const snapshot::RunState& run);
Result<snapshot::RunState> ParseRunState(std::string_view text);

}  // namespace profwatch::store
