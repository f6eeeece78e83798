// LaunchJoin: see launch_join.h.
#include "aggregate/launch_join.h"

#include <algorithm>
#include <functional>

#include "aggregate/kernel_table.h"

namespace profwatch::aggregate {

namespace {

// A pid or tid as a number: integers as they are, numeric strings ("25738"
// in the 2021 schema) as their value, other strings by their hash.
int64_t IdNumber(const parse::Id& id) {
  switch (id.kind) {
    case parse::IdKind::kInt:
      return id.num;
    case parse::IdKind::kString:
    case parse::IdKind::kOther:
      if (auto n = ParseInt(id.str)) return *n;
      return static_cast<int64_t>(std::hash<std::string_view>{}(id.str));
    case parse::IdKind::kMissing:
      break;
  }
  return -1;
}

}  // namespace

uint32_t LaunchJoin::Thread(const parse::Id& pid, const parse::Id& tid) {
  auto [it, added] =
      threads_.try_emplace({IdNumber(pid), IdNumber(tid)}, static_cast<uint32_t>(threads_.size()));
  return it->second;
}

void LaunchJoin::AddLaunch(int64_t correlation, uint32_t thread, int64_t ts) {
  if (launches_.size() >= kMaxLaunches) {
    ++drops_["launch_limit"];
    return;
  }
  launches_.push_back({correlation, ts, thread});
}

void LaunchJoin::AddRange(Set set, uint32_t thread, int64_t start, int64_t end, uint32_t payload) {
  if (ranges_[0].size() + ranges_[1].size() + ranges_[2].size() >= kMaxRanges) {
    ++drops_["launch_range_limit"];
    return;
  }
  ranges_[set].push_back({start, end, thread, payload});
}

void LaunchJoin::Finish() {
  std::stable_sort(launches_.begin(), launches_.end(),
                   [](const Launch& a, const Launch& b) { return a.correlation < b.correlation; });
  // By thread, then start; of equal starts the longer (outer) first, so a
  // walk backwards from a launch meets inner ranges before outer ones.
  for (auto& ranges : ranges_) {
    std::stable_sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
      if (a.thread != b.thread) return a.thread < b.thread;
      if (a.start != b.start) return a.start < b.start;
      return a.end > b.end;
    });
  }
}

bool LaunchJoin::Enclosing(Set set, int64_t correlation, size_t max,
                           std::vector<uint32_t>* out) const {
  out->clear();
  auto l = std::lower_bound(launches_.begin(), launches_.end(), correlation,
                            [](const Launch& a, int64_t c) { return a.correlation < c; });
  if (l == launches_.end() || l->correlation != correlation) return false;
  const std::vector<Range>& ranges = ranges_[set];
  // The first range of the thread that starts after the launch.
  auto after = std::upper_bound(ranges.begin(), ranges.end(), std::pair{l->thread, l->ts},
                                [](const std::pair<uint32_t, int64_t>& key, const Range& r) {
                                  if (key.first != r.thread) return key.first < r.thread;
                                  return key.second < r.start;
                                });
  size_t walked = 0;
  for (auto it = after; it != ranges.begin() && walked < kMaxWalk && out->size() < max; ++walked) {
    --it;
    if (it->thread != l->thread) break;
    if (it->end >= l->ts) out->push_back(it->payload);
  }
  return true;
}

}  // namespace profwatch::aggregate
