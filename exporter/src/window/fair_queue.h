// The analysis queue's order: who gets the next free worker. Anyone who can
// write under a watched root can make windows, so windows waiting for a
// worker are served round-robin by share: by owner (the uid of the run
// directory, watch/owner.h) first, then by job within the owner, then by run
// within the job, and within a run the window waiting longest first. An
// owner with a thousand runs gets a turn as often as an owner with one; a
// window that becomes ready behind thousands of another owner's is served
// within one round of the owners waiting.
//
// Pure logic on serials and times: the caller passes the time a window began
// to wait (from the injected clock) and `now` for ages, so fairness is unit
// tested on a FakeClock (tests/unit/window/fair_queue_test.cc).
//
// Cost: Push, Remove and Pop are logarithmic in the windows waiting;
// memory is one entry per waiting window (a share leaves the queue with its
// last window).
//
// Thread-safety: none; the assembler's caller serialises all calls.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "core/clock.h"
#include "watch/owner.h"

namespace profwatch::window {

struct ShareKey {
  watch::Owner owner = watch::kNoOwner;
  std::string job;
  std::string run;
  auto operator<=>(const ShareKey&) const = default;
};

class FairQueue {
 public:
  // Queues `serial` under `key`, waiting since `since`; `rank` orders windows
  // of one run that began to wait together (the older window first). A
  // serial already queued is left as it is.
  void Push(const ShareKey& key, uint64_t serial, TimePoint since, int64_t rank = 0);
  // Takes `serial` out (it changed, went away or was superseded); false when
  // it was not queued.
  bool Remove(uint64_t serial);
  // The next serial to serve: the owner after the one served last (in uid
  // order, wrapping), that owner's job after its last served, that job's
  // run after its last served, and that run's longest-waiting window. A
  // level with nothing served yet (an owner's or job's windows all taken
  // before) starts at the entry holding the longest-waiting window.
  // nullopt when nothing waits.
  std::optional<uint64_t> Pop() { return Pop({}); }
  // The same among the waiting owners holding the fewest workers now
  // (`busy`: windows in analysis per owner; absent: none): while another
  // owner waits, no owner takes a worker beyond its share of them.
  std::optional<uint64_t> Pop(const std::map<watch::Owner, int64_t>& busy);

  bool Contains(uint64_t serial) const { return where_.count(serial) != 0; }
  size_t size() const { return where_.size(); }
  bool empty() const { return where_.empty(); }
  // When the longest-waiting window began to wait; nullopt when none waits.
  std::optional<TimePoint> OldestSince() const;
  // Windows waiting per owner.
  std::map<watch::Owner, size_t> WaitingByOwner() const;

 private:
  using Item = std::tuple<TimePoint, int64_t, uint64_t>;  // since, rank, serial
  struct JobQueue {
    std::map<std::string, std::set<Item>> runs;
    std::optional<std::string> last_run;
  };
  struct OwnerQueue {
    std::map<std::string, JobQueue> jobs;
    std::optional<std::string> last_job;
    size_t waiting = 0;
  };
  struct Place {
    ShareKey key;
    Item item;
  };

  std::map<watch::Owner, OwnerQueue> owners_;
  std::optional<watch::Owner> last_owner_;
  std::map<uint64_t, Place> where_;
  std::multiset<TimePoint> since_;  // every waiting window's `since`
};

}  // namespace profwatch::window
