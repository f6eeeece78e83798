// FileAggregator and MergeWindow: see aggregator.h for the detection rules.
//
// Per file, kernel events are kept per (device, kernel name): launch count,
// summed duration, first start / last end, and an IntervalList (16 B per
// interval). Keeping them per name lets classification wait until Finish
// (for `--rules auto`) while still splitting comm from compute and dropping
// kMemory kernels from the device figures there. Beyond the interval budget
// the lists are sorted in place and written as sorted runs to a spill file;
// Finish merges memory lists and spilled runs in start order into one
// DeviceSweep per device (device_sweep.h), so memory stays bounded and the
// integer results are the same.
#include "aggregate/aggregator.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "aggregate/collectives.h"
#include "aggregate/device_sweep.h"
#include "aggregate/flops.h"
#include "aggregate/graph_regions.h"
#include "aggregate/interval_spill.h"
#include "aggregate/intervals.h"
#include "aggregate/name_table.h"
#include "aggregate/region.h"
#include "parse/op_shape_reader.h"
#include "watch/layout.h"

namespace profwatch::aggregate {

using classify::FamilyId;
using classify::FamilyKind;

struct FileStats {
  FileSummary summary;
  std::vector<DeviceSummary> devices;  // GPUs only (>= 1 kernel), device order
  struct Name {
    std::string name;
    FamilyId family = 0;
    int64_t launches = 0;
    int64_t total_ps = 0;
    int64_t exclusive_ps = 0;
    int64_t idle_before_ps = 0;
  };
  std::vector<Name> kernels;  // distinct kernel names of the file
  std::vector<StepSpan> steps;
  struct ScopeTime {
    std::string scope;
    int64_t kernel_ps = 0;
  };
  std::vector<ScopeTime> scopes;  // kernel time per args.name scope (no memory kernels)
  // Kernel time per innermost gpu_user_annotation (the region itself).
  std::vector<ScopeTime> annotations;
  bool annotated = false;  // some device had gpu_user_annotation ranges
  GraphRegionStats graph;  // kernels of CUDA graphs (no scope, a module)
  FlopStats flops;         // families: "#<FamilyId>" until MergeWindow names them
  std::vector<std::pair<FamilyId, FlopStats::Family>> flop_families;
  CollectiveStats collectives;  // communication kernels by collective kind
};

namespace {

// Finish's external merge: about kMergeFanIn spilled runs' read buffers of
// kMergeBufferIntervals each, which bounds the memory of a device's merge.
constexpr size_t kMergeFanIn = 128;
constexpr size_t kMergeBufferIntervals = 4096;

struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    return std::hash<int64_t>{}(p.first) * 0x9E3779B97F4A7C15ULL ^ std::hash<int64_t>{}(p.second);
  }
};

bool IsDeviceProcessName(std::string_view n) {
  return n.starts_with("/device:GPU:") || n.starts_with("/device:TPU:");
}

bool IsKinetoKernelCat(std::string_view c) { return c == "kernel" || c == "Kernel"; }
bool IsKinetoMemopCat(std::string_view c) {
  return c == "gpu_memcpy" || c == "gpu_memset" || c == "Memcpy" || c == "Memset";
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Compares strings with digit runs as numbers: "/device:GPU:2" < "/device:GPU:10".
bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9';
    const bool db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && a[ie] >= '0' && a[ie] <= '9') ++ie;
      while (je < b.size() && b[je] >= '0' && b[je] <= '9') ++je;
      std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

// The `keep` largest (then by name) of `v`; all when keep is 0.
std::vector<RankedKernel> TopRanked(std::vector<RankedKernel> v, size_t keep) {
  auto larger = [](const RankedKernel& a, const RankedKernel& b) {
    if (a.ps != b.ps) return a.ps > b.ps;
    return a.name < b.name;
  };
  if (keep == 0 || keep > v.size()) keep = v.size();
  std::partial_sort(v.begin(), v.begin() + static_cast<ptrdiff_t>(keep), v.end(), larger);
  v.resize(keep);
  return v;
}

}  // namespace

struct FileAggregator::Impl {
  // Kernels of one name whose calls carried collective metadata of one kind
  // (Kineto args, a JAX hlo_op): the kind and their sized figures.
  struct CollectiveSlot {
    CollectiveKind kind = CollectiveKind::kOther;
    CollectiveSums sums;
    // JAX calls sized at Finish from their HLO instruction (SizeHloCollectives):
    // (ModuleId << 32 | HloOpId) -> (calls, kernel ps).
    std::map<uint64_t, std::pair<int64_t, int64_t>> by_hlo_op{};
  };
  struct NameOnDevice {
    int64_t launches = 0;
    int64_t total_ps = 0;
    int64_t min_start = std::numeric_limits<int64_t>::max();
    int64_t max_end = std::numeric_limits<int64_t>::min();
    IntervalList intervals;
    std::unique_ptr<CollectiveSlot> collective;  // null: no collective metadata
  };
  struct Device {
    std::string name;
    // Kernel names seen on this device, in first-seen order; slot_of[name id]
    // is the index into by_name + 1 (0: not seen). Dense, because name ids
    // are small and this is looked up once per kernel.
    std::vector<std::pair<uint32_t, NameOnDevice>> by_name;
    std::vector<uint32_t> slot_of;
    // Slots of kernels with collective metadata, by (name id << 8 | 1 +
    // kind): slot index + 1, apart from slot_of (one name, several kinds).
    std::unordered_map<uint64_t, uint32_t> collective_slot_of;
    std::vector<int64_t> streams;               // distinct stream ids seen with kernels
    std::unordered_set<uint64_t> stream_names;  // (stream index << 32) | name id
    std::vector<std::pair<uint32_t, SpillFile::Run>> spilled;  // (by_name index, run)
    uint64_t last_stream_name = ~0ULL;
    int64_t memops = 0;
    int64_t memop_ps = 0;
    std::optional<int64_t> pid, device_id;  // nsys devices only
    std::vector<Annotation> annotations;    // PyTorch gpu_user_annotation ranges
  };
  // kXlaOps: the "XLA Ops" line, which is where a TPU plane's ops are (TPU
  // planes have no "Stream #" lines); on GPU planes it would duplicate the
  // streams, so it only counts on TPU devices.
  enum class ThreadKind : uint8_t { kStream, kSteps, kXlaOps, kOther };
  // An event of a thread whose metadata was not known when it arrived.
  struct Held {
    uint32_t name = 0;
    uint32_t scope = 0;      // ScopeId(args.name): 0 = none
    uint32_t module = 0;     // ModuleId(args.hlo_module): 0 = none
    uint8_t collective = 0;  // 1 + the CollectiveKind its args.hlo_op names; 0 = none
    uint32_t hlo_op = 0;     // a collective's HloOpId(args.hlo_op); 0 = none
    bool has_ts = false;
    bool has_dur = false;
    bool dur_exact = false;
    int64_t ts_ps = 0;
    int64_t dur_ps = 0;
  };

