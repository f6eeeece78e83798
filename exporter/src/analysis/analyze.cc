#include "analysis/analyze.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "aggregate/bytes.h"
#include "aggregate/flops.h"
#include "aggregate/intervals.h"
#include "core/log.h"
#include "parse/nsys_reader.h"
#include "parse/rocpd_reader.h"
#include "parse/rocprof_reader.h"
#include "parse/sniff.h"
#include "parse/xplane_parser.h"
#include "read/gzip_check.h"
#include "read/prefetch_source.h"
#include "watch/layout.h"

namespace profwatch::analysis {
namespace {

// kAuto resolved to `fallback`.
bool PrefetchWanted(AnalyzeOptions::Prefetch p, bool fallback) {
  if (p == AnalyzeOptions::Prefetch::kOn) return true;
  if (p == AnalyzeOptions::Prefetch::kOff) return false;
  return fallback;
}

// Charges every byte a parser pulls to the file's budget; a Read past the
// budget (or after the stop flag) fails with its kOverBudget error. Checked
// per Read, i.e. per chunk (ParseOptions::chunk_bytes).
class BudgetSource final : public read::ByteSource {
 public:
  BudgetSource(read::ByteSource& inner, FileBudget& budget) : inner_(inner), budget_(budget) {}
  bool HandOverGzipChecks() override { return inner_.HandOverGzipChecks(); }
  void TakeGzipChecks(std::vector<read::GzipMemberCheck>& out) override {
    inner_.TakeGzipChecks(out);
  }
  Result<size_t> Read(char* buf, size_t n) override {
    if (auto s = budget_.Check(); !s) return tl::unexpected(s.error());
    auto got = inner_.Read(buf, n);
    if (!got) return got;
    if (auto s = budget_.AddRead(*got); !s) return tl::unexpected(s.error());
    return got;
  }
  uint64_t RawBytesRead() const override { return inner_.RawBytesRead(); }
  std::string_view Name() const override { return inner_.Name(); }

