#include "pipeline/refusals.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/log.h"

namespace profwatch::pipeline {
namespace {

using ledger::Capped;
using ledger::Refusal;

// Paths named in one log line about refused files; the count says the rest.
constexpr size_t kNamedRefusals = 5;

Refusal Make(std::string_view reason, std::string key, watch::Owner owner,
             std::vector<LogField> detail = {}) {
  Refusal r;
  r.reason = std::string(reason);
  r.key = std::move(key);
  r.owner = owner;
  r.detail = std::move(detail);
  return r;
}

// The first kNamedRefusals keys, comma-separated.
std::string NamedKeys(const std::vector<Refusal>& v) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < kNamedRefusals; ++i) {
    if (!out.empty()) out += ",";
    out += v[i].key;
  }
  return out;
}

void OwnerOverLine(std::vector<LogEvent>& logs, const Capped& c, const RefusalLimits& limits) {
  if (c.reason == window::kOwnerRunCapReason || c.reason == window::kOwnerWindowCapReason) {
    const bool runs = c.reason == window::kOwnerRunCapReason;
    std::vector<LogField> fields = {watch::OwnerField(c.owner),
                                    {runs ? "runs_left_out" : "windows_left_out", c.left_out}};
    fields.insert(fields.end(), c.detail.begin(), c.detail.end());
    fields.insert(fields.end(),
                  {{"reason", c.reason},
                   {"stage", "window"},
                   {"hint", runs ? "raise --max-runs-per-owner if one user really runs that many"
                                 : "raise --max-windows-per-owner if one user really runs that "
                                   "many"}});
    Log(logs, LogLevel::kWarn,
        runs ? "owner over its run cap, the runs with the oldest writes not tracked"
             : "owner over its window cap, the oldest windows not tracked",
        std::move(fields));
  } else if (c.reason == kOwnerDirCapReason) {
    Log(logs, LogLevel::kWarn, "owner over its directory cap, the rest of its tree not walked",
        {watch::OwnerField(c.owner),
         {"dirs_left_out", c.left_out},
         {"cap", limits.max_dirs_per_owner},
         {"reason", c.reason},
         {"stage", "watch"},
         {"hint", "raise --max-dirs-per-owner if one user really keeps that many directories"}});
  } else if (c.reason == kOwnerWatchCapReason) {
    Log(logs, LogLevel::kWarn,
        "owner over its inotify watch budget, the rest of its directories found by polling",
        {watch::OwnerField(c.owner),
         {"dirs_polled", c.left_out},
         {"budget", limits.max_watches_per_owner},
         {"reason", c.reason},
         {"stage", "watch"},
         {"hint",
          "raise --max-watches-per-owner (and fs.inotify.max_user_watches) if new windows must be "
          "seen sooner than --poll-interval"}});
  }
}

