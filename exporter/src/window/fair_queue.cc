#include "window/fair_queue.h"

#include <algorithm>

namespace profwatch::window {
namespace {

// The entry after `last` in `m` (wrapping to the first); when nothing of
// this level was served yet, the entry holding the longest-waiting window
// (`oldest` of an entry). `m` must not be empty.
template <class Map, class Key, class Oldest>
typename Map::iterator NextAfter(Map& m, const std::optional<Key>& last, Oldest oldest) {
  if (!last) {
    return std::min_element(m.begin(), m.end(), [&](const auto& a, const auto& b) {
      return oldest(a.second) < oldest(b.second);
    });
  }
  auto it = m.upper_bound(*last);
  return it == m.end() ? m.begin() : it;
}

}  // namespace

void FairQueue::Push(const ShareKey& key, uint64_t serial, TimePoint since, int64_t rank) {
  if (where_.count(serial) != 0) return;
  const Item item{since, rank, serial};
  OwnerQueue& owner = owners_[key.owner];
  owner.jobs[key.job].runs[key.run].insert(item);
  ++owner.waiting;
  where_.emplace(serial, Place{key, item});
  since_.insert(since);
}

bool FairQueue::Remove(uint64_t serial) {
  auto it = where_.find(serial);
  if (it == where_.end()) return false;
  const Place& place = it->second;
  auto owner = owners_.find(place.key.owner);
  auto job = owner->second.jobs.find(place.key.job);
  auto run = job->second.runs.find(place.key.run);
  run->second.erase(place.item);
  if (run->second.empty()) job->second.runs.erase(run);
  if (job->second.runs.empty()) owner->second.jobs.erase(job);
  if (--owner->second.waiting == 0) owners_.erase(owner);
  since_.erase(since_.find(std::get<0>(place.item)));
  where_.erase(it);
  return true;
}

std::optional<uint64_t> FairQueue::Pop(const std::map<watch::Owner, int64_t>& busy) {
  if (owners_.empty()) return std::nullopt;
  const auto busy_of = [&](watch::Owner o) {
    const auto it = busy.find(o);
    return it == busy.end() ? int64_t{0} : it->second;
  };
  int64_t least = busy_of(owners_.begin()->first);
  for (const auto& [o, q] : owners_) least = std::min(least, busy_of(o));
  const auto of_run = [](const std::set<Item>& items) { return *items.begin(); };
  const auto of_job = [&](const JobQueue& jq) {
    Item best = of_run(jq.runs.begin()->second);
    for (const auto& [run, items] : jq.runs) best = std::min(best, of_run(items));
    return best;
  };
  const auto of_owner = [&](const OwnerQueue& oq) {
    Item best = of_job(oq.jobs.begin()->second);
    for (const auto& [job, jq] : oq.jobs) best = std::min(best, of_job(jq));
    return best;
  };
  // The owners holding the fewest workers take turns as every owner would.
  std::map<watch::Owner, OwnerQueue*> eligible;
  for (auto& [o, q] : owners_) {
    if (busy_of(o) == least) eligible.emplace(o, &q);
  }
  const auto of_eligible = [&](const OwnerQueue* oq) { return of_owner(*oq); };
  const watch::Owner chosen = NextAfter(eligible, last_owner_, of_eligible)->first;
  auto owner = owners_.find(chosen);
  last_owner_ = owner->first;
  OwnerQueue& oq = owner->second;
  auto job = NextAfter(oq.jobs, oq.last_job, of_job);
  oq.last_job = job->first;
  JobQueue& jq = job->second;
  auto run = NextAfter(jq.runs, jq.last_run, of_run);
  jq.last_run = run->first;
  const uint64_t serial = std::get<2>(*run->second.begin());
  Remove(serial);
  return serial;
}

std::optional<TimePoint> FairQueue::OldestSince() const {
  if (since_.empty()) return std::nullopt;
  return *since_.begin();
}

std::map<watch::Owner, size_t> FairQueue::WaitingByOwner() const {
  std::map<watch::Owner, size_t> out;
  for (const auto& [owner, q] : owners_) out[owner] = q.waiting;
  return out;
}

}  // namespace profwatch::window