 private:
  read::ByteSource& inner_;
  FileBudget& budget_;
};

bool IsXplaneName(std::string_view path) { return path.ends_with(".xplane.pb"); }

// `files` without the paths that name a file already listed (same device
// and inode: a hard link, a bind mount), in order; `dropped` counts them. A
// path that cannot be stat'ed is kept: its read reports why.
std::vector<std::string> DistinctFiles(const std::vector<std::string>& files, size_t* dropped) {
  std::vector<std::string> out;
  std::set<std::pair<dev_t, ino_t>> seen;
  for (const std::string& f : files) {
    struct stat st;
    if (::stat(f.c_str(), &st) == 0 && !seen.insert({st.st_dev, st.st_ino}).second) {
      ++*dropped;
      continue;
    }
    out.push_back(f);
  }
  return out;
}

struct FileJob {
  std::string path;
  std::string fallback;  // xplane sibling to use if the JSON is truncated (auto)
  std::string xplane;    // the process's xplane (HLO modules), "" if none
};

struct FileOutcome {
  std::shared_ptr<aggregate::FileStats> stats;
  std::unique_ptr<aggregate::FileAggregator> aggregator;  // until classified
  parse::ParseSummary summary;
  bool partial = false;
  bool ok = false;
  std::optional<Error> error;
  uint64_t raw_bytes = 0;
  std::string format;
  uint64_t spilled_bytes = 0;
  std::string spill_error;
};

// Chooses which files to read: one per process key (host[.procN]) and kind
// (JSON, xplane) unless the preference says otherwise. Returns jobs in window order.
std::vector<FileJob> SelectSources(const std::vector<std::string>& files, SourcePreference pref) {
  std::map<std::string, std::pair<std::string, std::string>> by_key;  // key -> (json, xplane)
  std::vector<std::string> order;
  for (const auto& f : files) {
    std::string dir = std::filesystem::path(f).parent_path().string();
    std::string key =
        dir + "/" + watch::ProcessKeyOfTraceFile(std::filesystem::path(f).filename().string());
    // A second file of one kind under a key (two captures of one process
    // given together) is read as its own file, never dropped.
    while (by_key.count(key) != 0) {
      const auto& slots = by_key[key];
      if ((IsXplaneName(f) ? slots.second : slots.first).empty()) break;
      key += "#";
    }
    auto [it, inserted] = by_key.try_emplace(key);
    if (inserted) order.push_back(key);
    (IsXplaneName(f) ? it->second.second : it->second.first) = f;
  }
  std::vector<FileJob> jobs;
  for (const auto& key : order) {
    const auto& [json, xplane] = by_key[key];
    switch (pref) {
      case SourcePreference::kJson:
        if (!json.empty())
          jobs.push_back({json, "", xplane});
        else
          jobs.push_back({xplane, "", xplane});
        break;
      case SourcePreference::kXplane:
        jobs.push_back({xplane.empty() ? json : xplane, "", xplane});
        break;
      case SourcePreference::kAuto:
        if (json.empty())
          jobs.push_back({xplane, "", xplane});
        else
          jobs.push_back({json, xplane, xplane});
        break;
    }
  }
  return jobs;
}

}  // namespace

Result<SourcePreference> ParseSourcePreference(std::string_view s) {
  if (s == "auto") return SourcePreference::kAuto;
  if (s == "json") return SourcePreference::kJson;
  if (s == "xplane") return SourcePreference::kXplane;
  return MakeError(ErrorCode::kConfig,
                   "unknown --source '" + std::string(s) + "' (expected auto, json or xplane)");
}

Result<parse::ParseSummary> ParseFile(const std::string& path, parse::EventSink& sink,
                                      const AnalyzeOptions& options, uint64_t* raw_bytes,
                                      FileBudget* budget) {
  std::optional<FileBudget> own;
  if (budget == nullptr) budget = &own.emplace(options.limits);
  if (auto s = budget->Check(); !s) return tl::unexpected(Error(s.error()).Wrap(path));
  const read::Confinement* confine = options.confine_to ? &*options.confine_to : nullptr;
  auto source = read::OpenTraceSource(path, options.inflate, confine);
  if (!source) return tl::unexpected(source.error());
  // The read-ahead thread decodes JSON events while its buffers are full
  // (the parsing thread is behind), instead of sleeping: docs/performance.md
  // says what this buys.
  std::shared_ptr<WorkShare> share;
  if (PrefetchWanted(options.prefetch, true)) {
    share = std::make_shared<WorkShare>();
    *source = read::MakePrefetchSource(std::move(*source), options.parse.chunk_bytes, 4, share);
  } else {
    // One thread: the gzip CRC-32 by GzipCrc32 here rather than zlib's.
    *source = read::MakeGzipCheckSource(std::move(*source));
  }
  // Sniff the decompressed head so the content, not the name, picks the parser.
  std::string head(64, '\0');
  size_t got = 0;
  while (got < head.size()) {
    auto n = (*source)->Read(head.data() + got, head.size() - got);
    if (!n) {
      Error e = n.error();
      if (raw_bytes) *raw_bytes = (*source)->RawBytesRead();
      return tl::unexpected(e.Wrap(path));
    }
    if (*n == 0) break;
    got += *n;
  }
  head.resize(got);
  parse::FileFormat format = parse::SniffFormat(head);
  if (format == parse::FileFormat::kSqlite) {
    // SQLite reads the database file itself (pages, not a byte stream).
    if (raw_bytes) *raw_bytes = (*source)->RawBytesRead();
    source->reset();
    if (confine == nullptr) return parse::ReadSqliteTrace(path, sink, budget);
    // SQLite opens the file itself: it gets a descriptor checked here, held
    // open while it reads, so the path cannot be swapped in between.
    Result<int> fd = read::OpenReadOnly(path, confine);
    if (!fd) return tl::unexpected(fd.error());
    auto summary =
        parse::ReadSqliteTrace(path, sink, budget, "/proc/self/fd/" + std::to_string(*fd));
    ::close(*fd);
    return summary;
  }
  auto replay_source = read::MakeReplaySource(head, std::move(*source));
  BudgetSource replay(*replay_source, *budget);
  std::unique_ptr<parse::TraceParser> parser;
  if (format == parse::FileFormat::kRocprofJson) {
    parse::RocprofOptions rocprof;
    rocprof.chunk_bytes = options.parse.chunk_bytes;
    auto summary = parse::ReadRocprofJson(replay, sink, rocprof);
    if (raw_bytes) *raw_bytes = replay.RawBytesRead();
    if (!summary) return tl::unexpected(Error(summary.error()).Wrap(path));
    return summary;
  }
  if (format == parse::FileFormat::kXplane) {
    parser = parse::MakeXPlaneParser(options.parse);
  } else if (format == parse::FileFormat::kJson || got == 0) {
    parse::ParseOptions json_options = options.parse;
    json_options.work_share = share;
    parser = parse::MakeJsonTraceParser(json_options);
  } else {
    if (raw_bytes) *raw_bytes = replay.RawBytesRead();
    return MakeError(ErrorCode::kCorrupt,
                     path + ": neither a JSON trace nor an XSpace protobuf (unrecognised content)");
  }
  auto summary = parser->Parse(replay, sink);
  if (raw_bytes) *raw_bytes = replay.RawBytesRead();
  if (!summary) {
    Error e = summary.error();
    if (e.context.find(path) == std::string::npos) e.Wrap(path);
    return tl::unexpected(e);
  }
  return summary;
}

Result<parse::HloIndex> ReadHloModules(const std::string& xplane, const AnalyzeOptions& options) {
  auto source = read::OpenTraceSource(xplane, options.inflate,
                                      options.confine_to ? &*options.confine_to : nullptr);
  if (!source) return tl::unexpected(source.error());
  FileBudget budget(options.limits);
  BudgetSource budgeted(**source, budget);
  return parse::ReadXPlaneHloModules(budgeted, options.parse.chunk_bytes);
}

namespace {

// Runs fn(i) for every i below n on `threads` workers (inline with one).
template <class Fn>
void ForEachOnWorkers(size_t n, int threads, Fn fn) {
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& th : pool) th.join();
}

// Parses `path` into a fresh aggregator under its own file budget; `out`
// holds the result: ok, partial (a file that ended early keeps what was
// parsed), or the error.
void ParseInto(const std::string& path, const FileJob& job, FileOutcome& out,
               const AnalyzeOptions& options, const AnalyzeOptions& file_options,
               const std::shared_ptr<aggregate::WindowNames>& names) {
  FileBudget file_budget(options.limits);
  out.aggregator = std::make_unique<aggregate::FileAggregator>(
      path, aggregate::FileAggregator::kDefaultIntervalBudget, options.spill_dir, names);
  out.aggregator->KeepGraphKernels(!job.xplane.empty());
  out.aggregator->SetBudget(&file_budget);
  uint64_t raw = 0;
  auto summary = ParseFile(path, *out.aggregator, file_options, &raw, &file_budget);
  // A spill past the budget ends the parse at its next check with the
  // budget's error; a parse that ended anyway reports it too.
  if (summary && file_budget.exceeded()) summary = tl::unexpected(file_budget.Check().error());
  if (!summary && summary.error().code == ErrorCode::kOverBudget &&
      summary.error().context.find(path) == std::string::npos) {
    summary.error().Wrap(path);
  }
  out.aggregator->SetBudget(nullptr);
  out.raw_bytes += raw;
  out.format = IsXplaneName(path) ? "xplane" : "json";
  if (summary && summary->schema == parse::TraceSchema::kNsys) out.format = "nsys";
  if (summary && summary->schema == parse::TraceSchema::kRocprof) out.format = "rocprof";
  if (summary) {
    out.summary = *summary;
    out.ok = true;
    out.partial = false;
    out.error.reset();
  } else {
    out.error = summary.error();
    out.ok = summary.error().code == ErrorCode::kTruncated;
    out.partial = out.ok;
  }
}

// Kernels of a CUDA graph carry no scope: the process's xplane holds the
// compiled modules whose schedules place them (read only then).
void AttachHloModules(const FileJob& job, FileOutcome& out, const AnalyzeOptions& options) {
  if (!out.ok || !out.aggregator || !out.aggregator->HasGraphKernels()) return;
  if (job.xplane.empty()) {
    out.aggregator->SetHloModules(nullptr, "no .xplane.pb of this process beside " +
                                               std::filesystem::path(job.path).filename().string());
    return;
  }
  auto index = ReadHloModules(job.xplane, options);
  if (!index) {
    out.aggregator->SetHloModules(nullptr, std::filesystem::path(job.xplane).filename().string() +
                                               ": " + index.error().context);
    return;
  }
  for (const auto& [module, why] : index->too_complex) {
    // One line per module and read; `why` reads "too_complex: <bound>".
    LogWarn("hlo module skipped", {{"reason", "too_complex"},
                                   {"path", job.xplane},
                                   {"module", module},
                                   {"detail", std::string_view(why).substr(why.find(' ') + 1)}});
  }
  out.aggregator->SetHloModules(std::make_shared<const parse::HloIndex>(std::move(*index)));
}

// One file of the window: its source, else (auto) the uncapped xplane of
// the same process when the JSON hit the writer's event cap or was cut; then
// its HLO modules; then parked until every file is read.
void AnalyzeOneFile(const FileJob& job, FileOutcome& out, bool park, const AnalyzeOptions& options,
                    const AnalyzeOptions& file_options,
                    const std::shared_ptr<aggregate::WindowNames>& names) {
  ParseInto(job.path, job, out, options, file_options, names);
  if (!job.fallback.empty() && (!out.ok || out.partial || out.summary.suspected_truncated)) {
    FileOutcome saved = std::move(out);
    out = FileOutcome{};
    ParseInto(job.fallback, job, out, options, file_options, names);
    if (!out.ok) {
      out = std::move(saved);  // keep the JSON result and its error
    } else {
      out.raw_bytes += saved.raw_bytes;
    }
  }
  AttachHloModules(job, out, options);
  // Finish waits for every file (the rule set may depend on all names):
  // meanwhile each file's intervals go to its spill file, not RAM.
  if (park && out.ok && out.aggregator) out.aggregator->Park();
}

// A built-in rule set's classifier, compiled once per process (the sets
// never change).
Result<std::shared_ptr<const classify::Classifier>> BuiltinClassifier(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const classify::Classifier>> compiled;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = compiled.find(name); it != compiled.end()) return it->second;
  auto set = classify::BuiltinRuleSet(name);
  if (!set) return tl::unexpected(set.error());
  auto created = classify::Classifier::Create(std::move(*set));
  if (!created) return tl::unexpected(created.error());
  compiled.emplace(name, *created);
  return *created;
}

