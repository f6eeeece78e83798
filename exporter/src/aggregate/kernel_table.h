// Internal to aggregate/. KernelTable: the per-device kernel table of one
// file that every format handler (kineto_events.h, jax_events.h,
// nsys_events.h) fills, and that FileAggregator::Finish reduces.
//
// Kernel events are kept per (device, kernel name): launch count, summed
// duration, first start / last end, and an IntervalList (16 B per
// interval). Keeping them per name lets classification wait until Finish
// (for `--rules auto`) while still splitting comm from compute and dropping
// kMemory kernels from the device figures there. Beyond the interval budget
// the lists are sorted in place and written as sorted runs to a spill file;
// FinishDevices merges memory lists and spilled runs in start order into one
// DeviceSweep per device (device_sweep.h), so memory stays bounded and the
// integer results are the same.
//
// Bounded where read (docs/security.md, "What a window keeps"): names and
// scopes through the window's WindowNames (name_table.h), a name cut or
// over a cap judged on its whole text at intake (NameTraits) and, over a
// cap, kept under an "other" entry with its time; devices, steps, streams
// and (scope, name) pairs by the kMax* constants below. Each event cut or
// dropped is counted in `drops` by reason.
//
// One owner thread while events arrive; FinishDevices may use several.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "aggregate/collectives.h"
#include "aggregate/interval_spill.h"
#include "aggregate/intervals.h"
#include "aggregate/limits.h"
#include "aggregate/name_table.h"
#include "aggregate/region.h"
#include "aggregate/window_stats.h"
#include "classify/classifier.h"
#include "core/budget.h"
#include "parse/trace_parser.h"

namespace profwatch::aggregate {

// A whole decimal integer (sign allowed), else nullopt.
std::optional<int64_t> ParseInt(std::string_view s);
// The byte count of JAX's memcpy_details ("... size:N ...") or
// Memset_details ("... num_bytes:N ...") text; -1 when it has none.
int64_t MemopBytes(std::string_view details);

// The collective metadata in an event's args: Kineto's collective args,
// or the NCCL NVTX range an nsys kernel was launched in.
CollectiveCall CollectiveCallOf(const parse::TraceEvent& e);

// Hash of an integer pair ((pid, tid), (pid, device)).
struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    return std::hash<int64_t>{}(p.first) * 0x9E3779B97F4A7C15ULL ^ std::hash<int64_t>{}(p.second);
  }
};

struct KernelTable {
  // The entries that keep the time of what is over a cap.
  static constexpr std::string_view kOtherKernelNames = "(other kernel names)";
  static constexpr std::string_view kOtherScopes = "(other scopes)";

  explicit KernelTable(std::shared_ptr<WindowNames> pool)
      : window_names(std::move(pool)), names(window_names.get()), scopes(window_names.get()) {}

  // What a kernel name that was cut or is over a cap is, judged on its whole
  // name when it was read: its family under each of the window's candidate
  // classifiers (WindowNames::candidates) and the collective kind it names.
  struct NameTraits {
    std::vector<classify::FamilyId> family;
    std::optional<CollectiveKind> collective;
  };

  // Kernels of one name whose calls carried collective metadata of one kind
  // (Kineto args, a JAX hlo_op): the kind and their sized figures.
  struct CollectiveSlot {
    CollectiveKind kind = CollectiveKind::kOther;
    CollectiveSums sums;
    // JAX calls sized at Finish from their HLO instruction
    // (GraphKernels::SizeCollectives): (ModuleId << 32 | HloOpId) -> (calls,
    // kernel ps).
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
    bool stream_names_full = false;             // kMaxStreamNames reached
    std::vector<std::pair<uint32_t, SpillFile::Run>> spilled;  // (by_name index, run)
    uint64_t last_stream_name = ~0ULL;
    int64_t memops = 0;
    int64_t memop_ps = 0;
    std::optional<int64_t> pid, device_id;  // nsys devices only
    std::vector<Annotation> annotations;    // PyTorch gpu_user_annotation ranges
  };

  std::string path;
  std::shared_ptr<WindowNames> window_names;  // the pool `names` and `scopes` keep names in
  NameTable names;  // kernel names; the vectors below are indexed by name id
  std::vector<uint8_t> name_is_kernel;
  std::vector<uint8_t>
      name_is_memop;  // JAX stream copies (classify::IsRuntimeMemopName), once per name
  NameTable scopes;   // args.name scopes and annotation regions; ScopeId = index + 1
  std::unordered_map<uint64_t, int64_t> scope_name_ps;  // (scope id << 32 | name) -> ps
  // Kernel names cut or over a cap (by name id): judged on the whole name.
  std::unordered_map<uint32_t, NameTraits> traits;
  // The "other kernel names" entries, one per distinct judgement (the
  // families, memory-op flag and collective kind, as text).
  std::map<std::string, uint32_t, std::less<>> other_names;
  uint32_t other_scope = 0;  // ScopeId of "other scopes"; 0: none yet
  // OtherNameOf's answers by name id (judged once per name).
  std::unordered_map<uint32_t, uint32_t> other_of_name;
  std::vector<Device> devices;
  std::vector<StepSpan> steps;
  std::map<std::string, uint64_t> drops;
  // Memory operations with a byte count: their bytes, number and time.
  double memop_bytes = 0;
  int64_t sized_memops = 0;
  int64_t sized_memop_ps = 0;
  bool hlo_collectives = false;  // some collective call waits for its HLO sizes
  // The trace format's CollectiveSums::sources bit (set by FileAggregator).
  uint8_t source = 0;

