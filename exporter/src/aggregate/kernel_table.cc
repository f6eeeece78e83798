// KernelTable: see kernel_table.h.
#include "aggregate/kernel_table.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <set>
#include <thread>

#include "aggregate/device_sweep.h"

namespace profwatch::aggregate {

using classify::FamilyId;
using classify::FamilyKind;

namespace {

// FinishDevices' external merge: about kMergeFanIn spilled runs' read
// buffers of kMergeBufferIntervals each, which bounds the memory of a
// device's merge.
constexpr size_t kMergeFanIn = 128;
constexpr size_t kMergeBufferIntervals = 4096;

}  // namespace

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

CollectiveCall CollectiveCallOf(const parse::TraceEvent& e) {
  return KinetoCollectiveCall(e.args_collective, e.args_dtype, e.args_in_nelems, e.args_out_nelems,
                              e.args_group_size, e.args_pg_desc, e.args_pg_ranks);
}

size_t KernelTable::IntervalsInMemory() const {
  size_t total = 0;
  for (const Device& d : devices) {
    for (const auto& [name, n] : d.by_name) total += n.intervals.size();
  }
  return total;
}

void KernelTable::MaybeSpill(size_t keep) {
  adds_since_check = 0;
  if (IntervalsInMemory() <= keep) return;
  if (spill_failed) return;
  for (Device& d : devices) {
    for (auto& [name, n] : d.by_name) n.intervals.Sort();
  }
  if (!spill) {
    auto created = SpillFile::Create(spill_dir);
    if (!created) {
      spill_failed = true;
      spill_error = created.error().context;
      return;
    }
    spill = std::move(*created);
  }
  for (Device& d : devices) {
    for (size_t slot = 0; slot < d.by_name.size(); ++slot) {
      IntervalList& list = d.by_name[slot].second.intervals;
      const auto& v = list.intervals();
      if (v.empty()) continue;
      // Past the file's budget nothing more is written; the budget's error
      // stops the reader at its next check.
      if (budget != nullptr && !budget->AddSpill(v.size() * sizeof(Interval))) {
        spill_failed = true;
        return;
      }
      auto run = spill->Write(v.data(), v.size());
      if (!run) {
        spill_failed = true;  // runs written so far stay valid
        spill_error = run.error().context;
        return;
      }
      d.spilled.emplace_back(static_cast<uint32_t>(slot), *run);
      spilled_intervals += v.size();
      list.Clear();
    }
  }
}

uint32_t KernelTable::ScopeId(std::string_view scope) {
  if (scope.empty()) return 0;
  if (auto id = scopes.Find(scope)) return *id + 1;
  const NameLimits& limits = window_names->limits();
  std::string cut;
  if (scope.size() > limits.max_name_bytes) {
    ++drops["scope_cut"];
    cut = CutName(scope, limits.max_name_bytes);
    scope = cut;
    if (auto id = scopes.Find(scope)) return *id + 1;
  }
  if (scopes.indexed() < limits.max_names_per_file) {
    if (auto id = scopes.Add(scope)) return *id + 1;
  }
  ++drops["scope_limit"];
  if (other_scope == 0) other_scope = scopes.AddUnindexed(kOtherScopes) + 1;
  return other_scope;
}

void KernelTable::AddScopeTime(uint32_t scope, uint32_t name, int64_t ps) {
  uint64_t key = (uint64_t{scope} << 32) | name;
  auto it = scope_name_ps.find(key);
  if (it == scope_name_ps.end() && scope_name_ps.size() >= kMaxScopeNames) {
    ++drops["scope_limit"];
    if (other_scope == 0) other_scope = scopes.AddUnindexed(kOtherScopes) + 1;
    key = (uint64_t{other_scope} << 32) | name;
    it = scope_name_ps.find(key);
  }
  if (it == scope_name_ps.end()) it = scope_name_ps.emplace(key, 0).first;
  it->second += ps;
}

uint32_t KernelTable::Intern(std::string_view n) {
  if (auto id = names.Find(n)) return *id;
  const NameLimits& limits = window_names->limits();
  std::string cut;
  std::string_view kept = n;
  if (n.size() > limits.max_name_bytes) {
    ++drops["name_cut"];
    cut = CutName(n, limits.max_name_bytes);
    kept = cut;
    if (auto id = names.Find(kept)) return *id;
  }
  // Judged on the name as read, before anything of it is let go (the
  // classifier reads a name over 32 KiB by its ends).
  const bool memop = classify::IsRuntimeMemopName(n);
  auto judge = [&] {
    NameTraits t;
    for (const auto& c : window_names->candidates()) t.family.push_back(c->Classify(n));
    t.collective = CollectiveKindOfKernel(n);
    return t;
  };
  std::optional<uint32_t> id;
  if (names.indexed() < limits.max_names_per_file) id = names.Add(kept);
  if (id) {
    name_is_kernel.push_back(0);
    name_is_memop.push_back(memop ? 1 : 0);
    if (!cut.empty()) traits.emplace(*id, judge());
    return *id;
  }
  ++drops["name_limit"];
  return OtherName(judge(), memop);
}

uint32_t KernelTable::OtherName(NameTraits t, bool memop) {
  std::string key = memop ? "m" : "k";
  key += t.collective ? std::to_string(static_cast<int>(*t.collective)) : "-";
  for (classify::FamilyId f : t.family) key += "," + std::to_string(f);
  if (auto it = other_names.find(key); it != other_names.end()) return it->second;
  const uint32_t other = names.AddUnindexed(kOtherKernelNames);
  name_is_kernel.push_back(0);
  name_is_memop.push_back(memop ? 1 : 0);
  traits.emplace(other, std::move(t));
  other_names.emplace(std::move(key), other);
  return other;
}

bool KernelTable::HasSlot(const Device& d, uint32_t name, const CollectiveCall* call) {
  if (call != nullptr && call->kind) {
    return d.collective_slot_of.count((uint64_t{name} << 8) |
                                      (1u + static_cast<uint8_t>(*call->kind))) != 0;
  }
  return name < d.slot_of.size() && d.slot_of[name] != 0;
}

uint32_t KernelTable::OtherNameOf(uint32_t name) {
  if (auto known = other_of_name.find(name); known != other_of_name.end()) return known->second;
  uint32_t other = name;  // an "other" entry already
  if (auto t = traits.find(name); t != traits.end()) {
    if (names[name] != kOtherKernelNames) other = OtherName(t->second, name_is_memop[name] != 0);
  } else {
    NameTraits judged;
    for (const auto& c : window_names->candidates()) {
      judged.family.push_back(c->Classify(names[name]));
    }
    judged.collective = CollectiveKindOfKernel(names[name]);
    other = OtherName(std::move(judged), name_is_memop[name] != 0);
  }
  other_of_name.emplace(name, other);
  return other;
}

classify::FamilyId KernelTable::FamilyOf(uint32_t id,
                                         const classify::Classifier& classifier) const {
  if (auto t = traits.find(id); t != traits.end()) {
    const auto& candidates = window_names->candidates();
    for (size_t k = 0; k < candidates.size() && k < t->second.family.size(); ++k) {
      if (candidates[k].get() == &classifier) return t->second.family[k];
    }
  }
  return classifier.Classify(names[id]);
}

std::optional<CollectiveKind> KernelTable::CollectiveKindOfName(uint32_t id) const {
  if (auto t = traits.find(id); t != traits.end()) return t->second.collective;
  return CollectiveKindOfKernel(names[id]);
}

int KernelTable::NewDevice(std::string_view name) {
  if (devices.size() >= kMaxDevices) return -1;
  devices.push_back(Device{});
  devices.back().name = CutName(name, window_names->limits().max_name_bytes);
  return static_cast<int>(devices.size() - 1);
}

bool KernelTable::Times(bool has_ts, int64_t ts, bool has_dur, bool dur_exact, int64_t dur,
                        int64_t* start, int64_t* end) {
  if (!has_ts) {
    ++drops["no_timestamp"];
    return false;
  }
  int64_t d = 0;
  if (has_dur) {
    if (!dur_exact || dur < 0) {
      ++drops["bad_duration"];
      return false;
    }
    d = dur;
  }
  if (__builtin_add_overflow(ts, d, end)) {
    ++drops["bad_duration"];
    return false;
  }
  *start = ts;
  return true;
}

void KernelTable::AddKernel(int dev, int64_t stream, uint32_t name, int64_t start, int64_t end,
                            const CollectiveCall* call, uint64_t hlo_op) {
  Device& d = devices[static_cast<size_t>(dev)];
  if (!HasSlot(d, name, call) && names[name] != kOtherKernelNames &&
      !window_names->TakeDeviceName()) {
    // The window's (device, name) slots are taken: its other-names slot.
    ++drops["device_name_limit"];
    name = OtherNameOf(name);
  }
  name_is_kernel[name] = 1;
  uint32_t* slot = nullptr;
  if (call != nullptr && call->kind) {
    slot = &d.collective_slot_of[(uint64_t{name} << 8) | (1u + static_cast<uint8_t>(*call->kind))];
  } else {
    if (d.slot_of.size() <= name) d.slot_of.resize(names.size(), 0);
    slot = &d.slot_of[name];
  }
  if (*slot == 0) {
    d.by_name.emplace_back(name, NameOnDevice{});
    *slot = static_cast<uint32_t>(d.by_name.size());
    if (call != nullptr && call->kind) {
      d.by_name.back().second.collective =
          std::make_unique<CollectiveSlot>(CollectiveSlot{*call->kind, {}});
    }
  }
  NameOnDevice& n = d.by_name[*slot - 1].second;
  if (n.collective && hlo_op != 0) {
    auto& [calls, ps] = n.collective->by_hlo_op[hlo_op];
    ++calls;
    ps += end - start;
    hlo_collectives = true;
  } else if (n.collective) {
    n.collective->sums.AddCall(n.collective->kind, *call, end - start);
  }
  ++n.launches;
  n.total_ps += end - start;
  n.min_start = std::min(n.min_start, start);
  n.max_end = std::max(n.max_end, end);
  n.intervals.Add(start, end);
  if (++adds_since_check >= std::min<size_t>(65536, interval_budget / 4 + 1))
    MaybeSpill(interval_budget);
  size_t si = 0;
  while (si < d.streams.size() && d.streams[si] != stream) ++si;
  if (si == d.streams.size()) {
    if (d.streams.size() < kMaxStreams) {
      d.streams.push_back(stream);
    } else {
      ++drops["stream_limit"];
      si = kMaxStreams - 1;
    }
  }
  const uint64_t key = (static_cast<uint64_t>(si) << 32) | name;
  if (key != d.last_stream_name) {
    if (d.stream_names.size() < kMaxStreamNames) {
      d.stream_names.insert(key);
    } else {
      d.stream_names_full = true;
    }
    d.last_stream_name = key;
  }
}

void KernelTable::AddMemop(int dev, int64_t start, int64_t end, int64_t bytes) {
  Device& d = devices[static_cast<size_t>(dev)];
  ++d.memops;
  d.memop_ps += end - start;
  if (bytes < 0) return;
  memop_bytes += static_cast<double>(bytes);
  ++sized_memops;
  sized_memop_ps += end - start;
}

int64_t MemopBytes(std::string_view details) {
  // The value of the first " size:" or " num_bytes:" field (or at the start).
  for (std::string_view key : {std::string_view("size:"), std::string_view("num_bytes:")}) {
    for (size_t at = details.find(key); at != std::string_view::npos;
         at = details.find(key, at + 1)) {
      if (at != 0 && details[at - 1] != ' ') continue;
      std::string_view v = details.substr(at + key.size());
      v = v.substr(0, v.find(' '));
      const std::optional<int64_t> n = ParseInt(v);
      return n && *n >= 0 ? *n : -1;
    }
  }
  return -1;
}

void KernelTable::AddStep(std::string_view number, int64_t start, int64_t end) {
  if (steps.size() >= kMaxSteps || !window_names->TakeStep()) {
    ++drops["step_limit"];
    return;
  }
  const auto n = ParseInt(number);
  steps.push_back(StepSpan{0, n && *n >= 0 ? *n : -1, end - start});
}

std::vector<KernelTable::DeviceResult> KernelTable::FinishDevices(
    const std::vector<FamilyId>& family, const classify::Classifier& classifier,
    const parse::ParseSummary& summary, int threads, FileBudget* budget) {
  std::vector<DeviceResult> results(devices.size());
  const size_t workers = std::min<size_t>(std::max(1, threads), devices.size());
  auto over = [budget] { return budget != nullptr && !budget->Check(); };
  if (workers <= 1) {
    for (size_t i = 0; i < devices.size() && !over(); ++i) {
      FinishDevice(i, family, classifier, summary, results[i]);
    }
    return results;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < devices.size() && !over(); i = next++) {
      FinishDevice(i, family, classifier, summary, results[i]);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return results;
}

struct KernelTable::SlotPlan {
  std::vector<uint8_t> memory_name;  // by name id: a kMemory kernel
  std::vector<uint8_t> is_comm, is_memory;
  std::vector<uint8_t> collective;  // 1 + CollectiveKind; 0: not comm
  std::vector<TaggedRun> runs;      // the intervals of every non-memory slot
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
};

KernelTable::SlotPlan KernelTable::PlanSlots(Device& d, const std::vector<FamilyId>& family,
                                             const classify::Classifier& classifier,
                                             DeviceResult& result) {
  DeviceSummary& ds = result.ds;
  SlotPlan plan;
  plan.memory_name.assign(names.size(), 0);
  plan.is_comm.assign(d.by_name.size(), 0);
  plan.is_memory.assign(d.by_name.size(), 0);
  plan.collective.assign(d.by_name.size(), 0);
  for (size_t slot = 0; slot < d.by_name.size(); ++slot) {
    auto& [name, n] = d.by_name[slot];
    const FamilyKind kind = classifier.KindOf(family[name]);
    if (kind == FamilyKind::kMemory) {
      plan.memory_name[name] = 1;
      plan.is_memory[slot] = 1;
      ds.memops += n.launches;
      ds.memop_ps += n.total_ps;
      continue;
    }
    plan.is_comm[slot] = kind == FamilyKind::kComm ? 1 : 0;
    ds.kernels += n.launches;
    ds.kernel_ps += n.total_ps;
    plan.first = std::min(plan.first, n.min_start);
    plan.last = std::max(plan.last, n.max_end);
    if (kind == FamilyKind::kComm) {
      ds.comm_ps += n.total_ps;
      // Kind from the call's metadata, else the kernel name, else other.
      const CollectiveKind ck = n.collective
                                    ? n.collective->kind
                                    : CollectiveKindOfName(name).value_or(CollectiveKind::kOther);
      plan.collective[slot] = 1 + static_cast<uint8_t>(ck);
      CollectiveSums& sums = result.collectives[ck];
      sums.sources |= source;
      if (ck == CollectiveKind::kOther && names[name].find("Generic") != std::string::npos) {
        sums.generic_kernels = true;
      }
      sums.calls += n.launches;
      sums.kernel_ps += n.total_ps;
      if (n.collective) sums.Merge(n.collective->sums);
    }
    n.intervals.Sort();
    plan.runs.push_back(
        TaggedRun{RunCursor::Memory(&n.intervals.intervals()), static_cast<uint32_t>(slot)});
  }
  for (const auto& [slot, run] : d.spilled) {
    if (plan.is_memory[slot]) continue;
    plan.runs.push_back(TaggedRun{RunCursor::File(spill.get(), run, kMergeBufferIntervals), slot});
  }
  return plan;
}

void KernelTable::FinishDevice(size_t index, const std::vector<FamilyId>& family,
                               const classify::Classifier& classifier,
                               const parse::ParseSummary& summary, DeviceResult& result) {
  Device& d = devices[index];
  DeviceSummary& ds = result.ds;
  ds.file = path;
  ds.device = d.name;
  ds.memops = d.memops;
  ds.memop_ps = d.memop_ps;
  ds.pid = d.pid;
  ds.device_id = d.device_id;
  if (d.pid) {
    auto rank = summary.process_ranks.find(*d.pid);
    if (rank != summary.process_ranks.end()) ds.rank = rank->second;
  }
  SlotPlan plan = PlanSlots(d, family, classifier, result);
  if (ds.kernels == 0) return;  // not a GPU: no kernel on it
  result.gpu = true;
  std::set<uint32_t> kernel_streams;
  for (uint64_t key : d.stream_names) {
    if (!plan.memory_name[key & 0xffffffffu]) {
      kernel_streams.insert(static_cast<uint32_t>(key >> 32));
    }
  }
  // Past kMaxStreamNames the pairs do not say which streams had only memory
  // kernels: every stream with a kernel counts.
  ds.streams = static_cast<int>(d.stream_names_full ? d.streams.size() : kernel_streams.size());
  ds.span_ps = plan.last - plan.first;
  Sweep(d, std::move(plan), result);
}

void KernelTable::Sweep(Device& d, SlotPlan plan, DeviceResult& result) {
  DeviceSummary& ds = result.ds;
  MergeStream merged(std::move(plan.runs), spill.get(), kMergeFanIn, kMergeBufferIntervals);
  DeviceSweep sweep(std::move(plan.is_comm), [&](uint32_t a, uint32_t b) {
    return names[d.by_name[a].first] < names[d.by_name[b].first];
  });
  sweep.SetCollectiveKinds(std::move(plan.collective));
  std::optional<AnnotationMatcher> annotations;
  if (!d.annotations.empty()) {
    result.annotated = true;
    annotations.emplace(std::move(d.annotations));
  }
  Interval iv;
  uint32_t slot = 0;
  while (merged.Next(&iv, &slot)) {
    sweep.Add(iv.start, iv.end, slot);
    if (annotations) {
      if (auto region = annotations->RegionOf(iv.start, iv.end)) {
        result.annotation_ps[*region] += iv.end - iv.start;
      }
    }
  }
  const SweepTotals t = sweep.Finish();
  ds.busy_ps = t.busy;
  ds.exposed_comm_ps = t.exposed_comm;
  ds.compute_busy_ps = t.compute_busy;
  ds.exclusive_ps = t.exclusive;
  ds.largest_gaps_ps = t.largest_gaps;
  for (size_t k = 0; k < kCollectiveKinds; ++k) {
    result.collectives.kinds[k].exposed_ps = t.exposed_by_collective[k];
  }
  result.exclusive = sweep.exclusive();
  result.idle_before = sweep.idle_before();
  result.spill_error = merged.error().has_value();
}

}  // namespace profwatch::aggregate
