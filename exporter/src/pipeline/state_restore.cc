#include "pipeline/state_restore.h"

#include <iterator>
#include <optional>
#include <utility>

#include "core/log.h"
#include "pipeline/window_policy.h"
#include "store/state_file.h"

namespace profwatch::pipeline {

RestoredState LoadStateFile(const std::string& path, const watch::Shard& shard, TimePoint now) {
  std::optional<LogEvent> warning;
  store::DaemonState state = store::LoadDaemonStateOrSetAside(path, ToUnixSeconds(now), &warning);
  if (warning) profwatch::Emit(*warning);
  RestoredState out;
  // Left out alone; the rest of the file loads.
  for (const store::DroppedStateEntry& d : state.dropped) {
    out.dropped_reasons.push_back(d.reason);
    LogWarn("state entry dropped", {{"path", path}, {"reason", d.reason}, {"error", d.what}});
  }
  out.runs = std::move(state.snapshot.runs);
  for (auto it = out.runs.begin(); it != out.runs.end();) {
    const bool owned = shard.Owns(it->first.training_job);
    out.other_shard_runs += owned ? 0 : 1;
    it = owned ? std::next(it) : out.runs.erase(it);
  }
  out.windows = std::move(state.windows);
  return out;
}

void KeepWindowsOfRuns(std::vector<window::AnalysedWindow>& windows,
                       const std::map<snapshot::RunKey, snapshot::RunState>& runs) {
  std::erase_if(windows, [&](const window::AnalysedWindow& w) {
    return runs.count(snapshot::RunKey{w.run.training_job, w.run.run}) == 0;
  });
}

void LoadInflightJournal(store::InflightJournal& journal) {
  std::optional<LogEvent> journal_warning;
  if (Status s = journal.Load(&journal_warning); !s) {
    LogWarn("in-flight journal not read",
            {{"path", journal.path()}, {"error", s.error().ToString()}});
  }
  if (journal_warning) profwatch::Emit(*journal_warning);
  for (const store::InflightRecord& r : journal.Records()) {
    if (r.deaths <= 0) continue;
    LogWarn("the daemon died while analysing a window",
            {{"training_job", r.training_job},
             {"run", r.run},
             {"window", r.window},
             {"deaths", r.deaths},
             {"next", r.deaths >= kMaxDeathsPerWindow ? "failed as crashed unless its files change"
                                                      : "analysed again alone"}});
  }
}

}  // namespace profwatch::pipeline