// The classifiers PickClassifier may choose from: the explicit one, the
// named set, or every set `auto` may pick. A kernel name that is cut or over
// a cap is classified by each of them on its whole name as it is read.
Result<std::vector<std::shared_ptr<const classify::Classifier>>> CandidateClassifiers(
    const AnalyzeOptions& options) {
  if (options.classifier) return std::vector{options.classifier};
  std::vector<std::string> sets = {options.rules};
  if (options.rules == "auto") sets = {"drill", "nvidia", "amd"};
  std::vector<std::shared_ptr<const classify::Classifier>> out;
  for (const std::string& name : sets) {
    auto c = BuiltinClassifier(name);
    if (!c) return tl::unexpected(c.error());
    out.push_back(std::move(*c));
  }
  return out;
}

// The classifier: explicit, named, or chosen from the kernel names seen (an
// nsys export holds CUDA kernels only: the NVIDIA set; rocprofv3 output HIP
// kernels only: the AMD set).
Result<std::shared_ptr<const classify::Classifier>> PickClassifier(
    const std::vector<FileOutcome>& outcomes, const AnalyzeOptions& options) {
  if (options.classifier) return options.classifier;
  std::string set_name = options.rules;
  const bool nsys = std::any_of(outcomes.begin(), outcomes.end(), [](const FileOutcome& o) {
    return o.ok && o.summary.schema == parse::TraceSchema::kNsys;
  });
  const bool rocprof = std::any_of(outcomes.begin(), outcomes.end(), [](const FileOutcome& o) {
    return o.ok && o.summary.schema == parse::TraceSchema::kRocprof;
  });
  if (set_name == "auto" && nsys) set_name = "nvidia";
  if (set_name == "auto" && rocprof) set_name = "amd";
  if (set_name == "auto") {
    std::vector<std::string> names;
    for (const auto& o : outcomes) {
      if (o.ok && o.aggregator) {
        auto more = o.aggregator->KernelNames(2000);
        names.insert(names.end(), more.begin(), more.end());
      }
    }
    std::vector<std::string_view> views(names.begin(), names.end());
    set_name = std::string(classify::AutoRuleSetName(views));
  }
  return BuiltinClassifier(set_name);
}