  std::string path;
  NameTable names;  // kernel names; the vectors below are indexed by name id
  std::vector<uint8_t> name_is_kernel;
  std::vector<uint8_t>
      name_is_memop;  // JAX stream copies (classify::IsRuntimeMemopName), once per name
  NameTable scopes;   // args.name scopes; ScopeId = index + 1
  std::unordered_map<uint64_t, int64_t> scope_name_ps;  // (scope id << 32 | name) -> ps
  // JAX kernels without a scope but with a module: those of a CUDA graph,
  // placed by the module's schedule in Finish (graph_regions.h).
  struct GraphKernel {
    int64_t start = 0, end = 0;
    uint32_t name = 0, module = 0;  // module: ModuleId
    int dev = 0;
    bool scoped = false;  // has its own scope: placed for FLOPs only
  };
  NameTable modules;             // args.hlo_module values; ModuleId = index + 1
  NameTable hlo_ops;             // collective kernels' args.hlo_op values; HloOpId = index + 1
  bool hlo_collectives = false;  // some collective call waits for its HLO sizes
  std::vector<GraphKernel> graph_kernels;
  bool keep_graph_kernels = true;  // false: only their time is summed
  // FLOP counting (flops.h): counted operators by External id, and each
  // Kineto kernel's External id link.
  std::unordered_map<int64_t, OpFlops> flop_ops;
  parse::OpShapeReader op_shapes;  // decodes counted operators' shapes
  // FLOPs of each launch of a module (HloLaunchFlops, -1: unusable shapes),
  // computed once per module.
  std::unordered_map<const parse::HloModuleSchedule*, std::vector<int64_t>> launch_flops;
  struct KernelLink {
    int64_t external_id = 0;
    int64_t ps = 0;
    uint32_t name = 0;
  };
  std::vector<KernelLink> kernel_links;
  CollectiveOps collective_ops;  // record_param_comms metadata by External id
  int64_t unkept_graph_ps = 0;
  int64_t over_limit_graph_ps = 0;  // beyond kMaxGraphKernels
  std::shared_ptr<const parse::HloIndex> hlo;
  std::string hlo_missing;  // why there is no index, when there is none

  // JAX metadata.
  std::unordered_map<int64_t, int> jax_pid_device;  // pid -> device index, -1 = host
  std::unordered_map<std::pair<int64_t, int64_t>, ThreadKind, PairHash> jax_threads;
  std::unordered_map<std::pair<int64_t, int64_t>, std::vector<Held>, PairHash> held;
  std::unordered_map<int64_t, std::string> jax_pid_names;  // device pids, for late creation

  std::unordered_map<int64_t, int> kineto_devices;  // ordinal -> device index
  std::unordered_map<std::pair<int64_t, int64_t>, int, PairHash> nsys_devices;  // (pid, device)
  std::vector<Device> devices;
  std::vector<StepSpan> steps;
  std::map<std::string, uint64_t> drops;
  // A "cat" was seen: a Kineto file, whose cat-less events are never kernels.
  bool saw_cat = false;

  size_t interval_budget = FileAggregator::kDefaultIntervalBudget;
  std::string spill_dir = "/tmp";
  size_t adds_since_check = 0;
  size_t held_count = 0;
  size_t annotation_count = 0;
  std::unique_ptr<SpillFile> spill;
  bool spill_failed = false;     // no (more) spilling: kept in memory instead
  FileBudget* budget = nullptr;  // charged per spill write; may be null
  uint64_t spilled_intervals = 0;

  size_t IntervalsInMemory() const {
    size_t total = 0;
    for (const Device& d : devices) {
      for (const auto& [name, n] : d.by_name) total += n.intervals.size();
    }
    return total;
  }

