// The daemon's own counters, gauges and histogram (profwatch_windows_*,
// profwatch_state_*, profwatch_scan_refused_total, ...), registered once in
// the daemon's prometheus::Registry; the names and help text are
// expose/metric_names.h's. Series whose labels are known up front (every
// error reason, every retry reason) exist from the start at 0, so an alert
// rule sees the first one as an increase.
//
// Thread-safety: the pointers are set in the constructor and never change;
// prometheus-cpp's metrics are thread-safe. Ownership: the registry owns
// the metrics and must outlive this object.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string_view>

namespace profwatch::pipeline {

struct SelfMetrics {
  // Registers every family in `registry` (prometheus-cpp throws on invalid
  // names; ours are fixed and valid, so a throw is a programming error
  // surfacing at startup, not at scrape).
  explicit SelfMetrics(prometheus::Registry& registry);

  // profwatch_window_errors_total{reason}.
  void CountError(std::string_view reason, double n = 1);
  // profwatch_window_retries_total{reason}: a file not ready yet, retried.
  void CountRetry(std::string_view reason, double n = 1);

  prometheus::Counter* analyzed_ok = nullptr;  // profwatch_windows_analyzed_total{result}
  prometheus::Counter* analyzed_incomplete = nullptr;
  prometheus::Counter* analyzed_error = nullptr;
  prometheus::Counter* state_save_errors = nullptr;
  prometheus::Gauge* state_last_save_ok = nullptr;
  prometheus::Counter* history_lines_cut = nullptr;
  prometheus::Counter* future_dirs_total = nullptr;
  prometheus::Counter* superseded_total = nullptr;
  prometheus::Counter* run_clashes_total = nullptr;
  prometheus::Gauge* job_clashes = nullptr;  // profwatch_job_name_clashes
  prometheus::Counter* reanalyzed_total = nullptr;
  prometheus::Counter* reanalyses_deferred = nullptr;  // the assembler's ReadyNotes::paced
  prometheus::Counter* bytes_total = nullptr;
  prometheus::Counter* spill_bytes_total = nullptr;
  prometheus::Counter* spill_errors_total = nullptr;
  prometheus::Histogram* duration = nullptr;
  prometheus::Family<prometheus::Counter>* errors_family = nullptr;
  prometheus::Family<prometheus::Counter>* retries_family = nullptr;
  // profwatch_state_entries_dropped_total{reason}
  prometheus::Family<prometheus::Counter>* state_dropped_family = nullptr;
  prometheus::Counter* log_parse_errors = nullptr;
  prometheus::Counter* scans_total = nullptr;
  // profwatch_scan_refused_total{owner,reason}, profwatch_training_logs_refused_total{owner}.
  prometheus::Family<prometheus::Counter>* refused_family = nullptr;
  prometheus::Family<prometheus::Counter>* logs_refused_family = nullptr;
  // What owners' analyses cost (the ledger's Costs), by owner.
  prometheus::Family<prometheus::Counter>* owner_worker_seconds_family = nullptr;
  prometheus::Family<prometheus::Counter>* owner_analyses_family = nullptr;
  // profwatch_history_rotations_total{owner}: an owner's history file rotated.
  prometheus::Family<prometheus::Counter>* history_rotations_family = nullptr;
};

}  // namespace profwatch::pipeline
