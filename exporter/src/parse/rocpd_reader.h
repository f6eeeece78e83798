// rocpd SQLite database reader (rocprofv3's default output from ROCm 7,
// `<pid>_results.db`): turns one database (one process as rocprofv3 writes
// it; a merged one may hold several) into the same TraceEvents the rocprofv3
// JSON reader emits (parse/rocprof_reader.h), so both read alike everywhere.
// docs/rocprof.md has the user's view.
//
// Schema: rocprofiler-sdk's own DDL, ROCm/rocm-systems commit
// 1b1610fc2b2ab32af71e6e04e4d4a6a4ae597992,
// projects/rocprofiler-sdk/source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql
// (rocpd schema_version 3) and the writer source/lib/output/generateRocpd.cpp.
// Every table is named `<base>_<uuid>` (the run's UUID, '-' as '_'), with a
// view `<base>` over it; only the tables are read (views and triggers are off
// on the connection, as for nsys). A database may hold several such sets
// (suffixes); each is read on its own. Tables used:
//   rocpd_info_agent:  id (the agent's node id), pid, type ('GPU'/'CPU'),
//                      absolute_index, product_name
//   rocpd_info_kernel_symbol: id, display_name (else kernel_name)
//   rocpd_kernel_dispatch: pid (the OS pid), agent_id, kernel_id, queue_id,
//                      start, end (ns)
//   rocpd_memory_copy (optional): pid, start, end, dst_agent_id,
//                      src_agent_id, size
//   rocpd_region + rocpd_string (optional): id, pid, tid, start, end,
//                      name_id: every API call and roctx range; only names
//                      that are a step, a rank or an RCCL collective call
//                      (IsRcclCollectiveOperation; the region's id is the
//                      call's correlation id) are kept.
//   rocpd_event (optional): id, stack_id (a dispatch's correlation id, by
//                      rocpd_kernel_dispatch.tid and .event_id).
// Columns are found by name (PRAGMA table_info).
//
// What it emits (as the JSON reader): per dispatch an X event, cat
// kNsysKernelCat, name = the symbol's display name, pid = the process,
// args_device = the agent's GPU index (its rank among the process's GPU
// agents by absolute_index: HIP's device ordinal), tid = the queue (numbered
// per agent in order of first sight), and for an RCCL kernel args_collective
// = the latest collective call of its thread before its correlation id (as
// the JSON reader; at most kMaxRocprofRcclCalls calls, rccl_call_limit);
// per memory copy cat kNsysMemopCat
// "Memcpy" on the GPU agent it touches (destination first), args_bytes; per
// region whose text names a step (StepOfNvtxText) cat kNsysStepCat; the
// earliest region naming `rank=N` gives the process's rank. ParseSummary:
// schema kRocprof, device_names (GPU agents that dispatched, by index),
// idle_gpu_agents, time_base_us (times are exact ps relative to it).
//
// Bounds: as the nsys reader (immutable read-only open, the file's size
// charged to the budget, a progress handler checking it every kProgressOps
// steps of any query, values at most kMaxValueBytes) plus the JSON reader's
// caps on what is kept: kMaxRocprofAgents (agent_limit), kMaxRocprofSymbols
// and kMaxRocprofSymbolBytes (symbol_limit), kMaxRocprofQueues
// (queue_limit), kMaxRocprofMarkers (marker_limit), and at most
// kMaxRocpdTableSets suffixes (table_set_limit). Drops: bad_row (a NULL
// needed value), bad_time (a time of 0 or below, an end before its start, one
// whose ps overflow), unknown_agent, unknown_kernel.
//
// Errors: as ReadNsysExport (kCorrupt, kIo when a journal or WAL is beside
// the file, kNotFound/kPermission, kTooLarge, kOverBudget), kUnsupported
// when no rocpd_kernel_dispatch table (or one lacking a needed column).
#pragma once

#include <cstddef>
#include <string>

#include "core/budget.h"
#include "core/caps.h"
#include "core/result.h"
#include "parse/limits.h"
#include "parse/trace_parser.h"

namespace profwatch::parse {

Result<ParseSummary> ReadRocpdDatabase(const std::string& path, EventSink& sink,
                                       FileBudget* budget = nullptr,
                                       const std::string& open_as = {});

// Reads an SQLite trace file: a rocpd database when it holds a
// rocpd_kernel_dispatch table, else an Nsight Systems export
// (ReadNsysExport). The content decides, never the name.
Result<ParseSummary> ReadSqliteTrace(const std::string& path, EventSink& sink,
                                     FileBudget* budget = nullptr, const std::string& open_as = {});

}  // namespace profwatch::parse