// The line for the refusals of one reason that began.
void BeganLines(std::vector<LogEvent>& logs, const std::string& reason,
                const std::vector<Refusal>& began, const RefusalLimits& limits) {
  if (reason == kDirFileCapReason) {
    for (const Refusal& r : began) {
      std::vector<LogField> fields = {{"path", r.key}};
      fields.insert(fields.end(), r.detail.begin(), r.detail.end());
      fields.insert(fields.end(), {{"stage", "watch"},
                                   {"hint",
                                    "raise --max-files-per-dir (or --max-files-per-window for a "
                                    "<ts> dir) if a real job writes that many"}});
      Log(logs, LogLevel::kWarn, "directory holds too many trace files, not analysed",
          std::move(fields));
    }
  } else if (reason == kWindowFileCapReason) {
    for (const Refusal& r : began) {
      std::vector<LogField> fields = r.detail;
      fields.insert(fields.end(),
                    {{"cap", limits.max_files_per_window},
                     {"stage", "window"},
                     {"hint", "raise --max-files-per-window if a real job writes that many"}});
      Log(logs, LogLevel::kWarn, "window holds too many trace files, not analysed",
          std::move(fields));
    }
  } else if (reason == kOutsideRootReason) {
    Log(logs, LogLevel::kWarn, "trace file links out of the watch root not read",
        {{"count", began.size()},
         {"paths", NamedKeys(began)},
         {"stage", "watch"},
         {"hint", "pass --follow-symlinks to read them"}});
  } else if (reason == watch::kIgnoredHostFilter) {
    std::vector<LogField> fields = {{"host_filter", limits.host_filter}};
    fields.insert(fields.end(), began.front().detail.begin(), began.front().detail.end());
    fields.insert(fields.end(), {{"reason", reason},
                                 {"stage", "watch"},
                                 {"hint",
                                  "a file is this host's when its name starts with the host name "
                                  "(Kineto: <host>_<pid>.<ns>.pt.trace.json)"}});
    Log(logs, LogLevel::kWarn, "--host-filter matches none of the trace files found",
        std::move(fields));
  } else if (reason == watch::kIgnoredDirLink) {
    Log(logs, LogLevel::kWarn, "directory links into a watch root not followed",
        {{"count", began.size()},
         {"paths", NamedKeys(began)},
         {"reason", reason},
         {"stage", "watch"},
         {"hint",
          "the real directory is analysed in its own place under its own name; a link never "
          "gives a run a second label"}});
  } else if (reason == watch::kIgnoredTsOutsideProfile || reason == watch::kIgnoredNotTimestamp ||
             reason == watch::kIgnoredTraceName) {
    std::string_view what = "trace-like files in a directory of no known layout";
    std::string_view hint =
        "Kineto files are read as *.pt.trace.json[.gz], JAX windows in "
        "<logdir>/plugins/profile/<ts>/, Nsight exports in capture-nsys-profile/";
    if (reason == watch::kIgnoredTsOutsideProfile) {
      what = "<ts> directory with traces outside plugins/profile";
      hint = "JAX windows are read in <logdir>/plugins/profile/<ts>/";
    } else if (reason == watch::kIgnoredNotTimestamp) {
      what = "directory in plugins/profile not named like a <ts>";
      hint = "window directories are named YYYY_MM_DD_HH_MM_SS";
    }
    Log(logs, LogLevel::kWarn, fmt::format("scan found {}, not analysed", what),
        {{"count", began.size()},
         {"paths", NamedKeys(began)},
         {"reason", reason},
         {"stage", "watch"},
         {"hint", hint}});
  }
  // kRetentionReason: the assembler's ready notes say it (window_policy.h).
}

}  // namespace

std::string LedgerRunKey(std::string_view training_job, std::string_view run) {
  return std::string(training_job) + "/" + std::string(run);
}

void ObserveScanRefusals(ledger::Ledger& ledger, const watch::ScanResult& result,
                         const window::Assembler::ScanNotes& notes,
                         const std::map<watch::Owner, int64_t>& unwatched,
                         const RefusalLimits& limits) {
  std::vector<Refusal> dirs;
  for (const watch::CappedDir& d : result.capped_dirs) {
    dirs.push_back(Make(kDirFileCapReason, d.path, d.owner,
                        d.counted_all
                            ? std::vector<LogField>{{"files", d.files}, {"cap", d.cap}}
                            : std::vector<LogField>{{"files_more_than", d.cap}, {"cap", d.cap}}));
  }
  ledger.ObserveRefusals(kDirFileCapReason, std::move(dirs));
  for (const window::Assembler::CappedWindow& w : notes.capped) {
    ledger.CountRefusal(Make(kWindowFileCapReason, w.first_dir, w.owner,
                             {{"training_job", w.run.training_job},
                              {"run", w.run.run},
                              {"window", w.window_id},
                              {"files", w.files}}));
  }
  std::vector<Refusal> links;
  for (const watch::OutsideLink& l : result.outside_root_files) {
    links.push_back(Make(kOutsideRootReason, l.path, l.owner));
  }
  ledger.ObserveRefusals(kOutsideRootReason, std::move(links));
  std::map<std::string_view, std::vector<Refusal>> ignored = {{watch::kIgnoredTsOutsideProfile, {}},
                                                              {watch::kIgnoredNotTimestamp, {}},
                                                              {watch::kIgnoredTraceName, {}},
                                                              {watch::kIgnoredDirLink, {}}};
  for (const watch::IgnoredDir& d : result.ignored) {
    ignored[d.reason].push_back(Make(d.reason, d.path, d.owner));
  }
  for (auto& [reason, v] : ignored) ledger.ObserveRefusals(reason, std::move(v));
  std::vector<Refusal> filter;
  if (!limits.host_filter.empty() && result.filtered_files > 0 && result.files.empty()) {
    filter.push_back(Make(watch::kIgnoredHostFilter, "host_filter", watch::kNoOwner,
                          {{"files", result.filtered_files}}));
  }
  ledger.ObserveRefusals(watch::kIgnoredHostFilter, std::move(filter));

  std::vector<Capped> capped;
  for (const window::Assembler::OwnerCap& c : notes.owner_caps) {
    capped.push_back({c.owner,
                      std::string(c.reason),
                      c.over,
                      c.newly,
                      {{"cap", c.cap}, {"example", c.example}}});
  }
  for (const auto& [owner, n] : result.owner_dirs_capped) {
    capped.push_back({owner, std::string(kOwnerDirCapReason), n, Capped::kGrowth, {}});
  }
  for (const auto& [owner, n] : unwatched) {
    capped.push_back({owner, std::string(kOwnerWatchCapReason), n, 0, {}});
  }
  ledger.ObserveCapped({window::kOwnerRunCapReason, window::kOwnerWindowCapReason,
                        kOwnerDirCapReason, kOwnerWatchCapReason},
                       std::move(capped));
}

