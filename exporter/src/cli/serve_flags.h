// Flags of `profwatch serve` (CLI11) and the --config file (YAML or JSON: a
// map from long flag names, without dashes, to values; lists for repeatable
// flags; true/false for switches). Flags on the command line win over the
// file: a flag given on the command line replaces the file's value entirely
// (for --watch too).
//
// Durations accept "250ms", "15s", "1.5s", "10m", "24h", "2d" or a bare
// number of seconds.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_util.h"
#include "core/result.h"
#include "pipeline/daemon.h"

namespace profwatch::cli {

// Default --listen. Prometheus' exporter port range 9100-9999 is fully
// allocated on its default-port wiki page, so profwatch stays outside it
// (and below Linux's ephemeral range, 32768-60999).
inline constexpr std::string_view kDefaultListen = "0.0.0.0:19474";

struct ServeFlags {
  std::vector<std::string> watch;
  std::string listen = std::string(kDefaultListen);
  std::string listen_port_file;
  std::string web_config_file;  // exporter-toolkit web config (web/web_config.h)
  std::string poll_interval = "15s";
  bool no_inotify = false;
  bool follow_symlinks = false;
  int64_t max_files_per_dir = caps::kFilesPerDir.value;
  int64_t max_files_per_window = caps::kFilesPerWindow.value;
  int64_t max_runs_per_owner = caps::kRunsPerOwner.value;
  int64_t max_windows_per_owner = caps::kWindowsPerOwner.value;
  int64_t max_dirs_per_owner = caps::kDirsPerOwner.value;
  int64_t max_watches_per_owner = caps::kWatchesPerOwner.value;
  int64_t max_state_bytes_per_owner = caps::kStateBytesPerOwner.value;
  int64_t max_state_bytes = caps::kStateBytes.value;
  std::string host_filter;  // "", a host name, or "auto"
  std::string shard;        // "", "I/N" or "POD-NAME-I/N" (watch::ParseShard)
  std::string skew = "120s";
  std::string settle = "10s";
  int expected_gpus = 0;
  int expected_files = 0;
  std::string window_timeout = "10m";
  std::string reanalysis_interval = "30s";  // window::AssemblerOptions::reanalysis_interval
  std::string future_tolerance = "1h";
  int max_retries = 5;
  int workers = 2;
  int worker_nice = 10;
  FileBudgetFlags file_budget;
  // --window-max-seconds: a window's whole analysis (why: core/caps.h).
  double window_max_seconds = static_cast<double>(caps::kWindowSeconds.value);
  std::string retention = "24h";
  std::string state;
  std::string config;
  int profile_steps = 3;
  int top_kernels = 5;
  ModelFlags model;             // --region-depth, --peak-flops, --peak-hbm-bandwidth
  int top_regions = 10;         // regions exported; the rest as region="other"
  bool metrics_detail = false;  // per-kernel, per-region and per-family detail
  std::string rules = "auto";
  std::string families;
  std::string source = "auto";
  double step_time = 0;
  // Training logs (issue 4): FILE, RUN=FILE or JOB/RUN=FILE (repeatable).
  std::vector<std::string> log;
  std::vector<std::string> log_glob;  // empty: pipeline::kDefaultLogGlobs
  size_t max_followed_logs = static_cast<size_t>(caps::kFollowedLogs.value);
  uint64_t log_max_bytes_per_scan = static_cast<uint64_t>(caps::kLogBytesPerScan.value);
  bool profile_steps_explicit = false;  // --profile-steps was given
  std::string history;                  // JSON Lines history of analysed windows
  std::string spill_dir = DefaultSpillDir();
  uint64_t history_max_bytes = 64ull << 20;
  std::string log_level = "info";
  std::string log_format = "text";
};

struct ParsedServeFlags {
  std::optional<ServeFlags> flags;  // nullopt: stop with exit_code
  int exit_code = 0;                // 0 after --help, 2 on a usage/config error
  // A --config file error, one line naming the file ("config file F: line
  // 2, column 7: ..."); not printed, so a reload can log it as one line.
  // Command-line usage errors are printed by CLI11 as usual.
  std::string config_error;
};

// Parses `args` (after the verb) and the --config file they name.
ParsedServeFlags ParseServeFlags(const std::vector<std::string>& args);

Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

// Converts flags into daemon options (durations, rules, host filter "auto").
// kConfig with a message naming the flag on bad values.
Result<pipeline::DaemonOptions> ToDaemonOptions(const ServeFlags& flags);

// No --watch: serve the bundled demo job directory `demo_dir`. Its files are
// as old as the build, and runs older than --retention are neither analysed
// nor kept, so unless --retention was changed from its default the demo is
// served with the longest retention (36500d): a demo built last week still
// shows its runs.
void UseBundledDemo(const std::string& demo_dir, const ServeFlags& flags,
                    pipeline::DaemonOptions& options);

}  // namespace profwatch::cli
