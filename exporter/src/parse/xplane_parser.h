// XSpace (.xplane.pb) reader: the uncapped source the JSON is converted from.
// Emits the same TraceEvents as the JSON parser would for the same window:
// per device plane a process_name M event (pid = plane id + 1, name = plane
// name), per line a thread_name M event (tid = line display id or id, as
// uint32 like XLA's converter; name = line display name or name), and per
// event an X event with exact ps times (line.timestamp_ns*1000 + offset_ps,
// duration_ps) and the metadata's display name (or name); its args_name is
// the event's stat named "name" (the JAX scope, a string or a reference to a
// stat metadata name), as the JSON converter writes it. Reads plane by
// plane: memory is bounded by the largest plane (plus one read chunk).
//
// Decisions (see the README "xplane" section for the measurements):
//  - A small wire-format reader, not libprotobuf: no generated code, no
//    arena holding the whole XSpace, and every length is checked against
//    the bytes actually present before anything is allocated.
//  - The host plane "/host:CPU" is emitted as pid kXPlaneHostPid (701, XLA's
//    kHostThreadsDeviceId) so its ids never collide with device pids; other
//    planes (/host:metadata, Task Environment, custom planes) are skipped and
//    their events counted in drops["other_plane"].
//  - Events carrying num_occurrences (aggregated events of a summarised
//    XSpace) have no offset, hence no start time: they are dropped and
//    counted in drops["aggregated_event"] rather than placed at a made-up
//    time. Real profiler captures do not contain them.
//  - ts_ps is relative to ParseSummary::time_base_us = floor(first emitted
//    line's timestamp_ns / 1000): absolute epoch picoseconds overflow int64.
//    An event whose relative time still overflows is dropped
//    (drops["time_overflow"]).
//  - "Steps" lines (TensorFlow/xprof step markers) are plain lines: their
//    event metadata name is the step number (group id), so the thread named
//    "Steps" carries one X event per step named by its number.
//
// Errors: kTruncated (empty input, or the input ends inside a field),
// kCorrupt (not an XSpace: bad wire type, length beyond its enclosing
// message, over-long varint, JSON or gzip bytes), kTooLarge (a plane above
// XPlaneOptions::max_plane_bytes), kUnsupported (a well-formed message
// without any plane), plus any error of the source. Planes decoded before an
// error stay delivered.
//
// Thread-safety: a parser object is not thread-safe (it keeps its buffers
// between files); use one per worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "parse/hlo_schedule.h"
#include "parse/limits.h"
#include "parse/trace_parser.h"

namespace profwatch::parse {

// pid of the host plane's events (XLA: kLastCustomPlaneDeviceId + 1).
inline constexpr int64_t kXPlaneHostPid = 701;

struct XPlaneOptions {
  // A plane is decoded from one contiguous buffer; a plane claiming more
  // bytes than this fails the parse with kTooLarge before any allocation.
  size_t max_plane_bytes = size_t{1} << 30;
  // Emit the host plane's threads and events (the aggregator ignores them;
  // the JSON form carries them). When false they are counted in
  // drops["host_plane"] instead.
  bool host_events = true;
};

// ParseOptions::chunk_bytes is the read size; the JSON-only limits are unused.
// ParseSummary::json_bytes counts the protobuf bytes consumed.
std::unique_ptr<TraceParser> MakeXPlaneParser(ParseOptions options = {});
std::unique_ptr<TraceParser> MakeXPlaneParser(ParseOptions options, XPlaneOptions xplane);

// The compiled modules of an XSpace: the "Hlo Proto" stats of the
// "/host:metadata" plane's event metadata (one per compiled module), decoded
// into launch schedules (hlo_schedule.h). Other planes are skipped unread
// where their name shows in the first read chunk; the read stops after the
// metadata plane. A module that fails to decode is listed in
// HloIndex::errors, one over the HloLimits (too complex) in
// HloIndex::too_complex, the others are kept. Errors: kNotFound (no metadata
// plane, or no module in it), and those of the parser (kTruncated, kCorrupt,
// kTooLarge above `max_plane_bytes`).

Result<HloIndex> ReadXPlaneHloModules(read::ByteSource& source, size_t chunk_bytes = 256 << 10,
                                      size_t max_plane_bytes = size_t{1} << 30);

// The device name of the first device plane that has one (stat
// gpu_device_name, e.g. "NVIDIA H200"), read without decoding events: the
// planes' lines and event metadata are skipped. A JAX trace.json.gz names no
// device; its process's xplane does (the peak for MFU). Empty when no plane
// names one. Errors: those of the read, kCorrupt on a malformed XSpace.
Result<std::vector<std::string>> ReadXPlaneDeviceNames(read::ByteSource& source,
                                                       size_t chunk_bytes = 256 << 10);

}  // namespace profwatch::parse