  // The spill policy (see the file comment). interval_budget: intervals kept
  // in memory before a spill (FileAggregator sets it, >= 1).
  size_t interval_budget = 1;
  std::string spill_dir = "/tmp";
  size_t adds_since_check = 0;
  std::unique_ptr<SpillFile> spill;
  bool spill_failed = false;  // no (more) spilling: kept in memory instead
  // Why spilling failed when the spill file could not be created or written
  // (not when the file budget stopped it: that error ends the read anyway).
  std::string spill_error;
  FileBudget* budget = nullptr;  // charged per spill write; may be null
  uint64_t spilled_intervals = 0;

  size_t IntervalsInMemory() const;
  // Called every few thousand kernels: keeps the in-memory intervals under
  // the budget. `keep`: the most intervals left in memory without writing
  // them out.
  void MaybeSpill(size_t keep);

  // The id of a kernel name (interned on first sight): a name over
  // max_name_bytes is kept cut ("name_cut"); a new name over the file's or
  // the window's caps gets the "other kernel names" entry of its judgement
  // ("name_limit").
  uint32_t Intern(std::string_view n);
  // The "other kernel names" entry of judgement `t` (made when new).
  uint32_t OtherName(NameTraits t, bool memop);
  // The "other kernel names" entry `name` falls under (judged on its kept
  // name, or on its whole name when it was cut): past the window's
  // (device, name) slots.
  uint32_t OtherNameOf(uint32_t name);
  // Whether device `d` has a slot for `name` (and `call`'s collective kind).
  static bool HasSlot(const Device& d, uint32_t name, const CollectiveCall* call);
  // ScopeId of a scope or region name: index + 1; 0 for the empty name.
  // Cut and capped like kernel names ("scope_cut", "scope_limit"), over a
  // cap the "other scopes" entry.
  uint32_t ScopeId(std::string_view scope);
  // Adds `ps` of kernel `name` to `scope` (!= 0).
  void AddScopeTime(uint32_t scope, uint32_t name, int64_t ps);
  // The family of name `id` under `classifier`: judged at intake when the
  // name was cut or is over a cap (and `classifier` is a candidate), else
  // by its name.
  classify::FamilyId FamilyOf(uint32_t id, const classify::Classifier& classifier) const;
  // The collective kind the name of `id` says (CollectiveKindOfKernel).
  std::optional<CollectiveKind> CollectiveKindOfName(uint32_t id) const;
  // Adds a device named `name` (cut like a name); returns its index, or -1
  // beyond kMaxDevices.
  int NewDevice(std::string_view name);

  // Validates times; returns false (and counts) when the event must be dropped.
  bool Times(bool has_ts, int64_t ts, bool has_dur, bool dur_exact, int64_t dur, int64_t* start,
             int64_t* end);
  // A kernel on device `dev`. `call`: the kernel's collective metadata, when
  // it has a kind; `hlo_op`: (ModuleId << 32 | HloOpId) of a JAX collective
  // call sized at Finish from its HLO instruction (0: none).
  void AddKernel(int dev, int64_t stream, uint32_t name, int64_t start, int64_t end,
                 const CollectiveCall* call = nullptr, uint64_t hlo_op = 0);
  // A memory operation; `bytes` its byte count when the trace gives one (-1: not).
  void AddMemop(int dev, int64_t start, int64_t end, int64_t bytes = -1);
  // A step span; `number` is the step when a non-negative integer, else -1.
  void AddStep(std::string_view number, int64_t start, int64_t end);

  // One device's figures from FinishDevices.
  struct DeviceResult {
    bool gpu = false;
    bool spill_error = false;
    DeviceSummary ds;
    std::vector<int64_t> exclusive, idle_before;  // by by_name index
    std::map<uint32_t, int64_t> annotation_ps;    // kernel time by annotation (scope id - 1)
    bool annotated = false;                       // the device had annotations
    CollectiveStats collectives;
  };
  // Reduces every device (by index) to its figures; `family` by name id.
  // Devices are independent, so they run on up to `threads` threads
  // (spilled runs are read, and merge passes written into reserved ranges,
  // with positioned I/O on the shared spill file); the result does not
  // depend on it. Consumes the intervals and annotations. `budget` (may be
  // null) is checked before each device: once it is passed the remaining
  // devices are skipped (their results empty; the caller drops the file).
  std::vector<DeviceResult> FinishDevices(const std::vector<classify::FamilyId>& family,
                                          const classify::Classifier& classifier,
                                          const parse::ParseSummary& summary, int threads,
                                          FileBudget* budget = nullptr);

 private:
  // A device's slots split by family kind, with the runs its sweep merges.
  struct SlotPlan;
  void FinishDevice(size_t index, const std::vector<classify::FamilyId>& family,
                    const classify::Classifier& classifier, const parse::ParseSummary& summary,
                    DeviceResult& result);
  // Adds each slot's counts to result.ds (kernels, or memory ops for
  // kMemory names) and its collective figures; sorts the in-memory intervals.
  SlotPlan PlanSlots(Device& d, const std::vector<classify::FamilyId>& family,
                     const classify::Classifier& classifier, DeviceResult& result);
  // Merges the plan's runs in start order through a DeviceSweep (and the
  // device's annotations): busy, exposed and exclusive figures.
  void Sweep(Device& d, SlotPlan plan, DeviceResult& result);
};

}  // namespace profwatch::aggregate
