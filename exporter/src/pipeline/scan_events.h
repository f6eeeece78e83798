// The log lines a scan calls for, beside its refusals (pipeline/refusals.h):
// what the assembler skipped (dirs dated in the future, superseded and
// backlogged windows, runs whose labels clash), entries the walk could not
// read or would not follow, and watch roots that changed condition. Pure
// functions: the daemon emits the lines and counts what its counters count.
//
// Thread-safety: functions of their arguments (the state passed by
// reference is the caller's, under its lock).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/log.h"
#include "watch/scanner.h"
#include "window/assembler.h"

namespace profwatch::pipeline {

// One line per note of the assembler's scan, in the order: future dirs,
// superseded windows, backlogs (a run dir first seen has only its newest
// `windows_at_first_sight` windows considered), run label clashes.
std::vector<LogEvent> ScanNoteEvents(const window::Assembler::ScanNotes& notes,
                                     int windows_at_first_sight);

// A warning when the count of unreadable entries or of directory links
// skipped out of the root changes (to a non-zero count); `last_*` (the
// caller's, the counts at the last call) become this scan's.
std::vector<LogEvent> SkippedEvents(const watch::ScanResult& result,
                                    int64_t& last_permission_errors,
                                    int64_t& last_symlinks_skipped);

// One line per root whose condition changed since the last call (a warning
// naming it while it cannot be walked; silent on a healthy start, a line on
// recovery). `conditions` (the caller's) becomes each root's condition now,
// roots no longer configured dropped; `readable` is set to each root's
// readability.
std::vector<LogEvent> RootEvents(const watch::ScanResult& result,
                                 std::map<std::string, watch::RootCondition>& conditions,
                                 std::map<std::string, bool>& readable);

// The paths, comma-separated.
std::string JoinPaths(const std::vector<std::string>& paths);

}  // namespace profwatch::pipeline