// One line per file whose names, devices, streams or steps were cut or went
// over a cap (aggregate/kernel_table.h): what was cut, by reason, with the
// counts; the figures keep the time under the "other" entries.
void LogCaps(const std::vector<aggregate::FileSummary>& files) {
  static constexpr std::string_view kReasons[] = {
      "name_cut",     "name_limit",   "scope_cut",  "scope_limit",      "hlo_name_limit",
      "device_limit", "stream_limit", "step_limit", "device_name_limit"};
  for (const aggregate::FileSummary& f : files) {
    std::vector<LogField> fields = {{"path", f.path}};
    for (std::string_view reason : kReasons) {
      auto it = f.drops.find(std::string(reason));
      if (it == f.drops.end()) continue;
      fields.emplace_back(reason, it->second);
    }
    if (fields.size() > 1) {
      fields.emplace_back("hint", "docs/security.md lists the caps");
      Log(LogLevel::kWarn, "trace file over a keep cap, cut or summed under other", fields);
    }
  }
}

// A JAX trace.json.gz names no device; the xplane of its process does (the
// peaks for MFU and the roofline). Read, without its events, only when FLOPs
// or bytes were counted and nothing named the device.
void NameDeviceFromXplane(const std::vector<FileJob>& jobs, const AnalyzeOptions& options,
                          aggregate::FlopStats& flops, aggregate::ByteStats& bytes) {
  if (!flops.device_name.empty()) return;
  const bool want_flops = flops.Total() > 0 && flops.peak_per_second <= 0;
  const bool want_bytes = bytes.Bytes() > 0 && bytes.peak_hbm_bytes_per_second <= 0;
  if (!want_flops && !want_bytes) return;
  for (const FileJob& job : jobs) {
    if (job.xplane.empty() || job.xplane == job.path) continue;
    auto source = read::OpenTraceSource(job.xplane, options.inflate,
                                        options.confine_to ? &*options.confine_to : nullptr);
    if (!source) continue;
    auto names = parse::ReadXPlaneDeviceNames(**source, options.parse.chunk_bytes);
    if (!names || names->empty()) continue;
    flops.device_name = names->front();
    if (auto peak = aggregate::DensePeakFlops(flops.device_name); want_flops && peak) {
      flops.peak_per_second = *peak;
      flops.peak_source = "datasheet";
    }
    if (auto peak = aggregate::PeakHbmBandwidth(flops.device_name); want_bytes && peak) {
      bytes.peak_hbm_bytes_per_second = peak->bytes_per_second;
      bytes.peak_hbm_source = peak->source;
    }
    return;
  }
}

