// XSpace (.xplane.pb) reader: the uncapped source the JSON is converted from.
// Emits the same TraceEvents as the JSON parser would for the same window:
// per device plane a process_name M event (pid = plane id + 1, name = plane
// name), per line a thread_name M event (tid = line id, name = line display
// name or name), and per event an X event with exact ps times
// (line.timestamp_ns*1000 + offset_ps, duration_ps) and the metadata's display
// name (or name). Reads plane by plane: memory is bounded by the largest plane.
#pragma once

#include <memory>

#include "parse/trace_parser.h"

namespace profwatch::parse {

std::unique_ptr<TraceParser> MakeXPlaneParser(ParseOptions options = {});

}  // namespace profwatch::parse
