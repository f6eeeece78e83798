#include "cli/serve_flags.h"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <thread>

#include "cli/cli_util.h"
#include "pipeline/limits.h"
#include "watch/scanner.h"

namespace profwatch::cli {
namespace {

// A cap on a count, at least `min` (0 where 0 turns the cap off), its
// default shown in --help.
CLI::Option* AddCap(CLI::App& app, const std::string& name, int64_t& value, int64_t min,
                    const std::string& help) {
  return app.add_option(name, value, help)
      ->check(WholeAtLeast(min, INT64_MAX))
      ->capture_default_str();
}

// What is watched and how: roots, rescans, symlinks, file caps, host filter,
// shard.
void AddScanOptions(CLI::App& app, ServeFlags& f) {
  app.add_option("--watch", f.watch,
                 "Directory to watch (repeatable): DIR is a directory of jobs (each child a "
                 "job, training_job = its name); JOB=DIR is one job's directory (or one run's), "
                 "labelled JOB. Default: the bundled demo job directory (kept whatever its age "
                 "unless --retention is given)")
      ->allow_extra_args(false);  // one value per occurrence: never swallow what follows
  app.add_option("--poll-interval", f.poll_interval, "Full rescan period (always runs)")
      ->capture_default_str();
  app.add_flag("--no-inotify", f.no_inotify, "Poll only (no inotify hints)");
  app.add_flag("--follow-symlinks", f.follow_symlinks,
               "Walk directory symlinks and read trace file symlinks that lead out of the watch "
               "root (default: skip them)");
  AddCap(app, "--max-files-per-dir", f.max_files_per_dir, 1,
         "A directory holding more trace files is not analysed (counted and logged "
         "once); a <ts> dir is held to --max-files-per-window too");
  AddCap(app, "--max-files-per-window", f.max_files_per_window, 1,
         "A window of more trace files is not analysed (counted and logged once)");
  // Per owner (watch/owner.h): anyone who can write under a root can make
  // job and run directories, so no owner may take more than these.
  AddCap(app, "--max-runs-per-owner", f.max_runs_per_owner, 0,
         "Runs tracked per owner (uid of the run directory); past it the runs with the "
         "oldest writes are not analysed (counted and logged; 0: no cap)");
  AddCap(app, "--max-windows-per-owner", f.max_windows_per_owner, 0,
         "Windows tracked per owner; past it the owner's oldest windows are not "
         "tracked (counted and logged; 0: no cap)");
  AddCap(app, "--max-dirs-per-owner", f.max_dirs_per_owner, 0,
         "Directories walked per owner and scan (<ts> dirs newest first); the rest of "
         "the owner's tree is not walked (counted and logged; 0: no cap)");
  AddCap(app, "--max-watches-per-owner", f.max_watches_per_owner, 0,
         "inotify watches per owner; the owner's other directories are found by the "
         "--poll-interval rescan (0: no budget)");
  AddCap(app, "--max-state-bytes-per-owner", f.max_state_bytes_per_owner, 0,
         "Bytes of run state (memory and --state) per owner; a window past it is not exported "
         "(flagged owner_state_cap; 0: no cap)");
  AddCap(app, "--max-state-bytes", f.max_state_bytes, 0,
         "Bytes of run state (memory and --state) of all owners; past it a window of an owner "
         "keeping an equal share or more is not exported (flagged state_cap; 0: no cap)");
  app.add_option("--host-filter", f.host_filter,
                 "Analyse only files whose names start with this host name; 'auto' = this "
                 "machine's short host name");
  app.add_option("--shard", f.shard,
                 "I/N: export only the jobs whose directory name hashes to I under Prometheus' "
                 "hashmod with modulus N; I may be a pod name ending in -I (profwatch-2/3). "
                 "Restart to change");
}

// Where /metrics answers and behind what (TLS, auth).
void AddWebOptions(CLI::App& app, ServeFlags& f) {
  app.add_option("--listen,--web.listen-address", f.listen,
                 "HTTP address for /metrics (host:port; port 0 picks a free port)")
      ->capture_default_str();
  app.add_option("--web.config.file", f.web_config_file,
                 "TLS, basic auth and response headers for every endpoint, in Prometheus "
                 "exporter-toolkit's web config format; re-read when it changes "
                 "(docs/security.md)");
  app.add_option("--listen-port-file", f.listen_port_file,
                 "Write the bound port to this file once listening (for tests and scripts)");
}

// When a window is complete, retried, given up or dropped.
void AddWindowOptions(CLI::App& app, ServeFlags& f) {
  app.add_option("--skew", f.skew, "Largest gap between adjacent <ts> dirs of one window")
      ->capture_default_str();
  app.add_option("--settle", f.settle, "Quiet time before a window is complete")
      ->capture_default_str();
  app.add_option("--expected-gpus", f.expected_gpus, "GPUs expected per window (0 = learn)")
      ->check(WholeAtLeast(0));
  app.add_option("--expected-files", f.expected_files,
                 "Trace files expected per window (0 = learn from the previous window)")
      ->check(WholeAtLeast(0));
  app.add_option("--window-timeout", f.window_timeout,
                 "Analyse a window short of its expectation after this long, flagged incomplete")
      ->capture_default_str();
  app.add_option("--reanalysis-interval", f.reanalysis_interval,
                 "Analyse a window whose files changed after its analysis no sooner than this "
                 "after that analysis ended (nor sooner than it took); 0s: only --settle")
      ->capture_default_str();
  app.add_option("--future-tolerance", f.future_tolerance,
                 "Skip <ts> dirs dated further than this ahead of the wall clock (clock skew, "
                 "copied trees) until the clock catches up")
      ->capture_default_str();
  app.add_option("--max-retries", f.max_retries, "Tries before a failing file is given up")
      ->check(WholeAtLeast(1))
      ->capture_default_str();
  app.add_option("--workers", f.workers,
                 "Windows analysed at once (niced threads): more than one, so a window "
                 "running to its file budget does not hold the others")
      ->check(WholeAtLeast(1))
      ->capture_default_str();
  app.add_option("--worker-nice", f.worker_nice,
                 "Added to the daemon's nice value for the analysis workers, so training and "
                 "the scrape path go first; 0 keeps them at the daemon's own priority")
      ->check(WholeAtLeast(0, 19))
      ->capture_default_str();
  app.add_option("--retention", f.retention,
                 "A run leaves /metrics, and is no longer analysed, this long after its last "
                 "activity (the newest write to its window files or training log); more than 0")
      ->capture_default_str();
}

// How a window is analysed: divisor, exports, rules, step time, spill and
// per-file budget.
void AddServeAnalysisOptions(CLI::App& app, ServeFlags& f) {
  app.add_option("--profile-steps", f.profile_steps,
                 "Profiled steps per window (divisor); given explicitly it wins over the "
                 "window's own count (" +
                     ProfileStepsDefaultHelp() + ")")
      ->check(WholeAtLeast(1))
      ->each([&f](const std::string&) { f.profile_steps_explicit = true; });
  app.add_flag("--metrics-detail", f.metrics_detail,
               "Also export per-kernel, per-region and per-family exclusive/idle-before "
               "series and zero series of families that ran no kernel (README: Series per run)");
  app.add_option("--top-kernels", f.top_kernels,
                 "Top kernels per family (exported with --metrics-detail)")
      ->check(WholeAtLeast(0))
      ->capture_default_str();
  AddModelOptions(app, f.model);
  app.add_option(
         "--top-regions", f.top_regions,
         "Regions by kernel time (exported with --metrics-detail); the rest as region=\"other\"")
      ->check(WholeAtLeast(1))
      ->capture_default_str();
  app.add_option("--rules", f.rules, "Base family rule set: drill | nvidia | amd | auto")
      ->check(CLI::IsMember({"drill", "nvidia", "amd", "auto"}))
      ->capture_default_str();
  app.add_option("--families", f.families, "Family rules file added before the base set");
  app.add_option("--source", f.source, "auto | json | xplane")
      ->check(CLI::IsMember({"auto", "json", "xplane"}))
      ->capture_default_str();
  app.add_option("--step-time", f.step_time, "Step seconds from configuration (gap source)")
      ->check(NumberAtLeast(0, "none"));
  app.add_option("--log", f.log,
                 "Training log to tail for step times (repeatable): FILE (the only watched "
                 "run), RUN=FILE or JOB/RUN=FILE")
      ->allow_extra_args(false);
  app.add_option("--log-glob", f.log_glob,
                 "Training-log glob tried per run, in order (repeatable; replaces the "
                 "defaults); {jobs_root}, {job}, {run} are replaced")
      ->allow_extra_args(false);
  app.add_option("--max-followed-logs", f.max_followed_logs,
                 "Runs whose training logs are followed at most (one open file each); "
                 "more are counted in profwatch_training_logs_refused_total")
      ->check(WholeAtLeastU64(1))
      ->capture_default_str();
  app.add_option("--log-max-bytes-per-scan", f.log_max_bytes_per_scan,
                 "Bytes each training log may read per --poll-interval (a long log catches up "
                 "over several; a huge file costs a bounded rate)")
      ->check(WholeAtLeastU64(1))
      ->capture_default_str();
  AddSpillDirOption(app, f.spill_dir);
  AddFileBudgetOptions(app, f.file_budget);
  app.add_option("--window-max-seconds", f.window_max_seconds,
                 "Per window: most seconds of reading all its files; its files still being read "
                 "then fail with reason over_budget (0: no limit)")
      ->check(NumberAtLeast(0))
      ->capture_default_str();
}

// State, configuration, history and logging.
void AddStateOptions(CLI::App& app, ServeFlags& f) {
  app.add_option("--state", f.state, "Persist analysed windows here (atomic rewrite)");
  app.add_option("--config", f.config, "YAML/JSON file holding any flag by its long name");
  app.add_option("--history", f.history,
                 "Append every analysed window's summary to JSON Lines files: FILE.uidN per "
                 "owner (uid of the run directory)");
  app.add_option("--history-max-bytes", f.history_max_bytes,
                 "Per owner: rotate its --history file to FILE.uidN.1 beyond this size")
      ->check(WholeAtLeastU64(1))
      ->capture_default_str();
  app.add_option("--log-level", f.log_level, "trace|debug|info|warn|error|critical|off")
      ->capture_default_str();
  app.add_option("--log-format", f.log_format, "text | json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

void AddServeOptions(CLI::App& app, ServeFlags& f) {
  AddScanOptions(app, f);
  AddWebOptions(app, f);
  AddWindowOptions(app, f);
  AddServeAnalysisOptions(app, f);
  AddStateOptions(app, f);
}

// The config file as extra command-line arguments, skipping flags that the
// command line sets itself.
Result<std::vector<std::string>> ConfigArgs(const std::string& path, CLI::App& app) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return MakeError(ErrorCode::kConfig, "config file " + path + ": cannot be read");
  } catch (const YAML::Exception& e) {
    // e.msg without yaml-cpp's "yaml-cpp: error at" prefix: line, column, what.
    return MakeError(ErrorCode::kConfig, "config file " + path + ": line " +
                                             std::to_string(e.mark.line + 1) + ", column " +
                                             std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kConfig, "config file " + path + ": " + e.what());
  }
  if (root.IsNull()) return std::vector<std::string>{};
  if (!root.IsMap()) {
    return MakeError(ErrorCode::kConfig, "config file " + path + ": expected a map of flags");
  }
  std::vector<std::string> out;
  try {
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      while (!key.empty() && key.front() == '-') key.erase(0, 1);
      const std::string flag = "--" + key;
      if (key == "config") continue;
      const CLI::Option* opt = app.get_option_no_throw(flag);
      if (opt == nullptr) {
        return MakeError(ErrorCode::kConfig,
                         "config file " + path + ": unknown flag '" + key + "'");
      }
      if (opt->count() > 0) continue;  // the command line wins
      const YAML::Node& v = kv.second;
      if (v.IsSequence()) {
        for (const auto& item : v) {
          out.push_back(flag);
          out.push_back(item.as<std::string>());
        }
      } else if (v.IsScalar()) {
        // --flag=value also sets switches (true/false/yes/no/on/off/1/0).
        out.push_back(flag + "=" + v.as<std::string>());
      } else if (!v.IsNull()) {
        return MakeError(ErrorCode::kConfig,
                         "config file " + path + ": flag '" + key + "' needs a value or a list");
      }
    }
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kConfig, "config file " + path + ": " + e.what());
  }
  return out;
}

}  // namespace