// Finishes (interval unions) each usable file's aggregation on `threads`
// workers again; a lone file's devices share the whole `budget`. The
// window's time budget and the stop flag cover finishing as they cover
// reading: a file finished past them is over budget (its outcome fails),
// not waited for. The finished stats by outcome, null where none.
std::vector<std::shared_ptr<aggregate::FileStats>> FinishFiles(
    const std::vector<FileJob>& jobs, std::vector<FileOutcome>& outcomes,
    const AnalyzeOptions& options, const classify::Classifier& classifier, int threads,
    int budget) {
  FileLimits window_limits;
  window_limits.max_bytes = 0;
  window_limits.max_time = std::chrono::nanoseconds(0);
  window_limits.window_max_time = options.limits.window_max_time;
  window_limits.window_deadline = options.limits.window_deadline;
  window_limits.stop = options.limits.stop;
  FileBudget window_budget(window_limits);
  std::vector<std::shared_ptr<aggregate::FileStats>> finished(outcomes.size());
  const int finish_threads = outcomes.size() <= 1 ? 1 : threads;
  const int device_threads = outcomes.size() == 1 ? budget : 1;
  ForEachOnWorkers(outcomes.size(), finish_threads, [&](size_t i) {
    FileOutcome& o = outcomes[i];
    if (!o.ok) return;
    o.spilled_bytes = o.aggregator->SpilledIntervals() * sizeof(aggregate::Interval);
    o.spill_error = o.aggregator->SpillError();
    if (window_budget.Check()) {
      finished[i] =
          o.aggregator->Finish(o.summary, o.partial, classifier, device_threads, &window_budget);
    }
    o.aggregator.reset();
    if (finished[i] == nullptr) {
      o.ok = false;
      o.error = Error(window_budget.Check().error()).Wrap(jobs[i].path);
    }
  });
  return finished;
}

}  // namespace

