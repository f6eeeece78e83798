// Profile directory layout: which names are <ts> directories and trace files,
// and what a trace file name says about its writer. Pure functions on names,
// used by the scanner and the watchers here and by window grouping after them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace profwatch::watch {

// Parses a profile dir name "YYYY_MM_DD_HH_MM_SS" into seconds since the
// epoch (UTC; only differences matter). nullopt if the name is not of that form.
std::optional<int64_t> ParseTimestampDirName(std::string_view name);

// True for names the analysis reads: *.trace.json.gz, *.trace.json,
// *.pt.trace.json[.gz], *.json.gz, *.xplane.pb, *.sqlite (nsys exports; the
// scanner looks for those in capture-nsys-profile dirs only).
bool IsTraceFileName(std::string_view name);
// The host part of a trace file name ("h0.proc3.trace.json.gz" -> "h0",
// "vm.trace.json.gz" -> "vm"). Kineto names (*.pt.trace.json[.gz]) are torch's
// <host>_<pid>.<capture ns>: "vm_1481.1795652969892807939.pt.trace.json.gz"
// -> "vm", "node_12_3456.123.pt.trace.json" -> "node_12" (only the last
// _<digits> is the pid); the older <worker>.<pid>.<ts> gives the worker.
// Other names keep their underscores: "node_12.trace.json.gz" -> "node_12".
std::string HostOfTraceFile(std::string_view name);
// True for Kineto names: *.pt.trace.json and *.pt.trace.json.gz.
bool IsKinetoTraceFileName(std::string_view name);
// The window-identity key of a file: its name without the format suffix, so
// h0.trace.json.gz and h0.xplane.pb of one window share it.
std::string ProcessKeyOfTraceFile(std::string_view name);

// The capture time a Kineto file name carries:
// <worker>.<pid>.<time>.pt.trace.json[.gz], where torch writes time.time_ns()
// (older versions milliseconds; microseconds and seconds are read too, by
// magnitude). `id` is the digits as written: the window of one profiling
// cycle is named by it. nullopt for other names.
struct KinetoCapture {
  std::string id;
  int64_t unix_ns = 0;
};
std::optional<KinetoCapture> KinetoCaptureOf(std::string_view name);

// The run directory of a `.../plugins/profile` directory: the profiler's
// logdir (the parent of `plugins/`), or the logdir's parent when it is named
// `tensorboard` (MaxText: `<job>/<run>/tensorboard/plugins/profile`).
std::string RunDirOfProfileDir(const std::string& profile_dir);
// The run directory of a directory of Kineto traces: the directory, or its
// parent when it is named tensorboard, traces, profiler or profile.
std::string RunDirOfKinetoDir(const std::string& kineto_dir);

// Nsight Systems exports: `<run>/capture-nsys-profile/<name>.sqlite`, one file
// per node; every export in that directory is one window.
inline constexpr std::string_view kNsysCaptureDirName = "capture-nsys-profile";
// True for *.sqlite names (not hidden).
bool IsNsysExportName(std::string_view name);
// The run directory of a capture-nsys-profile directory: its parent.
std::string RunDirOfNsysDir(const std::string& nsys_dir);

// rocprofv3 outputs: `<run>/rocprof/<name>_results.json` (or any
// `*.json.gz`), or rocpd databases `<name>_results.db`, one file per
// process; every output in that directory is one window (as nsys exports).
inline constexpr std::string_view kRocprofDirName = "rocprof";
// The one rule for which files of a rocprof dir are read: rocprofv3's
// *_results.json, *.json.gz and *_results.db (rocpd) names (not hidden). A
// subset of IsTraceFileName, so the scanner, the window grouping (daemon)
// and `analyze DIR` all take the same files; what a file is, its content
// decides (parse/sniff.h).
bool IsRocprofOutputName(std::string_view name);

}  // namespace profwatch::watch