ParsedServeFlags ParseServeFlags(const std::vector<std::string>& args) {
  ParsedServeFlags result;
  ServeFlags first;
  CLI::App app(
      "profwatch serve: watch job directories, analyse profile windows as they land, "
      "expose Prometheus metrics");
  AddServeOptions(app, first);
  if (std::optional<int> code = ParseArgs(app, "serve", args)) {
    result.exit_code = *code;
    return result;
  }
  if (first.config.empty()) {
    result.flags = std::move(first);
    return result;
  }
  auto extra = ConfigArgs(first.config, app);
  if (!extra) {
    result.config_error = extra.error().context;
    result.exit_code = 2;
    return result;
  }
  // Second pass: the file's flags first, then the command line (which
  // parsed already, so an error here is the file's).
  ServeFlags merged;
  CLI::App app2("profwatch serve");
  AddServeOptions(app2, merged);
  std::vector<std::string> all = *extra;
  all.insert(all.end(), args.begin(), args.end());
  std::vector<const char*> argv{"profwatch serve"};
  for (const auto& a : all) argv.push_back(a.c_str());
  try {
    app2.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    result.config_error = "config file " + first.config + ": " + e.what();
    result.exit_code = 2;
    return result;
  }
  result.flags = std::move(merged);
  return result;
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  std::string s(text);
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    return MakeError(ErrorCode::kConfig, "bad duration '" + s + "' (e.g. 250ms, 15s, 10m, 24h)");
  }
  std::string unit = s.substr(pos);
  double ms_per = 0;
  if (unit.empty() || unit == "s") {
    ms_per = 1000;
  } else if (unit == "ms") {
    ms_per = 1;
  } else if (unit == "m") {
    ms_per = 60'000;
  } else if (unit == "h") {
    ms_per = 3'600'000;
  } else if (unit == "d") {
    ms_per = 86'400'000;
  } else {
    return MakeError(ErrorCode::kConfig, "bad duration unit in '" + s + "' (ms, s, m, h, d)");
  }
  if (!std::isfinite(v) || v < 0) {
    return MakeError(ErrorCode::kConfig, "bad duration '" + s + "': must be >= 0");
  }
  if (v * ms_per > pipeline::kMaxDurationMs) {
    return MakeError(ErrorCode::kConfig, "bad duration '" + s + "': must be at most 36500d");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(v * ms_per)));
}

