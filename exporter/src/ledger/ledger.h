// The ledger: per owner (watch/owner.h), what the daemon refuses, what a
// per-owner cap leaves out and what the owner's analyses cost, in one place. Pure: the daemon
// passes what each scan or analysis observed (values), the ledger answers with what changed
// (counter increments by owner and reason, refusals that began or ended,
// caps an owner went over or came back under), and the daemon applies that
// (metrics, one log line per change) without bookkeeping of its own.
//
// Refusals are counted once while they stay: a directory over its file cap
// seen in a thousand scans is one refusal, counted again only after it was
// gone (back under the cap, removed) and came back.
//
// Thread-safety: none; the daemon serialises calls under its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/log.h"
#include "watch/owner.h"
#include "watch/scanner.h"

namespace profwatch::ledger {

// Something refused while it stays (a directory over its file cap, a link
// out of the root, a run quiet past --retention).
struct Refusal {
  std::string reason;  // profwatch_scan_refused_total's `reason`
  std::string key;     // what is refused, unique within its reason (a path, a run)
  watch::Owner owner = watch::kNoOwner;
  // What the log line says of it ({"files", 120}, {"cap", 100}).
  std::vector<LogField> detail;
  // Runs refused for retention: the run and its last activity (the landing
  // page lists them).
  watch::RunLabels run;
  double last_activity_unix = 0;
};

// What one per-owner cap leaves out of one owner now.
struct Capped {
  watch::Owner owner = watch::kNoOwner;
  std::string reason;    // profwatch_owner_capped's `reason`
  int64_t left_out = 0;  // > 0
  // Left out by this observation and not before: counted as refusals
  // (profwatch_scan_refused_total) where the cap refuses (runs, windows,
  // directories); 0 for a cap that refuses nothing (watches: polled);
  // kGrowth: the growth of left_out over the last observation.
  int64_t newly = 0;
  static constexpr int64_t kGrowth = -1;
  std::vector<LogField> detail;  // what the log line says when the owner goes over
};

// (reason, owner): one series of profwatch_scan_refused_total.
using RefusedKey = std::pair<std::string, watch::Owner>;

// What an owner's windows cost the workers.
struct Costs {
  double worker_seconds = 0;  // wall time workers spent analysing them
  int64_t analyses = 0;       // windows analysed, re-analyses included
  int64_t reanalyses = 0;     // of them, a window analysed before
  bool operator==(const Costs&) const = default;
};

// What changed since the last TakeChanges.
struct Changes {
  std::map<RefusedKey, int64_t> refused;  // counter increments
  // Refusals that began (each counted in `refused`) and that ended, by
  // reason, in key order.
  std::map<std::string, std::vector<Refusal>> began;
  std::map<std::string, std::vector<Refusal>> ended;
  // Owners that went over a cap, and (owner, reason) back under one.
  std::vector<Capped> over;
  std::vector<std::pair<watch::Owner, std::string>> under;
  std::map<watch::Owner, Costs> costs;  // what owners' analyses cost since
  bool empty() const {
    return refused.empty() && began.empty() && ended.empty() && over.empty() && under.empty() &&
           costs.empty();
  }
};

class Ledger {
 public:
  // Replaces what `reason` refuses now by `now` (keys unique): refusals not
  // refused before begin (counted once), those missing end.
  void ObserveRefusals(std::string_view reason, std::vector<Refusal> now);
  // Adds one refusal of `reason` (counted when it is not refused already)
  // and keeps the others: for refusals reported once as they happen.
  void AddRefusal(Refusal refusal);
  // Ends the refusals of `reason` whose key `keep` says no to (`keep` is
  // called once per refusal).
  template <class Keep>
  void KeepRefusals(std::string_view reason, Keep keep) {
    auto it = refused_.find(std::string(reason));
    if (it == refused_.end()) return;
    std::vector<Refusal> now;
    for (const auto& [key, r] : it->second) {
      if (keep(r)) now.push_back(r);
    }
    ObserveRefusals(reason, std::move(now));
  }
  // Counts a refusal reported once as it happens and kept nowhere (a
  // window over the file cap: the assembler reports it once): it begins
  // and is forgotten.
  void CountRefusal(Refusal refusal);
  // Replaces what the caps of `reasons` leave out now by `now` (one entry
  // per owner and reason, each of a reason in `reasons`).
  void ObserveCapped(const std::vector<std::string_view>& reasons, std::vector<Capped> now);

  // One analysis of an owner's window ended: `worker_seconds` of a
  // worker's time, a re-analysis when the window was analysed before.
  void AddAnalysis(watch::Owner owner, double worker_seconds, bool reanalysis);

  // The state run `run` keeps (its SerializeRunState bytes, in memory and in
  // --state), charged to `owner` (kNoOwner: not known yet, e.g. restored
  // from --state before a scan saw the run); 0 bytes: it keeps none.
  void KeepState(const std::string& run, watch::Owner owner, int64_t bytes);
  // A scan saw `run` under `owner`: a run kept with no known owner (or
  // another) is charged to this one from now on.
  void SetRunOwner(const std::string& run, watch::Owner owner);
  // Runs kept without a known owner (SetRunOwner is needed only then).
  bool HasRunsWithoutOwner() const { return !ownerless_.empty(); }
  // The state bytes `owner`'s runs keep, and those of `run`.
  int64_t StateBytes(watch::Owner owner) const;
  int64_t StateBytesOf(const std::string& run) const;
  // The state bytes every run keeps.
  int64_t StateBytes() const { return kept_total_; }

  // The bytes `run` of `owner` may keep (its own kept bytes are replaced,
  // so they are not counted): `owner` is the room under `owner_cap` beside
  // the owner's other runs; `daemon` the room under `daemon_cap` beside
  // every other run or, once that is full, beside the owner's other runs
  // under an equal share of `daemon_cap` (it over the owners keeping state,
  // this one counted), so an owner below an equal share is still served.
  // nullopt: that cap is 0 (none). Both are at least 0.
  struct StateRoom {
    std::optional<int64_t> owner;
    std::optional<int64_t> daemon;
  };
  StateRoom RoomFor(const std::string& run, watch::Owner owner, int64_t owner_cap,
                    int64_t daemon_cap) const;

  Changes TakeChanges();

  // What `reason` refuses now, by key.
  const std::map<std::string, Refusal>& Refused(std::string_view reason) const;
  // (owner, reason) -> left out now: profwatch_owner_capped (owners under
  // every cap are absent).
  std::map<std::pair<watch::Owner, std::string>, int64_t> CappedNow() const;
  // Every owner's analyses so far.
  const std::map<watch::Owner, Costs>& CostsByOwner() const { return costs_; }

 private:
  std::map<std::string, std::map<std::string, Refusal>> refused_;  // reason -> key -> refusal
  std::map<std::pair<watch::Owner, std::string>, Capped> capped_;
  std::map<watch::Owner, Costs> costs_;
  struct Kept {
    watch::Owner owner = watch::kNoOwner;
    int64_t bytes = 0;
  };
  std::map<std::string, Kept> kept_;               // by run
  std::map<watch::Owner, int64_t> kept_by_owner_;  // the sums of kept_
  int64_t kept_total_ = 0;                         // their sum
  std::set<std::string> ownerless_;                // runs in kept_ with kNoOwner
  Changes changes_;
};

}  // namespace profwatch::ledger
