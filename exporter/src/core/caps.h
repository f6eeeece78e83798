// The caps on what one owner (watch/owner.h) and what the whole daemon may
// cost, each declared once: its flag, default, the reason label it is
// exported under, what is past it and why this default. The stages that
// apply a cap take its default from here, and docs/security.md lists them
// as RenderCapsTable() prints them ("Shares per owner": kOwnerCaps;
// "Caps for the whole daemon": kDaemonCaps; CapsTest checks both), and
// docs/rocprof.md the rocprofv3 readers' (kRocprofReaderCaps).
//
// Thread-safety: constants and a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace profwatch::caps {

enum class Unit { kCount, kBytes, kSeconds };

struct Cap {
  // serve's flag, with its argument ("--max-runs-per-owner N"); the name of
  // the limit in the code when no flag sets it.
  std::string_view flag;
  std::string_view reason;  // profwatch_owner_capped{reason}; "" when not exported there
  int64_t value = 0;        // the default (bytes, seconds or a count)
  Unit unit = Unit::kCount;
  std::string_view past;  // what is past the cap
  std::string_view why;   // why this default
};

inline constexpr Cap kRunsPerOwner{
    "--max-runs-per-owner N",
    "owner_run_cap",
    1'000,
    Unit::kCount,
    "the owner's runs with the oldest writes (runs already tracked are kept first): not "
    "analysed, not exported, no training-log reader",
    "1,000 runs at once is far beyond one user's share of a real cluster; each run costs its "
    "exported series (66–90 series per run on the real H200 runs, about 200 with "
    "`--metrics-detail`: [Series per run](../README.md#series-per-run)) and a log reader"};
inline constexpr Cap kWindowsPerOwner{
    "--max-windows-per-owner N",
    "owner_window_cap",
    10'000,
    Unit::kCount,
    "the owner's oldest windows: no state; they do not come back while the daemon runs",
    "every window whose files are on disk is tracked (the analysed ones too, to see them "
    "change): 100 runs keeping 100 profiling windows each"};
inline constexpr Cap kDirsPerOwner{
    "--max-dirs-per-owner N",
    "owner_dir_cap",
    100'000,
    Unit::kCount,
    "the rest of the owner's tree in that scan (`<ts>` dirs are walked newest first, so the "
    "oldest windows are what is left out); a `plugins/profile` entry not named like a `<ts>` "
    "is paid from the same share, so the list of ignored paths the daemon keeps "
    "(`not_timestamp`) stops there too",
    "100 runs of 1,000 windows each, every `<ts>` dir kept; walking that many costs about a "
    "second per scan"};
inline constexpr Cap kWatchesPerOwner{
    "--max-watches-per-owner N",
    "owner_watch_cap",
    1'024,
    Unit::kCount,
    "inotify watches: the owner's other directories are found by the `--poll-interval` rescan "
    "only (nothing is refused)",
    "watches are a per-uid kernel limit (`fs.inotify.max_user_watches`, 8,192 on older "
    "kernels) shared with everything the daemon's user runs; directories other than `<ts>` "
    "dirs are watched first, since a new window shows up as an entry of its profile dir"};
inline constexpr Cap kHistoryBytesPerOwner{
    "--history-max-bytes N",
    "",
    int64_t{64} << 20,
    Unit::kBytes,
    "each owner's `--history` file rotates on its own (`FILE.uidN` to `FILE.uidN.1`; "
    "`profwatch_history_rotations_total{owner}`, one log line per rotation), so one owner's "
    "windows never rotate away another's",
    "unchanged from the single file it replaces; now per owner"};

inline constexpr Cap kStateBytesPerOwner{
    "--max-state-bytes-per-owner N",
    "owner_state_cap",
    int64_t{256} << 20,
    Unit::kBytes,
    "a window whose run state would take the owner's kept run states (memory and `--state`) past "
    "it is not exported: its run keeps its previous window and is flagged `owner_state_cap` "
    "(`profwatch_window_failed`, one warning per window)",
    "a real run keeps 11-16 KB, a 1,024-host job about 4 MB, a run of 65,536 step markers about "
    "1 MB: 1,000 runs of 256 KB, or 64 such jobs; a restart loads about what is kept"};

inline constexpr const Cap* kOwnerCaps[] = {&kRunsPerOwner,       &kWindowsPerOwner,
                                            &kDirsPerOwner,       &kWatchesPerOwner,
                                            &kStateBytesPerOwner, &kHistoryBytesPerOwner};