void UseBundledDemo(const std::string& demo_dir, const ServeFlags& flags,
                    pipeline::DaemonOptions& options) {
  options.roots.push_back(demo_dir);
  if (flags.retention == ServeFlags{}.retention) {
    options.assembler.retention = std::chrono::hours(24 * 36500);
  }
}

// <ts> names are wall-clock times, written in UTC or in the writer's local
// time: this host's local offset, when ahead of UTC, widens "now" for the
// future-dated check so local-time names are not taken for future ones.
std::chrono::seconds LocalTimeAheadOfUtc() {
  const time_t now = time(nullptr);
  tm local{};
  localtime_r(&now, &local);
  return std::chrono::seconds(std::max<long>(0, local.tm_gmtoff));
}

namespace {

// The duration flags, parsed and checked.
struct ServeDurations {
  std::chrono::milliseconds poll, skew, settle, future, timeout, reanalysis, retention;
};

Result<ServeDurations> ParseServeDurations(const ServeFlags& f) {
  auto dur = [](const char* flag, const std::string& text) -> Result<std::chrono::milliseconds> {
    auto d = ParseDuration(text);
    if (!d) return MakeError(ErrorCode::kConfig, std::string(flag) + ": " + d.error().context);
    return d;
  };
  auto poll = dur("--poll-interval", f.poll_interval);
  if (!poll) return tl::unexpected(poll.error());
  if (poll->count() < 100) {
    return MakeError(ErrorCode::kConfig, "--poll-interval: must be at least 100ms");
  }
  auto skew = dur("--skew", f.skew);
  if (!skew) return tl::unexpected(skew.error());
  auto settle = dur("--settle", f.settle);
  if (!settle) return tl::unexpected(settle.error());
  auto future = dur("--future-tolerance", f.future_tolerance);
  if (!future) return tl::unexpected(future.error());
  auto timeout = dur("--window-timeout", f.window_timeout);
  if (!timeout) return tl::unexpected(timeout.error());
  auto reanalysis = dur("--reanalysis-interval", f.reanalysis_interval);
  if (!reanalysis) return tl::unexpected(reanalysis.error());
  auto retention = dur("--retention", f.retention);
  if (!retention) return tl::unexpected(retention.error());
  // 0 would drop every run as soon as it is exported: nothing to scrape.
  if (retention->count() == 0) {
    return MakeError(ErrorCode::kConfig,
                     "--retention: must be more than 0 (0 would remove every run from /metrics "
                     "as soon as its window is analysed)");
  }
  return ServeDurations{*poll, *skew, *settle, *future, *timeout, *reanalysis, *retention};
}

// What is watched and how: roots, per-owner caps, host filter, shard.
Status ApplyWatchFlags(const ServeFlags& f, const ServeDurations& d, pipeline::DaemonOptions& o) {
  o.roots.clear();
  o.root_jobs.clear();
  for (const std::string& w : f.watch) {
    Result<watch::WatchRoot> root = watch::ParseWatchRoot(w);
    if (!root) return tl::unexpected(root.error());
    o.roots.push_back(root->path);
    if (!root->job.empty()) o.root_jobs[root->path] = root->job;
  }
  o.use_inotify = !f.no_inotify;
  o.follow_symlinks = f.follow_symlinks;
  o.max_files_per_dir = f.max_files_per_dir;
  o.assembler.max_files_per_window = f.max_files_per_window;
  o.assembler.max_runs_per_owner = f.max_runs_per_owner;
  o.assembler.max_windows_per_owner = f.max_windows_per_owner;
  o.max_dirs_per_owner = f.max_dirs_per_owner;
  o.max_watches_per_owner = f.max_watches_per_owner;
  o.max_state_bytes_per_owner = f.max_state_bytes_per_owner;
  o.max_state_bytes = f.max_state_bytes;
  o.poll_interval = d.poll;
  if (f.host_filter == "auto") {
    o.host_filter = watch::ShortHostName();
    if (o.host_filter.empty()) {
      return MakeError(ErrorCode::kConfig, "--host-filter auto: cannot read the host name");
    }
  } else {
    o.host_filter = f.host_filter;
  }
  auto shard = watch::ParseShard(f.shard);
  if (!shard) return tl::unexpected(shard.error());
  o.shard = *shard;
  return {};
}

// When a window is analysed, and by how many workers.
void ApplyWindowFlags(const ServeFlags& f, const ServeDurations& d, pipeline::DaemonOptions& o) {
  o.assembler.skew = std::chrono::duration_cast<std::chrono::seconds>(d.skew);
  o.assembler.settle = d.settle;
  o.assembler.window_timeout = d.timeout;
  o.assembler.reanalysis_interval = d.reanalysis;
  o.assembler.future_tolerance = d.future;
  o.assembler.wall_clock_ahead = LocalTimeAheadOfUtc();
  o.assembler.expected_files = f.expected_files;
  o.assembler.expected_gpus = f.expected_gpus;
  o.assembler.max_retries = f.max_retries;
  o.assembler.retention = d.retention;
  o.workers = f.workers;
  o.worker_nice = f.worker_nice;
}

// How a window is analysed: threads, spill, budgets, divisor, model, rules.
Status ApplyAnalysisFlags(const ServeFlags& f, pipeline::DaemonOptions& o) {
  // Each worker analyses its window with a fair share of the cores (a
  // single-file window then gets read-ahead and decode helper threads, which
  // inherit the worker's nice value).
  o.analyze.threads =
      std::max(1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) /
                      std::max(1, f.workers));
  o.state_file = f.state;
  o.analyze.spill_dir = f.spill_dir;
  o.analyze.limits = f.file_budget.ToLimits();
  o.analyze.limits.window_max_time = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(f.window_max_seconds));
  if (f.profile_steps_explicit) o.analyze.aggregate.profile_steps_flag = f.profile_steps;
  o.analyze.aggregate.top_kernels = static_cast<size_t>(f.top_kernels);
  f.model.ApplyTo(o.analyze.aggregate);
  o.analyze.aggregate.top_regions = static_cast<size_t>(f.top_regions);
  auto source = analysis::ParseSourcePreference(f.source);
  if (!source) return MakeError(ErrorCode::kConfig, "--source: " + source.error().context);
  o.analyze.source = *source;
  o.analyze.rules = f.rules;
  if (!f.families.empty()) {
    auto classifier = LoadClassifier(f.rules == "auto" ? "drill" : f.rules, f.families);
    if (!classifier) {
      return MakeError(ErrorCode::kConfig, "--families: " + classifier.error().context);
    }
    o.analyze.classifier = *classifier;
  }
  return {};
}

