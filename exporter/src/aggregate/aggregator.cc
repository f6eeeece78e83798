// FileAggregator: see aggregator.h for the detection rules. Each event goes
// to the handler of its trace format (kineto_events.h, jax_events.h,
// nsys_events.h), which fills the file's KernelTable (kernel_table.h);
// Finish reduces the table to a FileStats (file_stats.h) in named steps.
#include "aggregate/aggregator.h"

#include <algorithm>
#include <limits>
#include <map>

#include "aggregate/file_stats.h"
#include "aggregate/flop_join.h"
#include "aggregate/graph_kernels.h"
#include "aggregate/jax_events.h"
#include "aggregate/kernel_table.h"
#include "aggregate/kineto_events.h"
#include "aggregate/launch_join.h"
#include "aggregate/nsys_events.h"

namespace profwatch::aggregate {

using classify::FamilyId;
using classify::FamilyKind;

struct FileAggregator::Impl {
  Impl(std::string path, size_t interval_budget, std::string spill_dir,
       std::shared_ptr<WindowNames> names)
      : table(std::move(names)) {
    table.path = std::move(path);
    table.interval_budget = interval_budget;
    table.spill_dir = std::move(spill_dir);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  KernelTable table;
  GraphKernels graph{table};
  LaunchJoin launches{table.drops};
  FlopJoin flops{table.drops, launches};
  KinetoEvents kineto{table, flops, launches};
  JaxEvents jax{table, graph};
  NsysEvents nsys{table};
};

namespace {

FileSummary SummaryOf(const KernelTable& table, const parse::ParseSummary& summary, bool partial) {
  FileSummary fs;
  fs.path = table.path;
  fs.schema = summary.schema;
  fs.events = summary.events;
  fs.suspected_truncated = summary.suspected_truncated;
  fs.partial = partial;
  fs.drops = summary.drops;
  for (const auto& [k, v] : table.drops) fs.drops[k] += v;
  return fs;
}

// The family of each kernel name, by name id (names that are no kernel: an
// id beyond the classifier's).
std::vector<FamilyId> ClassifyNames(const KernelTable& table,
                                    const classify::Classifier& classifier) {
  constexpr FamilyId kUnset = std::numeric_limits<FamilyId>::max();
  std::vector<FamilyId> family(table.names.size(), kUnset);
  for (size_t i = 0; i < table.names.size(); ++i) {
    if (table.name_is_kernel[i]) family[i] = table.FamilyOf(static_cast<uint32_t>(i), classifier);
  }
  return family;
}

// Adds the devices' figures to `out`: the GPUs (devices with a kernel), the
// file's kernel names with their summed figures, kernel time by annotation,
// collectives and spill errors.
void AddDevices(const KernelTable& table, std::vector<KernelTable::DeviceResult> results,
                const std::vector<FamilyId>& family, FileStats& out) {
  const size_t names = table.names.size();
  std::vector<int64_t> name_launches(names, 0), name_ps(names, 0);
  std::vector<int64_t> name_exclusive(names, 0), name_idle_before(names, 0);
  for (const KernelTable::Device& d : table.devices) {
    for (const auto& [name, n] : d.by_name) {
      name_launches[name] += n.launches;
      name_ps[name] += n.total_ps;
    }
  }
  std::map<uint32_t, int64_t> annotation_ps;
  for (size_t i = 0; i < results.size(); ++i) {
    KernelTable::DeviceResult& r = results[i];
    if (r.spill_error) ++out.summary.drops["interval_spill_error"];
    out.annotated = out.annotated || r.annotated;
    for (const auto& [id, ps] : r.annotation_ps) annotation_ps[id] += ps;
    if (!r.gpu) continue;
    const auto& by_name = table.devices[i].by_name;
    for (size_t slot = 0; slot < r.exclusive.size(); ++slot) {
      name_exclusive[by_name[slot].first] += r.exclusive[slot];
      name_idle_before[by_name[slot].first] += r.idle_before[slot];
    }
    out.devices.push_back(std::move(r.ds));
    out.collectives.Merge(r.collectives);
  }
  out.summary.gpus = static_cast<int>(out.devices.size());
  for (size_t i = 0; i < names; ++i) {
    if (!table.name_is_kernel[i]) continue;
    out.kernels.push_back(FileStats::Name{table.names[i], family[i], name_launches[i], name_ps[i],
                                          name_exclusive[i], name_idle_before[i]});
  }
  for (const auto& [id, ps] : annotation_ps) out.annotations.push_back({table.scopes[id], ps});
}

// Which kernel names are of math families, with empty accounts.
MathAccount NewMathAccount(const KernelTable& table, const std::vector<FamilyId>& family,
                           const classify::Classifier& classifier) {
  MathAccount m;
  const size_t n = table.names.size();
  m.is_math.assign(n, 0);
  m.counted_ps.assign(n, 0);
  m.named_ps.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    m.is_math[i] = table.name_is_kernel[i] && classifier.KindOf(family[i]) == FamilyKind::kMath;
  }
  return m;
}

// The file's math time: counted, and the rest named by its operator or
// kernel (window_stats.h FlopStats::uncounted).
void AddMathTime(const KernelTable& table, const MathAccount& m, FlopStats& f) {
  std::vector<int64_t> total(table.names.size(), 0);
  for (const KernelTable::Device& d : table.devices) {
    for (const auto& [name, n] : d.by_name) total[name] += n.total_ps;
  }
  for (size_t i = 0; i < total.size(); ++i) {
    if (!m.is_math[i]) continue;
    const int64_t counted = std::min(m.counted_ps[i], total[i]);
    f.math_ps += total[i];
    f.math_counted_ps += counted;
    const int64_t rest = total[i] - counted - m.named_ps[i];
    if (rest > 0)
      f.uncounted.push_back({std::string(table.names[static_cast<uint32_t>(i)]), false, rest});
  }
  for (const auto& [op, ps] : m.operators) f.uncounted.push_back({op, true, ps});
  f.unknown_kernel_ps = f.math_ps - f.math_counted_ps;
}

// Kernel time per scope (args.name scopes and placed CUDA-graph kernels),
// memory kernels left out.
void AddScopes(const KernelTable& table, const std::vector<FamilyId>& family,
               const classify::Classifier& classifier, FileStats& out) {
  std::map<uint32_t, int64_t> scope_ps;  // by scope id
  for (const auto& [key, ps] : table.scope_name_ps) {
    const uint32_t name = static_cast<uint32_t>(key & 0xffffffffu);
    if (classifier.KindOf(family[name]) == FamilyKind::kMemory) continue;
    scope_ps[static_cast<uint32_t>(key >> 32)] += ps;
  }
  for (const auto& [id, ps] : scope_ps) out.scopes.push_back({table.scopes[id - 1], ps});
}

// The memory operations' bytes, and why no kernel's bytes were modeled
// when none were.
void AddMemopBytes(const KernelTable& table, parse::TraceSchema schema, FileStats& out) {
  out.bytes.memop_bytes = table.memop_bytes;
  out.bytes.memops = table.sized_memops;
  out.bytes.memop_ps = table.sized_memop_ps;
  if (!out.byte_families.empty() || out.bytes.unknown_ops > 0) return;
  switch (schema) {
    case parse::TraceSchema::kNsys:
      out.bytes.absent = "an Nsight Systems export records no tensor shapes";
      break;
    case parse::TraceSchema::kRocprof:
      out.bytes.absent = "rocprofv3's JSON output records no tensor shapes";
      break;
    case parse::TraceSchema::kKineto:
      out.bytes.absent =
          "no kernel of an operator with a bytes model and shapes (profile with "
          "record_shapes=True)";
      break;
    default:
      out.bytes.absent = out.graph.unplaced.empty()
                             ? "no kernel of an HLO launch with a bytes model (the HLO modules "
                               "are in the .xplane.pb beside the trace)"
                             : "no HLO modules: " + out.graph.unplaced;
      break;
  }
}

}  // namespace

FileAggregator::FileAggregator(std::string path, size_t interval_budget, std::string spill_dir,
                               std::shared_ptr<WindowNames> names)
    : impl_(std::make_unique<Impl>(std::move(path), std::max<size_t>(1, interval_budget),
                                   std::move(spill_dir),
                                   names ? std::move(names) : std::make_shared<WindowNames>())) {}

uint64_t FileAggregator::SpilledIntervals() const { return impl_->table.spilled_intervals; }
const std::string& FileAggregator::SpillError() const { return impl_->table.spill_error; }

void FileAggregator::Park() { impl_->table.MaybeSpill(kParkedIntervals); }

void FileAggregator::SetBudget(FileBudget* budget) { impl_->table.budget = budget; }
FileAggregator::~FileAggregator() = default;

void FileAggregator::OnEvent(const parse::TraceEvent& e) {
  if (e.ph == 'M') {
    impl_->jax.OnMetadata(e);
    return;
  }
  if (e.ph != 'X') return;
  if (!e.has_name || e.name.empty()) {
    ++impl_->table.drops["empty_name"];  // counted: a kernel must not vanish silently
    return;
  }
  if (e.cat.empty()) {
    impl_->jax.OnComplete(e);
    return;
  }
  impl_->jax.SawCat();
  if (e.cat == parse::kNsysKernelCat || e.cat == parse::kNsysMemopCat ||
      e.cat == parse::kNsysStepCat) {
    impl_->nsys.OnComplete(e);
  } else {
    impl_->kineto.OnComplete(e);
  }
}

bool FileAggregator::HasGraphKernels() const { return impl_->graph.Any(); }

void FileAggregator::KeepGraphKernels(bool keep) { impl_->graph.Keep(keep); }

void FileAggregator::SetHloModules(std::shared_ptr<const parse::HloIndex> index,
                                   std::string missing) {
  impl_->graph.SetModules(std::move(index), std::move(missing));
}

std::vector<std::string> FileAggregator::KernelNames(size_t limit) const {
  const KernelTable& table = impl_->table;
  std::vector<std::string> out;
  for (size_t i = 0; i < table.names.size() && out.size() < limit; ++i) {
    if (table.name_is_kernel[i]) out.emplace_back(table.names[i]);
  }
  return out;
}

std::shared_ptr<FileStats> FileAggregator::Finish(const parse::ParseSummary& summary, bool partial,
                                                  const classify::Classifier& classifier,
                                                  int threads, FileBudget* budget) {
  Impl& im = *impl_;
  KernelTable& table = im.table;
  im.jax.ResolveHeld();
  im.kineto.Finish();
  im.graph.SizeCollectives();
  auto out = std::make_shared<FileStats>();
  out->names_pool = table.window_names;
  out->summary = SummaryOf(table, summary, partial);
  const std::vector<FamilyId> family = ClassifyNames(table, classifier);
  switch (summary.schema) {
    case parse::TraceSchema::kKineto:
      table.source = kSourceKineto;
      break;
    case parse::TraceSchema::kJaxTraceEvents:
    case parse::TraceSchema::kXPlane:
      table.source = kSourceJax;
      break;
    case parse::TraceSchema::kNsys:
      table.source = kSourceNsys;
      break;
    case parse::TraceSchema::kRocprof:
      table.source = kSourceRocprof;
      break;
    case parse::TraceSchema::kUnknown:
      break;
  }
  auto devices = table.FinishDevices(family, classifier, summary, threads, budget);
  if (budget != nullptr && budget->exceeded()) {
    impl_ = std::make_unique<Impl>(out->summary.path, table.interval_budget,
                                   std::move(table.spill_dir), table.window_names);
    return nullptr;
  }
  AddDevices(table, std::move(devices), family, *out);
  out->steps = std::move(table.steps);
  MathAccount math = NewMathAccount(table, family, classifier);
  im.graph.Place(family, math, *out);
  im.flops.Count(family, math, *out);
  AddMathTime(table, math, out->flops);
  AddMemopBytes(table, summary.schema, *out);
  if (!summary.device_names.empty()) out->flops.device_name = summary.device_names.front();
  out->idle_gpu_agents = summary.idle_gpu_agents;
  out->idle_gpu_agent_names = summary.idle_gpu_agent_names;
  AddScopes(table, family, classifier, *out);
  // Free per-file state: the aggregator is done.
  impl_ = std::make_unique<Impl>(out->summary.path, table.interval_budget,
                                 std::move(table.spill_dir), table.window_names);
  return out;
}

}  // namespace profwatch::aggregate
