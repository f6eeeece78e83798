#include "pipeline/self_metrics.h"

#include <string>

#include "core/result.h"
#include "expose/metric_names.h"
#include "pipeline/window_policy.h"

namespace profwatch::pipeline {

using expose::Metric;

SelfMetrics::SelfMetrics(prometheus::Registry& registry) {
  auto CounterFamily = [&registry](Metric id) -> prometheus::Family<prometheus::Counter>& {
    const expose::MetricSpec& spec = expose::Spec(id);
    return prometheus::BuildCounter()
        .Name(std::string(spec.name))
        .Help(std::string(spec.help))
        .Register(registry);
  };
  auto& analyzed = CounterFamily(Metric::kWindowsAnalyzedTotal);
  analyzed_ok = &analyzed.Add({{"result", "ok"}});
  analyzed_incomplete = &analyzed.Add({{"result", "incomplete"}});
  analyzed_error = &analyzed.Add({{"result", "error"}});
  run_clashes_total = &CounterFamily(Metric::kRunLabelClashesTotal).Add({});
  const expose::MetricSpec& clashes = expose::Spec(Metric::kJobNameClashes);
  job_clashes = &prometheus::BuildGauge()
                     .Name(std::string(clashes.name))
                     .Help(std::string(clashes.help))
                     .Register(registry)
                     .Add({});
  future_dirs_total = &CounterFamily(Metric::kFutureDirsSkippedTotal).Add({});
  superseded_total = &CounterFamily(Metric::kWindowsSupersededTotal).Add({});
  state_save_errors = &CounterFamily(Metric::kStateSaveErrorsTotal).Add({});
  const expose::MetricSpec& saved = expose::Spec(Metric::kStateLastSaveSuccessful);
  state_last_save_ok = &prometheus::BuildGauge()
                            .Name(std::string(saved.name))
                            .Help(std::string(saved.help))
                            .Register(registry)
                            .Add({});
  state_last_save_ok->Set(1);
  history_lines_cut = &CounterFamily(Metric::kHistoryLinesCutTotal).Add({});
  state_dropped_family = &CounterFamily(Metric::kStateEntriesDroppedTotal);
  for (const char* reason : {"invalid", "duplicate"})
    state_dropped_family->Add({{"reason", reason}});
  reanalyzed_total = &CounterFamily(Metric::kWindowsReanalyzedTotal).Add({});
  reanalyses_deferred = &CounterFamily(Metric::kReanalysesDeferredTotal).Add({});
  bytes_total = &CounterFamily(Metric::kTraceBytesReadTotal).Add({});
  spill_bytes_total = &CounterFamily(Metric::kSpillBytesTotal).Add({});
  spill_errors_total = &CounterFamily(Metric::kSpillErrorsTotal).Add({});
  const expose::MetricSpec& duration_spec = expose::Spec(Metric::kAnalysisDurationSeconds);
  duration = &prometheus::BuildHistogram()
                  .Name(std::string(duration_spec.name))
                  .Help(std::string(duration_spec.help))
                  .Register(registry)
                  .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                                                   2.5, 5, 10, 30, 60, 120, 300});
  errors_family = &CounterFamily(Metric::kWindowErrorsTotal);
  // Every reason exists from the start at 0, so alert rules see a reason's
  // first error as an increase (no `offset` trick that re-fires after a
  // Prometheus restart).
  for (ErrorCode code : kAllErrorCodes)
    errors_family->Add({{"reason", std::string(ErrorCodeName(code))}});
  errors_family->Add({{"reason", std::string(kGiveUpReason)}});
  errors_family->Add({{"reason", std::string(kNoDataReason)}});
  retries_family = &CounterFamily(Metric::kWindowRetriesTotal);
  for (ErrorCode code : kAllErrorCodes) {
    if (RetryClassOf(code) == RetryClass::kSoon) {
      retries_family->Add({{"reason", std::string(ErrorCodeName(code))}});
    }
  }
  scans_total = &CounterFamily(Metric::kScansTotal).Add({});
  history_rotations_family = &CounterFamily(Metric::kHistoryRotationsTotal);
  // By owner: series appear with their first refusal (the alert on them
  // also reads a series that is new, rules/profwatch.rules.yml).
  refused_family = &CounterFamily(Metric::kScanRefusedTotal);
  log_parse_errors = &CounterFamily(Metric::kLogParseErrorsTotal).Add({});
  logs_refused_family = &CounterFamily(Metric::kTrainingLogsRefusedTotal);
  owner_worker_seconds_family = &CounterFamily(Metric::kOwnerWorkerSecondsTotal);
  owner_analyses_family = &CounterFamily(Metric::kOwnerWindowsAnalyzedTotal);
}

void SelfMetrics::CountError(std::string_view reason, double n) {
  errors_family->Add({{"reason", std::string(reason)}}).Increment(n);
}

void SelfMetrics::CountRetry(std::string_view reason, double n) {
  retries_family->Add({{"reason", std::string(reason)}}).Increment(n);
}

}  // namespace profwatch::pipeline