// The step time's sources (--step-time, training logs) and the outputs.
Status ApplyStepAndOutputFlags(const ServeFlags& f, pipeline::DaemonOptions& o) {
  if (f.step_time > 0) o.step_seconds = f.step_time;
  for (const std::string& text : f.log) {
    auto binding = pipeline::ParseLogBinding(text);
    if (!binding) return tl::unexpected(binding.error());
    o.training_logs.bindings.push_back(std::move(*binding));
  }
  if (!f.log_glob.empty()) o.training_logs.globs = f.log_glob;
  o.training_logs.max_runs = f.max_followed_logs;
  o.training_logs.max_bytes_per_scan = f.log_max_bytes_per_scan;
  if (f.profile_steps_explicit) {
    o.training_logs.step_time.overrides.profiler_steps = f.profile_steps;
  }
  o.history_file = f.history;
  o.history_max_bytes = f.history_max_bytes;
  o.metrics_detail = f.metrics_detail;
  return {};
}

}  // namespace

Result<pipeline::DaemonOptions> ToDaemonOptions(const ServeFlags& f) {
  pipeline::DaemonOptions o;
  auto d = ParseServeDurations(f);
  if (!d) return tl::unexpected(d.error());
  if (Status st = ApplyWatchFlags(f, *d, o); !st) return tl::unexpected(st.error());
  ApplyWindowFlags(f, *d, o);
  if (Status st = ApplyAnalysisFlags(f, o); !st) return tl::unexpected(st.error());
  if (Status st = ApplyStepAndOutputFlags(f, o); !st) return tl::unexpected(st.error());
  return o;
}

}  // namespace profwatch::cli