// Caps on the whole daemon: what any one directory, window, file, run or
// all owners together may cost, whoever owns them.
inline constexpr Cap kFilesPerDir{
    "--max-files-per-dir N",
    "dir_file_cap",
    50'000,
    Unit::kCount,
    "the directory's trace files: not read (`profwatch_scan_refused_total`, logged once)",
    "far above a real job (one file per host and format per window: 2,048 for a 1,024-host JAX "
    "job writing JSON and xplane), low enough that a directory of hostile names costs little "
    "per scan"};
inline constexpr Cap kFilesPerWindow{
    "--max-files-per-window N",
    "window_file_cap",
    10'000,
    Unit::kCount,
    "the window: not analysed (`profwatch_scan_refused_total`, logged once)",
    "five times the files of a 1,024-host JAX job's window"};
inline constexpr Cap kFileBytes{
    "--file-max-bytes N",
    "over_budget",
    int64_t{8} << 30,
    Unit::kBytes,
    "the file (bytes after decompression, and bytes of intervals spilled): fails "
    "(`profwatch_window_errors_total{reason}`)",
    "25 times a capped JAX trace (0.3 GB of JSON), 200 times the largest fixture; a gzip bomb is "
    "counted by what it inflates to"};
inline constexpr Cap kFileSeconds{
    "--file-max-seconds S",
    "over_budget",
    600,
    Unit::kSeconds,
    "the file's read: fails (`profwatch_window_errors_total{reason}`)",
    "more than 3,000 times the slowest fixture; at the parser's slowest rate it covers 30 GiB"};
inline constexpr Cap kWindowSeconds{
    "--window-max-seconds S",
    "over_budget",
    3'600,
    Unit::kSeconds,
    "the window's files still being read, and its finishing step: fail; every phase checks it "
    "and the stop flag",
    "1,024 hosts' capped JAX traces read one after the other"};
inline constexpr Cap kRunStateBytes{
    "WindowPolicyOptions::max_run_state_bytes (pipeline/window_policy.h)",
    "too_large",
    int64_t{32} << 20,
    Unit::kBytes,
    "a window whose run state (figures, kernel names, devices, steps) would be larger: not "
    "exported, its run keeps its previous window (`profwatch_window_failed`)",
    "eight times a 1,024-host job of 8 GPUs; every name in it is bounded at intake"};
inline constexpr Cap kStateBytes{
    "--max-state-bytes N",
    "state_cap",
    int64_t{512} << 20,
    Unit::kBytes,
    "a window that would take all owners' kept run states past it, from an owner keeping at "
    "least an equal share of it (this cap over the owners keeping state): not exported, its run "
    "keeps its previous window (`profwatch_window_failed`); owners below an equal share are "
    "still served, so what is kept stays within twice this cap",
    "a restart loads about what is kept, at a peak of a few times it: within the shipped 2 GiB "
    "memory limit; two owners at their own cap fill it"};
inline constexpr Cap kFollowedLogs{
    "--max-followed-logs N",
    "",
    4'096,
    Unit::kCount,
    "runs whose training logs are not followed (`profwatch_training_logs_refused_total`)",
    "each followed log keeps a file open; four times the runs of a busy cluster"};
inline constexpr Cap kLogBytesPerScan{
    "--log-max-bytes-per-scan N",
    "",
    int64_t{64} << 20,
    Unit::kBytes,
    "the rest of a training log: read at the next scans",
    "a restart's catch-up of a long log takes a few scans, a 200 GB sparse file costs this per "
    "`--poll-interval`"};
inline constexpr Cap kDeviceNamesPerWindow{
    "NameLimits::max_device_names_per_window (aggregate/name_table.h)",
    "device_name_limit",
    int64_t{1} << 21,
    Unit::kCount,
    "(device, kernel name) pairs kept apart: a device's further names share its \"other kernel "
    "names\" slot of the same family (family figures stay exact; top-kernel lists lose them)",
    "a 1,024-host job of 8 GPUs with 200 kernel names each has 1.6 million pairs; without it a "
    "window's memory grew with files x devices x names"};
inline constexpr Cap kStepsPerWindow{
    "NameLimits::max_steps_per_window (aggregate/name_table.h)",
    "step_limit",
    int64_t{1} << 20,
    Unit::kCount,
    "step markers of the window's files: not kept (the step figures are from the kept ones)",
    "16 files of 65,536 markers (a file keeps at most that many); 24 bytes each"};

