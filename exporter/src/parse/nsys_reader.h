// Nsight Systems SQLite export reader (`nsys export --type sqlite`): turns
// one export (one node, often several processes with a GPU each) into
// TraceEvents for the aggregator, like the JSON and xplane parsers do for
// their formats. ../shared/docs/trace-formats.md section 5 has the facts.
//
// What it emits, in this order:
//  - per NVTX range of a process named like a step ("step 12", "Step_12",
//    "step#12", "step=12"; see StepOfNvtxText): an X event with cat
//    kNsysStepCat, name = the step number, pid = the process;
//  - per kernel row with start >= 0: an X event with cat kNsysKernelCat,
//    name = the demangled name (the short name when that is missing), pid =
//    the process (globalPid / 0x1000000 % 0x1000000), args_device =
//    deviceId, tid = streamId, exact ps times (ns x 1000).
//    A kernel launched (CUPTI_ACTIVITY_KIND_RUNTIME row with its
//    correlationId, same process) inside one of NCCL's own NVTX ranges of
//    the launching thread (text starting "nccl": ncclAllReduce, ncclSend,
//    ...; the innermost of the last kNcclNestingChecked that contain the
//    launch) gets that range's text as args_collective. NCCL's NVTX
//    payloads (message sizes) are not read. At most 2^20 such ranges and
//    launches are kept (drops["nccl_range_limit"], ["nccl_launch_limit"]).
//  - per row of CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET (optional tables): an X
//    event with cat kNsysMemopCat named "Memcpy" / "Memset", on the same
//    device and stream fields as a kernel (a memory operation, not a kernel).
// Rows with start < 0 (before cudaProfilerStart: NCCL init) are skipped and
// counted in drops["before_profiler_start"]; rows with a NULL time or device
// in drops["bad_row"]. The rank of a process (NVTX text `rank=N`, the
// earliest such range of the process) goes to ParseSummary::process_ranks.
// Row order is not relied on; the aggregator's results do not depend on it.
//
// Decisions:
//  - The file is opened read-only and immutable (SQLite URI immutable=1): no
//    lock is taken and no journal or temp file is ever created next to the
//    input. Immutable also means SQLite would not notice a writer, so a
//    rollback journal or WAL beside the file (`<file>-journal`, `-wal`: an
//    export being written or interrupted) fails the read with kIo ("still
//    being written", retried) instead of reading half-written pages.
//  - Only real tables are read: a CUPTI_ACTIVITY_KIND_KERNEL (or NVTX_EVENTS,
//    StringIds, MEMCPY, MEMSET) that is a view, or anything else that is not
//    a table in sqlite_master, is not an nsys export (kUnsupported): a view
//    can run an endless recursive query. Views and triggers are also turned
//    off on the connection (SQLITE_DBCONFIG_ENABLE_VIEW/_TRIGGER) and the
//    schema is not trusted (SQLITE_DBCONFIG_TRUSTED_SCHEMA off).
//  - Work is bounded by `budget` (core/budget.h): the file's size counts as
//    bytes read, and a progress handler checks the budget (time, stop) every
//    kProgressOps virtual-machine steps of any query, so no query runs past
//    it. A single value longer than kMaxValueBytes fails with kTooLarge.
//  - Columns are found by name (PRAGMA table_info), never by position: nsys
//    generations add and drop columns. Kernel names are looked up once per
//    distinct string id, so memory is bounded by distinct names, not rows.
//
// Errors: kCorrupt (not an SQLite database, or a damaged one), kUnsupported
// (an SQLite database without CUPTI_ACTIVITY_KIND_KERNEL: "not an nsys
// export, or exported without CUDA trace", or a kernel table lacking a
// needed column), kIo (still being written, or a read error),
// kNotFound/kPermission (cannot open), kTooLarge (out of memory, or a value
// above kMaxValueBytes), kOverBudget (the budget ran out). Events delivered
// before an error stay delivered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/budget.h"
#include "core/result.h"
#include "parse/limits.h"
#include "parse/trace_parser.h"

namespace profwatch::parse {

// The 16-byte header every SQLite 3 database starts with.
inline constexpr std::string_view kSqliteHeader{"SQLite format 3\0", 16};

// Reads the export at `path` into `sink`. ParseSummary: schema kNsys, events
// = events emitted, process_ranks, drops. `budget` may be null (no limit).
// `open_as`, when given, is the path SQLite opens instead (/proc/self/fd/N of
// a descriptor the caller checked and holds open); `path` still names the
// file and its journal.
Result<ParseSummary> ReadNsysExport(const std::string& path, EventSink& sink,
                                    FileBudget* budget = nullptr, const std::string& open_as = {});

// The rank an NVTX range text names: `rank=N` at the start or after a space,
// ';' or ','  ("rank=3; pp=0 dp=3", "tp=1, rank=12"). nullopt otherwise.
std::optional<int64_t> RankOfNvtxText(std::string_view text);
// The step an NVTX range text names: "step" (any case) then at most one of
// ' ', '_', '#', ':', '=' then digits, and nothing else. nullopt otherwise.
std::optional<int64_t> StepOfNvtxText(std::string_view text);
// The process id in an nsys global id (globalPid, globalTid).
inline int64_t ProcessOfGlobalId(int64_t global_id) { return global_id / 0x1000000 % 0x1000000; }

}  // namespace profwatch::parse
