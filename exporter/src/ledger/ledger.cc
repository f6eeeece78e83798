#include "ledger/ledger.h"

#include <algorithm>
#include <set>

namespace profwatch::ledger {

void Ledger::ObserveRefusals(std::string_view reason, std::vector<Refusal> now) {
  const std::string name(reason);
  std::map<std::string, Refusal>& before = refused_[name];
  std::map<std::string, Refusal> next;
  for (Refusal& r : now) {
    r.reason = name;
    if (before.count(r.key) == 0) {
      ++changes_.refused[{name, r.owner}];
      changes_.began[name].push_back(r);
    }
    next.insert_or_assign(r.key, std::move(r));
  }
  for (auto& [key, r] : before) {
    if (next.count(key) == 0) changes_.ended[name].push_back(std::move(r));
  }
  if (next.empty()) {
    refused_.erase(name);
  } else {
    before = std::move(next);
  }
}

void Ledger::AddRefusal(Refusal refusal) {
  std::map<std::string, Refusal>& now = refused_[refusal.reason];
  if (now.count(refusal.key) != 0) return;
  ++changes_.refused[{refusal.reason, refusal.owner}];
  changes_.began[refusal.reason].push_back(refusal);
  std::string key = refusal.key;
  now.emplace(std::move(key), std::move(refusal));
}

void Ledger::CountRefusal(Refusal refusal) {
  ++changes_.refused[{refusal.reason, refusal.owner}];
  changes_.began[refusal.reason].push_back(std::move(refusal));
}

void Ledger::ObserveCapped(const std::vector<std::string_view>& reasons, std::vector<Capped> now) {
  const std::set<std::string_view> mine(reasons.begin(), reasons.end());
  std::map<std::pair<watch::Owner, std::string>, Capped> next;
  for (Capped& c : now) {
    if (c.left_out <= 0) continue;
    std::pair<watch::Owner, std::string> key{c.owner, c.reason};
    const auto was = capped_.find(key);
    if (c.newly == Capped::kGrowth) {
      c.newly =
          std::max<int64_t>(0, c.left_out - (was == capped_.end() ? 0 : was->second.left_out));
    }
    if (c.newly > 0) changes_.refused[{c.reason, c.owner}] += c.newly;
    if (was == capped_.end()) changes_.over.push_back(c);
    next.insert_or_assign(std::move(key), std::move(c));
  }
  for (auto it = capped_.begin(); it != capped_.end();) {
    if (mine.count(it->first.second) == 0) {
      ++it;
      continue;
    }
    if (next.count(it->first) == 0) changes_.under.push_back(it->first);
    it = capped_.erase(it);
  }
  capped_.merge(next);
}

void Ledger::AddAnalysis(watch::Owner owner, double worker_seconds, bool reanalysis) {
  for (Costs* c : {&costs_[owner], &changes_.costs[owner]}) {
    c->worker_seconds += worker_seconds;
    ++c->analyses;
    if (reanalysis) ++c->reanalyses;
  }
}

void Ledger::KeepState(const std::string& run, watch::Owner owner, int64_t bytes) {
  if (auto it = kept_.find(run); it != kept_.end()) {
    kept_by_owner_[it->second.owner] -= it->second.bytes;
    kept_total_ -= it->second.bytes;
    if (kept_by_owner_[it->second.owner] == 0) kept_by_owner_.erase(it->second.owner);
    kept_.erase(it);
  }
  ownerless_.erase(run);
  if (bytes <= 0) return;
  kept_[run] = {owner, bytes};
  kept_by_owner_[owner] += bytes;
  kept_total_ += bytes;
  if (owner == watch::kNoOwner) ownerless_.insert(run);
}

Ledger::StateRoom Ledger::RoomFor(const std::string& run, watch::Owner owner, int64_t owner_cap,
                                  int64_t daemon_cap) const {
  const int64_t own = StateBytesOf(run);
  const int64_t owner_others = StateBytes(owner) - own;
  StateRoom room;
  if (owner_cap > 0) room.owner = std::max<int64_t>(0, owner_cap - owner_others);
  if (daemon_cap > 0) {
    const int64_t owners =
        static_cast<int64_t>(kept_by_owner_.size()) + (kept_by_owner_.count(owner) == 0 ? 1 : 0);
    const int64_t beside_all = daemon_cap - (kept_total_ - own);
    const int64_t equal_share = daemon_cap / owners - owner_others;
    room.daemon = std::max<int64_t>({0, beside_all, equal_share});
  }
  return room;
}

void Ledger::SetRunOwner(const std::string& run, watch::Owner owner) {
  auto it = kept_.find(run);
  if (it == kept_.end() || it->second.owner == owner) return;
  const int64_t bytes = it->second.bytes;
  KeepState(run, owner, bytes);
}

int64_t Ledger::StateBytes(watch::Owner owner) const {
  auto it = kept_by_owner_.find(owner);
  return it == kept_by_owner_.end() ? 0 : it->second;
}

int64_t Ledger::StateBytesOf(const std::string& run) const {
  auto it = kept_.find(run);
  return it == kept_.end() ? 0 : it->second.bytes;
}

Changes Ledger::TakeChanges() { return std::exchange(changes_, {}); }

const std::map<std::string, Refusal>& Ledger::Refused(std::string_view reason) const {
  static const std::map<std::string, Refusal> kNone;
  auto it = refused_.find(std::string(reason));
  return it == refused_.end() ? kNone : it->second;
}

std::map<std::pair<watch::Owner, std::string>, int64_t> Ledger::CappedNow() const {
  std::map<std::pair<watch::Owner, std::string>, int64_t> out;
  for (const auto& [key, c] : capped_) out.emplace(key, c.left_out);
  return out;
}

}  // namespace profwatch::ledger
