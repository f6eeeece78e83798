// Analysis of one window: read -> parse -> aggregate for a set of files, with
// per-file errors collected rather than failing the window. Shared by the
// `analyze` and `compare` commands and by the daemon's workers. Thread-safe:
// each call uses its own parsers and buffers; files of one window can be
// analysed on `threads` threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregate/aggregator.h"
#include "aggregate/window_stats.h"
#include "classify/classifier.h"
#include "core/budget.h"
#include "core/result.h"
#include "parse/trace_parser.h"
#include "read/byte_source.h"

namespace profwatch::analysis {

// Which file of a host's pair (trace.json.gz / xplane.pb) to read.
enum class SourcePreference { kAuto, kJson, kXplane };
Result<SourcePreference> ParseSourcePreference(std::string_view s);

struct AnalyzeOptions {
  aggregate::AggregateOptions aggregate;
  read::InflateBackend inflate = read::DefaultInflateBackend();
  parse::ParseOptions parse;
  SourcePreference source = SourcePreference::kAuto;
  // Thread budget (AnalyzeFiles): files are analysed on min(threads, files)
  // workers; threads left over go to the workers' files as a read-ahead
  // thread, then JSON decode helpers (parse.decode_threads, at most 2).
  // 1: everything on one thread.
  int threads = 1;
  // A read-ahead thread per file (read::MakePrefetchSource) so inflating
  // overlaps parsing; while it is ahead it decodes JSON events for the parser
  // (WorkShare). kAuto: on when the budget leaves a thread per worker over
  // (ParseFile alone: on).
  enum class Prefetch { kAuto, kOn, kOff };
  Prefetch prefetch = Prefetch::kAuto;
  // Directory of the unlinked spill files that bound memory on large traces
  // (the CLI's --spill-dir).
  std::string spill_dir = "/tmp";
  // "drill", "nvidia", "auto" (pick by the kernel names seen), or a loaded set.
  std::string rules = "auto";
  std::shared_ptr<const classify::Classifier> classifier;  // overrides `rules` when set
  // serve: a file is read only when its real path lies under one of these
  // directories (the watch roots, resolved), checked on the opened
  // descriptor (read::OpenReadOnly). nullopt: anywhere (analyze, or serve
  // --follow-symlinks).
  std::optional<read::Confinement> confine_to;
  // Each file's budget (--file-max-bytes, --file-max-seconds) and the stop
  // flag that abandons the analysis (core/budget.h). A file past its budget
  // fails with kOverBudget; the window goes on with the others.
  FileLimits limits;
  // The names a window keeps (aggregate/name_table.h): length, distinct
  // names per file and per window (docs/security.md).
  aggregate::NameLimits names;
};

struct FileError {
  std::string path;
  Error error;
};

struct WindowAnalysis {
  aggregate::WindowStats stats;
  std::vector<FileError> errors;  // files that failed (whole or partly)
  uint64_t bytes_read = 0;        // raw (compressed) bytes read
  uint64_t json_bytes = 0;        // decompressed bytes parsed
  double seconds = 0.0;           // wall time of the analysis
  std::string format;             // "json", "xplane" or "mixed"
  uint64_t spilled_bytes = 0;     // interval bytes written to spill files (--spill-dir)
  // Files whose spill file could not be created or written, and why: their
  // intervals stayed in memory (the figures are the same, memory is not bounded).
  std::vector<FileError> spill_errors;
  // Paths left out because they name a file already in the window (same
  // device and inode: a hard link, a bind mount): each file is read once.
  size_t duplicate_files = 0;
};

// Analyses `files` as one window. Per-file failures land in `errors` (a
// truncated file's events so far are kept and the window is flagged);
// returns an error only when no file could be read at all. A file named
// twice (the same device and inode) is read once. options.limits'
// window_max_time bounds the whole call: every file's read stops there.
Result<WindowAnalysis> AnalyzeFiles(const std::vector<std::string>& files,
                                    const AnalyzeOptions& options);

// The compiled modules in an xplane's /host:metadata plane
// (parse::ReadXPlaneHloModules), which place CUDA-graph kernels.
Result<parse::HloIndex> ReadHloModules(const std::string& xplane, const AnalyzeOptions& options);

// Opens and parses one file into `sink` (format sniffed from content), within
// `budget` (null: a budget of options.limits of its own).
Result<parse::ParseSummary> ParseFile(const std::string& path, parse::EventSink& sink,
                                      const AnalyzeOptions& options, uint64_t* raw_bytes,
                                      FileBudget* budget = nullptr);

}  // namespace profwatch::analysis