void ObserveExpired(ledger::Ledger& ledger, const window::Assembler::Expired& e, bool exported) {
  if (exported) return;  // it expires, it is not skipped
  Refusal r = Make(kRetentionReason, LedgerRunKey(e.run.training_job, e.run.run), e.owner);
  r.run = {e.run.training_job, e.run.run};
  r.last_activity_unix = e.last_activity_unix;
  // Refused already (another window of the run): its newest activity.
  std::vector<Refusal> now;
  for (const auto& [key, before] : ledger.Refused(kRetentionReason)) {
    if (key != r.key) {
      now.push_back(before);
    } else {
      r.last_activity_unix = std::max(r.last_activity_unix, before.last_activity_unix);
    }
  }
  now.push_back(std::move(r));
  ledger.ObserveRefusals(kRetentionReason, std::move(now));
}

std::vector<LogEvent> RefusalEvents(const ledger::Changes& changes, const RefusalLimits& limits) {
  std::vector<LogEvent> logs;
  for (const auto& [reason, began] : changes.began) {
    if (!began.empty()) BeganLines(logs, reason, began, limits);
  }
  if (auto ended = changes.ended.find(std::string(kDirFileCapReason));
      ended != changes.ended.end()) {
    for (const Refusal& r : ended->second) {
      Log(logs, LogLevel::kInfo, "directory back under its file cap", {{"path", r.key}});
    }
  }
  for (const Capped& c : changes.over) OwnerOverLine(logs, c, limits);
  for (const auto& [owner, reason] : changes.under) {
    Log(logs, LogLevel::kInfo, "owner back under its cap",
        {watch::OwnerField(owner), {"reason", reason}});
  }
  return logs;
}

std::vector<LogEvent> JobClashEvents(std::set<std::string>& known,
                                     const std::vector<watch::JobClash>& now) {
  std::vector<LogEvent> logs;
  std::set<std::string> clashing;
  for (const watch::JobClash& c : now) {
    clashing.insert(c.job);
    if (known.count(c.job) != 0) continue;
    std::string labels;
    for (const std::string& l : c.labels) labels += (labels.empty() ? "" : ",") + l;
    Log(logs, LogLevel::kWarn,
        "job name found under several watch roots, each copy labelled by its root",
        {{"job", c.job},
         {"training_job", labels},
         {"stage", "watch"},
         {"hint",
          "the labels of its series changed; rename one of the job directories to keep plain "
          "names"}});
  }
  for (const std::string& job : known) {
    if (clashing.count(job) == 0) {
      Log(logs, LogLevel::kInfo, "job name back under one watch root, labelled plainly",
          {{"job", job}});
    }
  }
  known = std::move(clashing);
  return logs;
}

}  // namespace profwatch::pipeline