inline constexpr const Cap* kDaemonCaps[] = {
    &kFilesPerDir,     &kFilesPerWindow,       &kFileBytes,     &kFileSeconds,
    &kWindowSeconds,   &kRunStateBytes,        &kStateBytes,    &kFollowedLogs,
    &kLogBytesPerScan, &kDeviceNamesPerWindow, &kStepsPerWindow};

// What one rocprofv3 output (JSON or rocpd database) keeps while it is read
// (parse/rocprof_reader.h, parse/rocpd_reader.h take their caps from here);
// docs/rocprof.md prints them ("Safety and errors"). The reason is the drop
// reason in profwatch_window_dropped_events{reason}.
inline constexpr Cap kRocprofAgents{
    "kMaxRocprofAgents (parse/rocprof_reader.h)",
    "agent_limit",
    1'024,
    Unit::kCount,
    "further agents of the file (of a process, in the JSON): not kept; a dispatch naming one is "
    "an `unknown_agent` drop",
    "a node has a few dozen agents (8 GPUs and their CPUs); a database merged from many nodes' "
    "processes stays far below"};
inline constexpr Cap kRocprofSymbols{
    "kMaxRocprofSymbols (parse/rocprof_reader.h)",
    "symbol_limit",
    int64_t{1} << 20,
    Unit::kCount,
    "further kernel symbols: not kept; a dispatch of one is an `unknown_kernel` drop",
    "a large PyTorch job loads tens of thousands of kernels; a symbol costs its name and a map "
    "entry"};
inline constexpr Cap kRocprofSymbolBytes{
    "kMaxRocprofSymbolBytes (parse/rocprof_reader.h)",
    "symbol_limit",
    int64_t{64} << 20,
    Unit::kBytes,
    "kernel names past this sum: not kept, as past the symbol count",
    "2^20 names of 64 bytes; demangled template names are long, a few hundred bytes each for "
    "most"};
inline constexpr Cap kRocprofQueues{
    "kMaxRocprofQueues (parse/rocprof_reader.h)",
    "queue_limit",
    4'096,
    Unit::kCount,
    "further (agent, queue) pairs: share one stream number (their kernels still count; only "
    "their split into streams is lost)",
    "HIP creates a few queues per device and stream; 512 per GPU of an 8-GPU node"};
inline constexpr Cap kRocprofMarkers{
    "kMaxRocprofMarkers (parse/rocprof_reader.h)",
    "marker_limit",
    int64_t{1} << 20,
    Unit::kCount,
    "further roctx texts naming a step or a rank: not kept (their ranges are not steps)",
    "one text per profiled step and process is what is used; a map entry each"};
inline constexpr Cap kRocprofRcclCalls{
    "kMaxRocprofRcclCalls (parse/rocprof_reader.h)",
    "rccl_call_limit",
    int64_t{1} << 20,
    Unit::kCount,
    "further collective RCCL API calls: not kept (a kernel launched by one takes the kind of "
    "its thread's latest kept call before it, or none)",
    "one per collective call of the profiled steps; a map entry each"};
inline constexpr Cap kRocprofRecordBytes{
    "RocprofOptions::max_record_bytes (parse/rocprof_reader.h)",
    "record_too_large",
    int64_t{1} << 20,
    Unit::kBytes,
    "a longer JSON record (an agent, symbol, dispatch, ... object): skipped unparsed",
    "a dispatch record is under 1 KiB, an agent's a few KiB; a record is held whole to parse it"};
inline constexpr Cap kRocpdTableSets{
    "kMaxRocpdTableSets (parse/rocpd_reader.h)",
    "table_set_limit",
    64,
    Unit::kCount,
    "further `<table>_<uuid>` sets of a rocpd database: not read",
    "rocprofv3 writes one set per process database; a merged database holds one per merged "
    "run"};

inline constexpr const Cap* kRocprofReaderCaps[] = {
    &kRocprofAgents,  &kRocprofSymbols,   &kRocprofSymbolBytes, &kRocprofQueues,
    &kRocprofMarkers, &kRocprofRcclCalls, &kRocprofRecordBytes, &kRocpdTableSets};

// The Markdown table of `caps`: one row per cap (flag and reason, default,
// what is past it, why), under a header row.
std::string RenderCapsTable(const Cap* const* caps, size_t n);
template <size_t N>
std::string RenderCapsTable(const Cap* const (&caps)[N]) {
  return RenderCapsTable(caps, N);
}

}  // namespace profwatch::caps
