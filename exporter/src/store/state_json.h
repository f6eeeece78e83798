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
// leaves room for additive changes within v1. Every string value is written
// in its reversible form (core/text.h ReversibleUtf8: a byte that is not
// UTF-8 as \xHH, a `\` that would begin an escape doubled) and read back to
// its exact bytes, so two names that differ only in such bytes stay two
// runs. Earlier versions wrote U+FFFD for those bytes; their files read as
// written, except a string holding `\\` or `\xHH` literally, which now
// reads decoded.
//
// Parsing never throws: malformed, truncated or wrong-schema text gives
// kCorrupt with the JSON path of the first problem ("runs[2].stats.devices[0]:
// busy_ps: missing"); a different "schema" value gives kUnsupported. A reader
// made with drop_bad_runs (the daemon's) instead drops a run that is invalid
// or a second run of one key alone and says so in dropped().
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "snapshot/snapshot.h"

namespace profwatch::store {

// v2 keeps a window's step markers as columns with file indexes (v1: an
// object per step naming its file's path); v1 documents are still read.
inline constexpr std::string_view kStateSchema = "profwatch.state.v2";
inline constexpr std::string_view kStateSchemaV1 = "profwatch.state.v1";

// Whole snapshot <-> state document (compact JSON, written run by run so
// memory stays near the text's size).
std::string SerializeState(const snapshot::Snapshot& snap);
Result<snapshot::Snapshot> ParseState(std::string_view text);

// Reads a state document's runs while the JSON parser meets them: as the
// parser callback of nlohmann::json::parse, it turns each element of the
// document's "runs" array into a RunState when its object ends and drops the
// element's tree, so loading holds one run's tree at a time beside what is
// kept (a state of 20 runs of 65,536 steps is never one tree in memory).
// Not thread-safe; one parse per reader.
// A run of a state document left out on reading (StateRunReader with
// drop_bad_runs): reason "invalid" (a field missing or of the wrong type;
// an element that is not an object) or "duplicate" (a second run of one
// key: the first stays); `error` names where.
struct DroppedRun {
  std::string reason;
  Error error;
};

class StateRunReader {
 public:
  // `prefix`: the keys from the parsed root object down to the state
  // document (none when the root is one; {"snapshot"} in the daemon's file).
  // `drop_bad_runs`: a bad run is dropped alone (dropped()) instead of
  // failing the document.
  explicit StateRunReader(std::vector<std::string> prefix, bool drop_bad_runs = false);
  bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed);
  // The snapshot of `document` (the state document the parse returned, its
  // runs taken by this reader): kCorrupt for the first bad run or field,
  // kUnsupported for another schema.
  Result<snapshot::Snapshot> Finish(const nlohmann::json& document);
  // The runs left out, in file order (only with drop_bad_runs).
  const std::vector<DroppedRun>& dropped() const { return dropped_; }

 private:
  std::vector<std::string> prefix_;
  std::vector<char> kinds_;        // per depth: 'o' object, 'a' array
  std::vector<std::string> keys_;  // per depth: the key being read in the object above
  std::map<snapshot::RunKey, snapshot::RunState> runs_;
  size_t runs_read_ = 0;
  std::optional<Error> error_;
  bool drop_bad_runs_ = false;
  std::vector<DroppedRun> dropped_;
};

// One run as a standalone JSON object (no schema wrapper), e.g. for logs or a
// per-run cache. ParseRunState accepts exactly what SerializeRunState writes.
std::string SerializeRunState(const snapshot::RunState& run);
Result<snapshot::RunState> ParseRunState(std::string_view text);

}  // namespace profwatch::store