  // Called every few thousand kernels: keeps the in-memory intervals under
  // the budget (see the file comment).
  // `keep`: the most intervals left in memory without writing them out.
  void MaybeSpill(size_t keep) {
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
          return;
        }
        d.spilled.emplace_back(static_cast<uint32_t>(slot), *run);
        spilled_intervals += v.size();
        list.Clear();
      }
    }
  }

  uint32_t ScopeId(std::string_view scope) {
    if (scope.empty()) return 0;
    bool added;
    return scopes.Intern(scope, added) + 1;
  }

  // 0: none. Without HLO modules to come (KeepGraphKernels(false)) only
  // whether there is one matters: kAnyModule, nothing interned.
  static constexpr uint32_t kAnyModule = ~uint32_t{0};
  uint32_t ModuleId(std::string_view module) {
    if (module.empty()) return 0;
    if (!keep_graph_kernels) return kAnyModule;
    bool added;
    return modules.Intern(module, added) + 1;
  }

  // Sizes the JAX collective calls AddKernel kept by HLO instruction: bytes
  // and group size from the instruction in their module (parse::
  // HloCollective), by the nccl-tests rules of collectives.h. Calls whose
  // module or instruction is not in the index stay unsized.
  void SizeHloCollectives() {
    if (!hlo_collectives) return;
    for (Device& d : devices) {
      for (auto& [name, n] : d.by_name) {
        if (!n.collective) continue;
        CollectiveSlot& slot = *n.collective;
        for (const auto& [key, calls_ps] : slot.by_hlo_op) {
          const auto& [calls, ps] = calls_ps;
          const parse::HloModuleSchedule* schedule =
              hlo ? hlo->Find(modules[static_cast<uint32_t>(key >> 32) - 1]) : nullptr;
          const parse::HloCollective* c = nullptr;
          if (schedule != nullptr) {
            auto it = schedule->collectives.find(hlo_ops[static_cast<uint32_t>(key) - 1]);
            if (it != schedule->collectives.end()) c = &it->second;
          }
          std::optional<int64_t> bytes, ranks;
          if (c != nullptr) {
            // HloCollective counts bytes: elements of one byte each.
            bytes = CollectiveBytes(slot.kind, 1, c->in_bytes, c->out_bytes);
            if (c->group_size > 0) ranks = c->group_size;
          }
          slot.sums.AddSized(slot.kind, bytes, ranks, ps, calls);
        }
        slot.by_hlo_op.clear();
      }
    }
    hlo_collectives = false;
  }

  uint32_t Intern(std::string_view n) {
    bool added;
    const uint32_t id = names.Intern(n, added);
    if (!added) return id;
    name_is_kernel.push_back(0);
    name_is_memop.push_back(classify::IsRuntimeMemopName(n) ? 1 : 0);
    return id;
  }

  int NewDevice(std::string name) {
    devices.push_back(Device{});
    devices.back().name = std::move(name);
    return static_cast<int>(devices.size() - 1);
  }

  int JaxDevice(int64_t pid) {
    auto it = jax_pid_device.find(pid);
    if (it == jax_pid_device.end()) return -1;
    return it->second;
  }

  int KinetoDevice(int64_t ordinal) {
    auto it = kineto_devices.find(ordinal);
    if (it != kineto_devices.end()) return it->second;
    const int d = NewDevice("GPU " + std::to_string(ordinal));
    kineto_devices.emplace(ordinal, d);
    return d;
  }

  // Validates times; returns false (and counts) when the event must be dropped.
  bool Times(bool has_ts, int64_t ts, bool has_dur, bool dur_exact, int64_t dur, int64_t* start,
             int64_t* end) {
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

  // `call`: the kernel's collective metadata, when it has a kind;
  // `hlo_op`: (ModuleId << 32 | HloOpId) of a JAX collective call sized at
  // Finish from its HLO instruction (0: none).
  void AddKernel(int dev, int64_t stream, uint32_t name, int64_t start, int64_t end,
                 const CollectiveCall* call = nullptr, uint64_t hlo_op = 0) {
    Device& d = devices[static_cast<size_t>(dev)];
    name_is_kernel[name] = 1;
    uint32_t* slot = nullptr;
    if (call != nullptr && call->kind) {
      slot =
          &d.collective_slot_of[(uint64_t{name} << 8) | (1u + static_cast<uint8_t>(*call->kind))];
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
    if (si == d.streams.size()) d.streams.push_back(stream);
    const uint64_t key = (static_cast<uint64_t>(si) << 32) | name;
    if (key != d.last_stream_name) {
      d.stream_names.insert(key);
      d.last_stream_name = key;
    }
  }

  void AddMemop(int dev, int64_t start, int64_t end) {
    Device& d = devices[static_cast<size_t>(dev)];
    ++d.memops;
    d.memop_ps += end - start;
  }

  // A JAX stream event on a known device.
  void JaxStreamEvent(int dev, int64_t tid, const Held& h) {
    int64_t start = 0, end = 0;
    if (!Times(h.has_ts, h.ts_ps, h.has_dur, h.dur_exact, h.dur_ps, &start, &end)) return;
    if (name_is_memop[h.name]) {
      AddMemop(dev, start, end);
    } else {
      CollectiveCall call;
      if (h.collective != 0) call.kind = static_cast<CollectiveKind>(h.collective - 1);
      const uint64_t hlo_op = h.module != 0 && h.module != kAnyModule && h.hlo_op != 0
                                  ? (uint64_t{h.module} << 32) | h.hlo_op
                                  : 0;
      AddKernel(dev, tid, h.name, start, end, &call, hlo_op);
      if (h.scope != 0) scope_name_ps[(uint64_t{h.scope} << 32) | h.name] += end - start;
      // Kernels of a module are placed by its schedule: for a scope when
      // they have none, and for the FLOPs of the launch they execute.
      if (h.module != 0) {
        if (!keep_graph_kernels) {
          if (h.scope == 0) unkept_graph_ps += end - start;
        } else if (graph_kernels.size() < FileAggregator::kMaxGraphKernels) {
          graph_kernels.push_back({start, end, h.name, h.module, dev, h.scope != 0});
        } else {
          ++drops["graph_kernel_limit"];
          if (h.scope == 0) over_limit_graph_ps += end - start;
        }
      }
    }
  }

  void StepsThreadEvent(const Held& h) {
    int64_t start = 0, end = 0;
    if (!Times(h.has_ts, h.ts_ps, h.has_dur, h.dur_exact, h.dur_ps, &start, &end)) return;
    const auto n = ParseInt(names[h.name]);
    steps.push_back(StepSpan{path, n && *n >= 0 ? *n : -1, end - start});
  }

  void OnMetadata(const parse::TraceEvent& e) {
    last_route.valid = false;
    if (e.pid.kind != parse::IdKind::kInt) return;
    const int64_t pid = e.pid.num;
    if (e.name == "process_name") {
      if (jax_pid_device.contains(pid)) return;  // first declaration wins
      if (IsDeviceProcessName(e.args_name)) {
        jax_pid_device.emplace(pid, NewDevice(std::string(e.args_name)));
      } else {
        jax_pid_device.emplace(pid, -1);
      }
    } else if (e.name == "thread_name") {
      if (e.tid.kind != parse::IdKind::kInt) return;
      ThreadKind k = ThreadKind::kOther;
      if (e.args_name.starts_with("Stream #")) {
        k = ThreadKind::kStream;
      } else if (e.args_name == "Steps") {
        k = ThreadKind::kSteps;
      } else if (e.args_name == "XLA Ops") {
        k = ThreadKind::kXlaOps;
      }
      jax_threads.emplace(std::pair{pid, e.tid.num}, k);
    }
  }

  // The device ordinal of a Kineto GPU event: args.device, else an integer pid.
  std::optional<int64_t> KinetoOrdinal(const parse::TraceEvent& e) {
    if (e.has_args_device) return e.args_device;
    if (e.pid.kind == parse::IdKind::kInt) return e.pid.num;
    ++drops["no_device"];
    return std::nullopt;
  }

  // A gpu_user_annotation range: a region for the kernels inside it. Step
  // markers (ProfilerStep#N) are steps, not model regions.
  void OnAnnotation(const parse::TraceEvent& e) {
    if (e.name.starts_with("ProfilerStep#")) return;
    const auto ordinal = KinetoOrdinal(e);
    if (!ordinal) return;
    int64_t start = 0, end = 0;
    if (!Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
    if (annotation_count >= FileAggregator::kMaxAnnotations) {
      ++drops["annotation_limit"];
      return;
    }
    ++annotation_count;
    devices[static_cast<size_t>(KinetoDevice(*ordinal))].annotations.push_back(
        Annotation{start, end, ScopeId(AnnotationRegion(e.name)) - 1});
  }

  void OnKineto(const parse::TraceEvent& e) {
    const bool kernel = IsKinetoKernelCat(e.cat);
    const bool memop = !kernel && IsKinetoMemopCat(e.cat);
    if (e.cat == "gpu_user_annotation") {
      OnAnnotation(e);
      return;
    }
    if (!kernel && !memop) {
      if (e.has_args_external_id && e.cat == "cpu_op") OnOperator(e);
      // record_param_comms: the collective metadata of the kernels it launched.
      if (e.has_args_external_id && !e.args_collective.empty() &&
          !collective_ops.Add(e.args_external_id, KinetoCall(e))) {
        ++drops["collective_op_limit"];
      }
      if (e.name.starts_with("ProfilerStep#")) {
        int64_t start = 0, end = 0;
        if (!Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
        const auto n = ParseInt(e.name.substr(13));
        steps.push_back(StepSpan{path, n && *n >= 0 ? *n : -1, end - start});
      }
      return;
    }
    const auto ordinal = KinetoOrdinal(e);
    if (!ordinal) return;
    int64_t stream = -1;
    if (e.has_args_stream) {
      stream = e.args_stream;
    } else if (e.tid.kind == parse::IdKind::kInt) {
      stream = e.tid.num;
    } else if (e.tid.kind == parse::IdKind::kString && e.tid.str.starts_with("stream ")) {
      stream = ParseInt(e.tid.str.substr(7)).value_or(-1);
    }
    int64_t start = 0, end = 0;
    if (!Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
    const int dev = KinetoDevice(*ordinal);
    if (memop) {
      AddMemop(dev, start, end);
    } else {
      const uint32_t name = Intern(e.name);
      CollectiveCall call = KinetoCall(e);
      if (!call.kind && e.has_args_external_id) {
        if (const CollectiveCall* op = collective_ops.Find(e.args_external_id)) call = *op;
      }
      AddKernel(dev, stream, name, start, end, &call);
      if (e.has_args_external_id) {
        if (kernel_links.size() < FileAggregator::kMaxFlopLinks) {
          kernel_links.push_back({e.args_external_id, end - start, name});
        } else {
          ++drops["flop_link_limit"];
        }
      }
    }
  }

  static CollectiveCall KinetoCall(const parse::TraceEvent& e) {
    return KinetoCollectiveCall(e.args_collective, e.args_dtype, e.args_in_nelems,
                                e.args_out_nelems, e.args_group_size, e.args_pg_desc,
                                e.args_pg_ranks);
  }

  // A Kineto operator whose FLOPs are counted (flops.h); the kernels it
  // launched carry its External id.
  void OnOperator(const parse::TraceEvent& e) {
    if (!TorchOpKind(e.name)) return;
    auto f = TorchOpFlops(e.name, op_shapes.Read(e.args_input_dims, e.args_concrete_inputs));
    if (!f) return;
    if (flop_ops.size() >= FileAggregator::kMaxFlopLinks) {
      ++drops["flop_op_limit"];
      return;
    }
    flop_ops[e.args_external_id] = *f;
  }

  // Joins operators and kernels: each operator's FLOPs once, with its
  // kernels' time; its family is that of its longest kernel.
  void CountFlops(const std::vector<FamilyId>& family, FileStats& out) {
    if (flop_ops.empty() || kernel_links.empty()) return;
    std::sort(
        kernel_links.begin(), kernel_links.end(),
        [](const KernelLink& a, const KernelLink& b) { return a.external_id < b.external_id; });
    std::map<FamilyId, FlopStats::Family> by_family;
    for (size_t i = 0; i < kernel_links.size();) {
      size_t end = i;
      int64_t ps = 0, longest = -1;
      uint32_t longest_name = 0;
      for (; end < kernel_links.size() &&
             kernel_links[end].external_id == kernel_links[i].external_id;
           ++end) {
        ps += kernel_links[end].ps;
        if (kernel_links[end].ps > longest) {
          longest = kernel_links[end].ps;
          longest_name = kernel_links[end].name;
        }
      }
      auto op = flop_ops.find(kernel_links[i].external_id);
      i = end;
      if (op == flop_ops.end()) continue;
      if (!op->second.known) {
        ++out.flops.unknown_ops;
        out.flops.unknown_kernel_ps += ps;
        continue;
      }
      const auto k = static_cast<size_t>(op->second.kind);
      out.flops.flops[k] += static_cast<double>(op->second.flops);
      out.flops.kernel_ps[k] += ps;
      FlopStats::Family& f = by_family[family[longest_name]];
      f.flops += static_cast<double>(op->second.flops);
      f.kernel_ps += ps;
    }
    for (auto& [id, f] : by_family) out.flop_families.emplace_back(id, std::move(f));
  }

  int NsysDevice(int64_t pid, int64_t device_id) {
    auto [it, added] = nsys_devices.try_emplace({pid, device_id}, 0);
    if (added) {
      it->second = NewDevice("pid " + std::to_string(pid) + " GPU " + std::to_string(device_id));
      devices.back().pid = pid;
      devices.back().device_id = device_id;
    }
    return it->second;
  }

  void OnNsys(const parse::TraceEvent& e) {
    int64_t start = 0, end = 0;
    if (!Times(e.has_ts, e.ts_ps, e.has_dur, e.dur_exact, e.dur_ps, &start, &end)) return;
    if (e.cat == parse::kNsysStepCat) {
      const auto n = ParseInt(e.name);
      steps.push_back(StepSpan{path, n && *n >= 0 ? *n : -1, end - start});
      return;
    }
    const int dev = NsysDevice(e.pid.num, e.args_device);
    if (e.cat == parse::kNsysMemopCat) {
      AddMemop(dev, start, end);
    } else {
      const CollectiveCall call = KinetoCall(e);  // the NCCL NVTX range it was launched in
      AddKernel(dev, e.tid.num, Intern(e.name), start, end, &call);
    }
  }

  // The one decision on a JAX complete event of (pid, tid), from the metadata
  // seen so far: device work on *dev (kStream), a step marker (kSteps),
  // neither (kIgnore), or not known yet (kHold: a thread or process not
  // declared yet).
  enum class Route : uint8_t { kIgnore, kHold, kSteps, kStream };
  Route RouteOf(int64_t pid, int64_t tid, int* dev) const {
    auto t = jax_threads.find({pid, tid});
    if (t == jax_threads.end()) return Route::kHold;
    if (t->second == ThreadKind::kSteps) return Route::kSteps;
    if (t->second != ThreadKind::kStream && t->second != ThreadKind::kXlaOps) {
      return Route::kIgnore;  // host, overhead or annotation thread
    }
    auto p = jax_pid_device.find(pid);
    if (p == jax_pid_device.end()) return Route::kHold;
    if (p->second < 0) return Route::kIgnore;  // a host process
    if (t->second == ThreadKind::kXlaOps &&
        !devices[static_cast<size_t>(p->second)].name.starts_with("/device:TPU:")) {
      return Route::kIgnore;
    }
    *dev = p->second;
    return Route::kStream;
  }
  bool IsHostPid(int64_t pid) const {
    auto p = jax_pid_device.find(pid);
    return p != jax_pid_device.end() && p->second < 0;
  }
  // Applies a decided route to one event (kIgnore and kHold: nothing).
  void Take(Route route, int dev, int64_t tid, const Held& h) {
    if (route == Route::kSteps) StepsThreadEvent(h);
    if (route == Route::kStream) JaxStreamEvent(dev, tid, h);
  }
  // JAX writes a thread's events together, so OnJaxX keeps the last route;
  // any metadata event clears it.
  struct LastRoute {
    bool valid = false;
    int64_t pid = 0, tid = 0;
    Route route = Route::kIgnore;
    int dev = -1;
  } last_route;

  void OnJaxX(const parse::TraceEvent& e) {
    if (e.pid.kind != parse::IdKind::kInt || e.tid.kind != parse::IdKind::kInt) return;
    const int64_t pid = e.pid.num, tid = e.tid.num;
    LastRoute& r = last_route;
    if (!r.valid || r.pid != pid || r.tid != tid) {
      r = LastRoute{true, pid, tid, Route::kIgnore, -1};
      r.route = RouteOf(pid, tid, &r.dev);
      // A host process's events are never device work, so they are not held
      // for a thread declared later (only a Steps thread would count there).
      if (r.route == Route::kHold && IsHostPid(pid)) r.route = Route::kIgnore;
    }
    if (r.route == Route::kIgnore) return;
    uint8_t collective = 0;
    uint32_t hlo_op = 0;
    if (!e.args_hlo_op.empty()) {
      if (auto k = CollectiveKindOfHloOp(e.args_hlo_op)) {
        collective = 1 + static_cast<uint8_t>(*k);
        bool added;
        hlo_op = hlo_ops.Intern(e.args_hlo_op, added) + 1;
      }
    }
    Held h{Intern(e.name),
           ScopeId(e.args_name),
           ModuleId(e.args_hlo_module),
           collective,
           hlo_op,
           e.has_ts,
           e.has_dur,
           e.dur_exact,
           e.ts_ps,
           e.dur_ps};
    if (r.route != Route::kHold) {
      Take(r.route, r.dev, tid, h);
      return;
    }
    if (saw_cat) return;  // a Kineto file: cat-less events are never kernels
    if (held_count >= FileAggregator::kMaxHeldEvents) {
      ++drops["no_metadata_held_limit"];
      return;
    }
    ++held_count;
    held[{pid, tid}].push_back(h);
  }

  // FLOPs of one execution of launches (graph_regions.h) and its kernels'
  // time: by kind when one kind did them, else in the total only.
  void CountExecution(const parse::HloModuleSchedule& schedule, const GraphPlacement::Execution& e,
                      size_t offset, const std::vector<FamilyId>& family, FileStats& out,
                      std::map<FamilyId, FlopStats::Family>& by_family) {
    std::array<double, 2> flops{};
    bool any = false, unknown = false;
    auto [counted, added] = launch_flops.try_emplace(&schedule);
    if (added) {
      for (const parse::HloLaunch& launch : schedule.launches) {
        counted->second.push_back(HloLaunchFlops(launch).value_or(-1));
      }
    }
    for (size_t l : e.launches) {
      const parse::HloLaunch& launch = schedule.launches[l];
      if (launch.flop_kind == parse::HloLaunch::Flops::kNone) continue;
      any = true;
      const int64_t launch_flops_count = counted->second[l];
      if (launch_flops_count < 0) {
        unknown = true;
        continue;
      }
      flops[launch.flop_kind == parse::HloLaunch::Flops::kMatmul ? 0 : 1] +=
          static_cast<double>(launch_flops_count);
    }
    if (!any) return;
    int64_t ps = 0, longest = -1;
    uint32_t longest_name = 0;
    for (size_t k = offset + e.first_kernel; k < offset + e.end_kernel; ++k) {
      const GraphKernel& gk = graph_kernels[k];
      ps += gk.end - gk.start;
      if (gk.end - gk.start > longest) {
        longest = gk.end - gk.start;
        longest_name = gk.name;
      }
    }
    if (unknown) {
      ++out.flops.unknown_ops;
      out.flops.unknown_kernel_ps += ps;
      return;
    }
    out.flops.flops[0] += flops[0];
    out.flops.flops[1] += flops[1];
    if (flops[0] > 0 && flops[1] > 0) {
      out.flops.mixed_kernel_ps += ps;
    } else {
      out.flops.kernel_ps[flops[0] > 0 ? 0 : 1] += ps;
    }
    // Every counted execution in one family, so the families sum to the total.
    FlopStats::Family& f = by_family[family[longest_name]];
    f.flops += flops[0] + flops[1];
    f.kernel_ps += ps;
  }

  // Gives CUDA-graph kernels the scopes their module's schedule implies
  // (added to scope_name_ps like args.name scopes).
  void PlaceGraphKernels(GraphRegionStats& g, const std::vector<FamilyId>& family, FileStats& out) {
    g.kernel_ps = unkept_graph_ps + over_limit_graph_ps;
    for (const GraphKernel& k : graph_kernels) g.kernel_ps += k.scoped ? 0 : k.end - k.start;
    if (g.kernel_ps == 0 && graph_kernels.empty()) return;
    if (over_limit_graph_ps > 0) {
      g.unplaced = "more than " + std::to_string(FileAggregator::kMaxGraphKernels) +
                   " kernels without a scope in the file: the later ones are not placed";
    }
    if (!hlo || unkept_graph_ps > 0) {
      if (g.kernel_ps > 0) {
        g.unplaced = hlo_missing.empty() ? "no HLO modules for this file" : hlo_missing;
      }
      return;
    }
    std::map<FamilyId, FlopStats::Family> flop_by_family;
    std::stable_sort(graph_kernels.begin(), graph_kernels.end(),
                     [](const GraphKernel& a, const GraphKernel& b) {
                       if (a.dev != b.dev) return a.dev < b.dev;
                       if (a.module != b.module) return a.module < b.module;
                       return a.start < b.start;
                     });
    std::vector<std::string_view> group_names;
    for (size_t begin = 0; begin < graph_kernels.size();) {
      size_t end = begin;
      while (end < graph_kernels.size() && graph_kernels[end].dev == graph_kernels[begin].dev &&
             graph_kernels[end].module == graph_kernels[begin].module) {
        ++end;
      }
      const std::string& module = modules[graph_kernels[begin].module - 1];
      const parse::HloModuleSchedule* schedule = hlo->Find(module);
      if (schedule == nullptr) {
        const bool unscoped = std::any_of(graph_kernels.begin() + static_cast<ptrdiff_t>(begin),
                                          graph_kernels.begin() + static_cast<ptrdiff_t>(end),
                                          [](const GraphKernel& k) { return !k.scoped; });
        if (unscoped && g.unplaced.empty()) {
          auto skipped = hlo->too_complex.find(module);
          g.unplaced = skipped != hlo->too_complex.end()
                           ? "module " + module + " skipped: " + skipped->second
                           : "module " + module + " is not among the HLO modules";
        }
        begin = end;
        continue;
      }
      group_names.clear();
      for (size_t i = begin; i < end; ++i) group_names.push_back(names[graph_kernels[i].name]);
      const GraphPlacement placed = aggregate::PlaceGraphKernels(*schedule, group_names);
      if (placed.gaps_over_budget && g.unplaced.empty()) {
        g.unplaced = "module " + module +
                     ": too_complex: kernels between its fusions' kernels wrap around the "
                     "schedule too often to place them all";
      }
      for (const GraphPlacement::Execution& e : placed.executions) {
        CountExecution(*schedule, e, begin, family, out, flop_by_family);
      }
      for (size_t i = begin; i < end; ++i) {
        const GraphKernel& gk = graph_kernels[i];
        const int32_t at = placed.scope[i - begin];
        if (at < 0 || gk.scoped) continue;
        const size_t idx = static_cast<size_t>(at);
        const std::string& scope = idx < schedule->scopes.size()
                                       ? schedule->scopes[idx]
                                       : placed.shared_scopes[idx - schedule->scopes.size()];
        const uint32_t sid = ScopeId(scope);
        if (sid == 0) continue;
        const GraphKernel& k = graph_kernels[i];
        scope_name_ps[(uint64_t{sid} << 32) | k.name] += k.end - k.start;
        g.placed_ps += k.end - k.start;
      }
      begin = end;
    }
    for (auto& [id, f] : flop_by_family) out.flop_families.emplace_back(id, std::move(f));
    std::vector<GraphKernel>().swap(graph_kernels);
  }

  void ResolveHeld() {
    if (saw_cat) held.clear();
    for (auto& [key, events] : held) {
      for (const Held& h : events) {
        int dev = -1;
        const Route route = RouteOf(key.first, key.second, &dev);
        if (route == Route::kHold) ++drops["no_metadata"];
        Take(route, dev, key.second, h);
      }
    }
    held.clear();
    held_count = 0;
  }
};

FileAggregator::FileAggregator(std::string path, size_t interval_budget, std::string spill_dir)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = std::move(path);
  impl_->interval_budget = std::max<size_t>(1, interval_budget);
  impl_->spill_dir = std::move(spill_dir);
}

uint64_t FileAggregator::SpilledIntervals() const { return impl_->spilled_intervals; }

void FileAggregator::Park() { impl_->MaybeSpill(kParkedIntervals); }

void FileAggregator::SetBudget(FileBudget* budget) { impl_->budget = budget; }
FileAggregator::~FileAggregator() = default;

void FileAggregator::OnEvent(const parse::TraceEvent& e) {
  if (e.ph == 'M') {
    impl_->OnMetadata(e);
    return;
  }
  if (e.ph != 'X') return;
  if (!e.has_name || e.name.empty()) {
    ++impl_->drops["empty_name"];  // counted: a kernel must not vanish silently
    return;
  }
  if (!e.cat.empty()) {
    impl_->saw_cat = true;
    if (e.cat == parse::kNsysKernelCat || e.cat == parse::kNsysMemopCat ||
        e.cat == parse::kNsysStepCat) {
      impl_->OnNsys(e);
    } else {
      impl_->OnKineto(e);
    }
  } else {
    impl_->OnJaxX(e);
  }
}

bool FileAggregator::HasGraphKernels() const {
  return !impl_->graph_kernels.empty() || impl_->unkept_graph_ps > 0 || impl_->hlo_collectives;
}

void FileAggregator::KeepGraphKernels(bool keep) { impl_->keep_graph_kernels = keep; }

void FileAggregator::SetHloModules(std::shared_ptr<const parse::HloIndex> index,
                                   std::string missing) {
  impl_->hlo = std::move(index);
  impl_->hlo_missing = std::move(missing);
}

std::vector<std::string> FileAggregator::KernelNames(size_t limit) const {
  std::vector<std::string> out;
  for (size_t i = 0; i < impl_->names.size() && out.size() < limit; ++i) {
    if (impl_->name_is_kernel[i]) out.push_back(impl_->names[i]);
  }
  return out;
}

std::shared_ptr<FileStats> FileAggregator::Finish(const parse::ParseSummary& summary, bool partial,
                                                  const classify::Classifier& classifier,
                                                  int threads) {
  Impl& im = *impl_;
  im.ResolveHeld();
  im.SizeHloCollectives();
  auto out = std::make_shared<FileStats>();
  FileSummary& fs = out->summary;
  fs.path = im.path;
  fs.schema = summary.schema;
  fs.events = summary.events;
  fs.suspected_truncated = summary.suspected_truncated;
  fs.partial = partial;
  fs.drops = summary.drops;
  for (const auto& [k, v] : im.drops) fs.drops[k] += v;

  // Classify each kernel name once.
  constexpr FamilyId kUnset = std::numeric_limits<FamilyId>::max();
  std::vector<FamilyId> family(im.names.size(), kUnset);
  std::vector<int64_t> name_launches(im.names.size(), 0), name_ps(im.names.size(), 0);
  std::vector<int64_t> name_exclusive(im.names.size(), 0), name_idle_before(im.names.size(), 0);
  for (size_t i = 0; i < im.names.size(); ++i) {
    if (im.name_is_kernel[i]) family[i] = classifier.Classify(im.names[i]);
  }

  for (const Impl::Device& d : im.devices) {
    for (const auto& [name, n] : d.by_name) {
      name_launches[name] += n.launches;
      name_ps[name] += n.total_ps;
    }
  }

  // One device's figures; devices are independent, so they may run on
  // several threads (spilled runs are read, and merge passes written into
  // reserved ranges, with positioned I/O on the shared spill file).
  struct DeviceResult {
    bool gpu = false;
    bool spill_error = false;
    DeviceSummary ds;
    std::vector<int64_t> exclusive, idle_before;  // by by_name index
    std::map<uint32_t, int64_t> annotation_ps;    // kernel time by annotation (scope id - 1)
    bool annotated = false;                       // the device had annotations
    CollectiveStats collectives;
  };
  std::vector<DeviceResult> results(im.devices.size());
  auto finish_device = [&](size_t index) {
    Impl::Device& d = im.devices[index];
    DeviceResult& result = results[index];
    DeviceSummary& ds = result.ds;
    ds.file = im.path;
    ds.device = d.name;
    ds.memops = d.memops;
    ds.memop_ps = d.memop_ps;
    ds.pid = d.pid;
    ds.device_id = d.device_id;
    if (d.pid) {
      auto rank = summary.process_ranks.find(*d.pid);
      if (rank != summary.process_ranks.end()) ds.rank = rank->second;
    }
    int64_t first = std::numeric_limits<int64_t>::max();
    int64_t last = std::numeric_limits<int64_t>::min();
    std::vector<uint8_t> memory_name(im.names.size(), 0);
    std::vector<uint8_t> slot_is_comm(d.by_name.size(), 0), slot_is_memory(d.by_name.size(), 0);
    std::vector<uint8_t> slot_collective(d.by_name.size(), 0);  // 1 + CollectiveKind
    std::vector<TaggedRun> runs;
    for (size_t slot = 0; slot < d.by_name.size(); ++slot) {
      auto& [name, n] = d.by_name[slot];
      const FamilyKind kind = classifier.KindOf(family[name]);
      if (kind == FamilyKind::kMemory) {
        memory_name[name] = 1;
        slot_is_memory[slot] = 1;
        ds.memops += n.launches;
        ds.memop_ps += n.total_ps;
        continue;
      }
      slot_is_comm[slot] = kind == FamilyKind::kComm ? 1 : 0;
      ds.kernels += n.launches;
      ds.kernel_ps += n.total_ps;
      first = std::min(first, n.min_start);
      last = std::max(last, n.max_end);
      if (kind == FamilyKind::kComm) {
        ds.comm_ps += n.total_ps;
        // Kind from the call's metadata, else the kernel name, else other.
        const CollectiveKind ck =
            n.collective ? n.collective->kind
                         : CollectiveKindOfKernel(im.names[name]).value_or(CollectiveKind::kOther);
        slot_collective[slot] = 1 + static_cast<uint8_t>(ck);
        CollectiveSums& sums = result.collectives[ck];
        sums.calls += n.launches;
        sums.kernel_ps += n.total_ps;
        if (n.collective) sums.Merge(n.collective->sums);
      }
      n.intervals.Sort();
      runs.push_back(
          TaggedRun{RunCursor::Memory(&n.intervals.intervals()), static_cast<uint32_t>(slot)});
    }
    for (const auto& [slot, run] : d.spilled) {
      if (slot_is_memory[slot]) continue;
      runs.push_back(TaggedRun{RunCursor::File(im.spill.get(), run, kMergeBufferIntervals), slot});
    }
    if (ds.kernels == 0) return;  // not a GPU: no kernel on it
    result.gpu = true;
    std::set<uint32_t> kernel_streams;
    for (uint64_t key : d.stream_names) {
      if (!memory_name[key & 0xffffffffu]) kernel_streams.insert(static_cast<uint32_t>(key >> 32));
    }
    ds.streams = static_cast<int>(kernel_streams.size());
    ds.span_ps = last - first;
    MergeStream merged(std::move(runs), im.spill.get(), kMergeFanIn, kMergeBufferIntervals);
    DeviceSweep sweep(std::move(slot_is_comm), [&](uint32_t a, uint32_t b) {
      return im.names[d.by_name[a].first] < im.names[d.by_name[b].first];
    });
    sweep.SetCollectiveKinds(std::move(slot_collective));
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
  };
  const size_t workers = std::min<size_t>(std::max(1, threads), im.devices.size());
  if (workers <= 1) {
    for (size_t i = 0; i < im.devices.size(); ++i) finish_device(i);
  } else {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < im.devices.size(); i = next++) finish_device(i);
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }
  std::map<uint32_t, int64_t> annotation_ps;
  for (size_t i = 0; i < results.size(); ++i) {
    DeviceResult& r = results[i];
    if (r.spill_error) ++fs.drops["interval_spill_error"];
    out->annotated = out->annotated || r.annotated;
    for (const auto& [id, ps] : r.annotation_ps) annotation_ps[id] += ps;
    if (!r.gpu) continue;
    const auto& by_name = im.devices[i].by_name;
    for (size_t slot = 0; slot < r.exclusive.size(); ++slot) {
      name_exclusive[by_name[slot].first] += r.exclusive[slot];
      name_idle_before[by_name[slot].first] += r.idle_before[slot];
    }
    out->devices.push_back(std::move(r.ds));
    out->collectives.Merge(r.collectives);
  }
  fs.gpus = static_cast<int>(out->devices.size());
  for (size_t i = 0; i < im.names.size(); ++i) {
    if (!im.name_is_kernel[i]) continue;
    out->kernels.push_back(FileStats::Name{im.names[i], family[i], name_launches[i], name_ps[i],
                                           name_exclusive[i], name_idle_before[i]});
  }
  out->steps = std::move(im.steps);
  im.PlaceGraphKernels(out->graph, family, *out);
  im.CountFlops(family, *out);
  if (!summary.device_names.empty()) out->flops.device_name = summary.device_names.front();
  std::map<uint32_t, int64_t> scope_ps;  // by scope id, memory kernels left out
  for (const auto& [key, ps] : im.scope_name_ps) {
    const uint32_t name = static_cast<uint32_t>(key & 0xffffffffu);
    if (classifier.KindOf(family[name]) == FamilyKind::kMemory) continue;
    scope_ps[static_cast<uint32_t>(key >> 32)] += ps;
  }
  for (const auto& [id, ps] : scope_ps) out->scopes.push_back({im.scopes[id - 1], ps});
  for (const auto& [id, ps] : annotation_ps) out->annotations.push_back({im.scopes[id], ps});
  // Free per-file state: the aggregator is done.
  const size_t budget = im.interval_budget;
  std::string spill_dir = std::move(im.spill_dir);
  impl_ = std::make_unique<Impl>();
  impl_->path = fs.path;
  impl_->interval_budget = budget;
  impl_->spill_dir = std::move(spill_dir);
  return out;
}

WindowStats MergeWindow(const std::vector<std::shared_ptr<FileStats>>& files,
                        const classify::Classifier& classifier, const AggregateOptions& options) {
  WindowStats w;
  w.rule_set = classifier.RuleSetName();
  w.profile_steps = options.profile_steps;
  const auto& fam_names = classifier.FamilyNames();
  w.families.resize(fam_names.size());
  std::vector<std::unordered_map<std::string_view, size_t>> index(fam_names.size());
  std::vector<std::vector<KernelSummary>> kernels(fam_names.size());
  for (size_t f = 0; f < fam_names.size(); ++f) {
    w.families[f].family = fam_names[f];
    w.families[f].kind = classifier.KindOf(static_cast<FamilyId>(f));
  }
  std::set<std::string> ts_dirs;
  std::vector<std::pair<size_t, DeviceSummary>> devices;
  std::map<std::string, int64_t> region_ps;
  std::map<FamilyId, FlopStats::Family> flop_families;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const FileStats* fs = files[fi].get();
    if (fs == nullptr) continue;
    w.files.push_back(fs->summary);
    w.events += fs->summary.events;
    w.truncated = w.truncated || fs->summary.suspected_truncated || fs->summary.partial;
    const std::filesystem::path parent = std::filesystem::path(fs->summary.path).parent_path();
    // A file directly in a <ts> dir names it; the profile layout owns the test.
    if (watch::ParseTimestampDirName(parent.filename().string())) ts_dirs.insert(parent.string());
    for (const auto& d : fs->devices) devices.emplace_back(fi, d);
    for (const auto& s : fs->steps) w.trace_steps.push_back(s);
    for (const auto& sc : fs->scopes) {
      w.has_regions = true;
      std::string region = RegionOfScope(sc.scope, options.region_depth);
      if (!region.empty()) region_ps[std::move(region)] += sc.kernel_ps;
    }
    w.has_regions = w.has_regions || fs->annotated;
    for (const auto& a : fs->annotations) region_ps[a.scope] += a.kernel_ps;
    for (size_t k = 0; k < w.flops.flops.size(); ++k) {
      w.flops.flops[k] += fs->flops.flops[k];
      w.flops.kernel_ps[k] += fs->flops.kernel_ps[k];
    }
    w.flops.mixed_kernel_ps += fs->flops.mixed_kernel_ps;
    w.flops.unknown_ops += fs->flops.unknown_ops;
    w.flops.unknown_kernel_ps += fs->flops.unknown_kernel_ps;
    for (const auto& [id, f] : fs->flop_families) {
      FlopStats::Family& to = flop_families[id];
      to.family = fam_names[id];
      to.flops += f.flops;
      to.kernel_ps += f.kernel_ps;
    }
    if (w.flops.device_name.empty()) w.flops.device_name = fs->flops.device_name;
    w.collectives.Merge(fs->collectives);
    w.graph.kernel_ps += fs->graph.kernel_ps;
    w.graph.placed_ps += fs->graph.placed_ps;
    if (w.graph.unplaced.empty()) w.graph.unplaced = fs->graph.unplaced;
    for (const auto& k : fs->kernels) {
      // REQUIRES: Finish used the same classifier; ids beyond it are reclassified.
      FamilyId id = k.family < fam_names.size() ? k.family : classifier.Classify(k.name);
      FamilySummary& fam = w.families[id];
      fam.launches += k.launches;
      fam.total_ps += k.total_ps;
      fam.exclusive_ps += k.exclusive_ps;
      fam.idle_before_ps += k.idle_before_ps;
      auto [it, inserted] = index[id].emplace(k.name, kernels[id].size());
      if (inserted) kernels[id].push_back(KernelSummary{k.name, 0, 0, 0, 0});
      KernelSummary& ks = kernels[id][it->second];
      ks.launches += k.launches;
      ks.total_ps += k.total_ps;
      ks.exclusive_ps += k.exclusive_ps;
      ks.idle_before_ps += k.idle_before_ps;
    }
  }
  // The diagnosis lists rank every kernel of every family (memory excluded).
  std::vector<RankedKernel> by_exclusive, by_idle_before;
  for (size_t f = 0; f < fam_names.size(); ++f) {
    if (w.families[f].kind == FamilyKind::kMemory) continue;
    for (const KernelSummary& k : kernels[f]) {
      if (k.exclusive_ps > 0) by_exclusive.push_back({k.name, fam_names[f], k.exclusive_ps});
      if (k.idle_before_ps > 0) by_idle_before.push_back({k.name, fam_names[f], k.idle_before_ps});
    }
  }
  w.top_exclusive = TopRanked(std::move(by_exclusive), options.top_kernels);
  for (size_t f = 0; f < fam_names.size(); ++f) {
    const FamilyKind kind = w.families[f].kind;
    if (kind == FamilyKind::kMemory || kind == FamilyKind::kMath) continue;
    for (const KernelSummary& k : kernels[f]) {
      if (k.launches > 0 && 2 * k.exclusive_ps >= k.total_ps &&
          k.exclusive_ps >= kSerialCallPs * k.launches) {
        w.serial_kernels.push_back({k.name, fam_names[f], k.launches, k.total_ps, k.exclusive_ps});
      }
    }
  }
  std::sort(w.serial_kernels.begin(), w.serial_kernels.end(),
            [](const SerialKernel& a, const SerialKernel& b) {
              if (a.exclusive_ps != b.exclusive_ps) return a.exclusive_ps > b.exclusive_ps;
              return a.name < b.name;
            });
  if (options.top_kernels > 0 && w.serial_kernels.size() > options.top_kernels) {
    w.serial_kernels.resize(options.top_kernels);
  }
  w.top_idle_before = TopRanked(std::move(by_idle_before), options.top_kernels);
  for (size_t f = 0; f < fam_names.size(); ++f) {
    FamilySummary& fam = w.families[f];
    auto& ks = kernels[f];
    fam.distinct_kernels = static_cast<int64_t>(ks.size());
    auto by_time = [](const KernelSummary& a, const KernelSummary& b) {
      if (a.total_ps != b.total_ps) return a.total_ps > b.total_ps;
      return a.name < b.name;
    };
    const size_t keep =
        options.top_kernels == 0 ? ks.size() : std::min(options.top_kernels, ks.size());
    std::partial_sort(ks.begin(), ks.begin() + static_cast<ptrdiff_t>(keep), ks.end(), by_time);
    ks.resize(keep);
    fam.top_kernels = std::move(ks);
    if (fam.kind != FamilyKind::kMemory) {
      w.total_kernel_ps += fam.total_ps;
      w.total_launches += fam.launches;
    }
  }
  std::stable_sort(devices.begin(), devices.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return NaturalLess(a.second.device, b.second.device);
  });
  for (auto& [fi, d] : devices) w.devices.push_back(std::move(d));
  w.timestamp_dirs.assign(ts_dirs.begin(), ts_dirs.end());
  for (auto& [id, f] : flop_families) w.flops.families.push_back(std::move(f));
  if (options.peak_flops > 0) {
    w.flops.peak_per_second = options.peak_flops;
    w.flops.peak_source = "--peak-flops";
  } else if (auto peak = DensePeakFlops(w.flops.device_name)) {
    w.flops.peak_per_second = *peak;
    w.flops.peak_source = "datasheet";
  }
  int64_t region_total_ps = 0;
  for (const auto& [region, ps] : region_ps) {
    w.regions.push_back({region, ps});
    region_total_ps += ps;
  }
  w.has_regions = w.has_regions || w.graph.kernel_ps > 0;
  w.region_coverage = w.total_kernel_ps > 0 ? static_cast<double>(region_total_ps) /
                                                  static_cast<double>(w.total_kernel_ps)
                                            : 0.0;
  std::stable_sort(
      w.regions.begin(), w.regions.end(),
      [](const RegionSummary& a, const RegionSummary& b) { return a.kernel_ps > b.kernel_ps; });
  if (options.top_regions > 0 && w.regions.size() > options.top_regions) {
    for (size_t i = options.top_regions; i < w.regions.size(); ++i) {
      w.regions_other_ps += w.regions[i].kernel_ps;
    }
    w.regions.resize(options.top_regions);
  }
  if (options.profile_steps_from_nvtx) {
    std::set<int64_t> nvtx_steps;
    for (const StepSpan& s : w.trace_steps) {
      if (s.step >= 0) nvtx_steps.insert(s.step);
    }
    const bool nsys = std::any_of(w.files.begin(), w.files.end(), [](const FileSummary& f) {
      return f.schema == parse::TraceSchema::kNsys;
    });
    if (nsys && !nvtx_steps.empty()) w.profile_steps = static_cast<int>(nvtx_steps.size());
  }
  const int nfiles = static_cast<int>(w.files.size());
  // A process per file, except in nsys exports: a file per node holding
  // several processes, told apart by the devices' pids.
  std::set<std::pair<std::string, int64_t>> nsys_processes;
  int processes = 0;
  for (const FileSummary& f : w.files) processes += f.schema == parse::TraceSchema::kNsys ? 0 : 1;
  for (const DeviceSummary& d : w.devices) {
    if (d.pid) nsys_processes.emplace(d.file, *d.pid);
  }
  processes += static_cast<int>(nsys_processes.size());
  w.launcher_mode = LauncherModeFor(w.gpus(), processes);
  w.gpus_per_file = nfiles > 0 ? static_cast<double>(w.gpus()) / nfiles : 0.0;
  return w;
}

}  // namespace profwatch::aggregate