Result<WindowAnalysis> AnalyzeFiles(const std::vector<std::string>& files_in,
                                    const AnalyzeOptions& options_in) {
  const auto start = std::chrono::steady_clock::now();
  AnalyzeOptions options = options_in;
  if (options.limits.window_max_time.count() > 0) {
    options.limits.window_deadline =
        std::min(options.limits.window_deadline, start + options.limits.window_max_time);
  }
  size_t duplicates = 0;
  const std::vector<std::string> files = DistinctFiles(files_in, &duplicates);
  std::vector<FileJob> jobs = SelectSources(files, options.source);
  std::vector<FileOutcome> outcomes(jobs.size());
  // options.threads is the thread budget: one worker per file up to it.
  // Threads left over are shared out per worker: the first becomes the
  // file's read-ahead thread (inflating overlaps parsing, and it decodes
  // JSON events when it is ahead), further ones decode events (at most 2).
  // With every thread of the budget already a worker, they would only add
  // switching.
  const int budget = std::max(1, options.threads);
  const int threads = std::max(1, std::min<int>(budget, static_cast<int>(jobs.size())));
  const int spare_per_worker = (budget - threads) / threads;
  AnalyzeOptions file_options = options;
  file_options.parse.dur_as_double = false;  // aggregation uses the exact dur_ps only
  file_options.prefetch = PrefetchWanted(options.prefetch, spare_per_worker >= 1)
                              ? AnalyzeOptions::Prefetch::kOn
                              : AnalyzeOptions::Prefetch::kOff;
  if (file_options.parse.decode_threads == 0) {
    file_options.parse.decode_threads = std::clamp(spare_per_worker - 1, 0, 2);
  }
  // The window's names: one pool (and its caps) for all its files.
  auto candidates = CandidateClassifiers(options);
  if (!candidates) return tl::unexpected(candidates.error());
  auto names = std::make_shared<aggregate::WindowNames>(options.names, std::move(*candidates));
  ForEachOnWorkers(jobs.size(), threads, [&](size_t i) {
    AnalyzeOneFile(jobs[i], outcomes[i], jobs.size() > 1, options, file_options, names);
  });

  auto classifier = PickClassifier(outcomes, options);
  if (!classifier) return tl::unexpected(classifier.error());

  std::vector<std::shared_ptr<aggregate::FileStats>> finished =
      FinishFiles(jobs, outcomes, options, **classifier, threads, budget);

  WindowAnalysis result;
  std::vector<std::shared_ptr<aggregate::FileStats>> stats;
  std::set<std::string> formats;
  size_t usable = 0;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    FileOutcome& o = outcomes[i];
    result.bytes_read += o.raw_bytes;
    result.spilled_bytes += o.spilled_bytes;
    if (!o.spill_error.empty()) {
      result.spill_errors.push_back({jobs[i].path, Error{ErrorCode::kIo, o.spill_error}});
    }
    if (o.error) result.errors.push_back({jobs[i].path, *o.error});
    if (!o.ok) continue;
    ++usable;
    result.json_bytes += o.summary.json_bytes;
    formats.insert(o.format);
    stats.push_back(std::move(finished[i]));
  }
  if (usable == 0 && !jobs.empty()) {
    Error e = result.errors.empty() ? Error{ErrorCode::kNotFound, "no trace files"}
                                    : result.errors.front().error;
    if (result.errors.size() > 1) {
      e.context += " (and " + std::to_string(result.errors.size() - 1) + " more failed files)";
    }
    return tl::unexpected(e);
  }
  result.stats = aggregate::MergeWindow(stats, **classifier, options.aggregate);
  LogCaps(result.stats.files);
  NameDeviceFromXplane(jobs, options, result.stats.flops, result.stats.bytes);
  result.format = formats.size() == 1 ? *formats.begin() : (formats.empty() ? "json" : "mixed");
  result.duplicate_files = duplicates;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace profwatch::analysis
