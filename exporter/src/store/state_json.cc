#include "store/state_json.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "aggregate/profile_steps.h"
#include "core/text.h"
#include "watch/layout.h"

namespace profwatch::store {
namespace {

using nlohmann::json;
using snapshot::RunState;
using snapshot::Snapshot;

// Stable names of enum values in the state file, indexed by the enum value.
// Independent of the display names (LauncherModeName, ...) on purpose.
constexpr std::string_view kLauncherModes[] = {"unknown", "one_node_per_process",
                                               "one_gpu_per_process", "mixed"};
constexpr std::string_view kFamilyKinds[] = {"compute", "comm", "memory", "math"};
constexpr std::string_view kSchemas[] = {"unknown", "jax", "kineto", "xplane", "nsys", "rocprof"};

template <class E, size_t N>
std::string EnumName(E e, const std::string_view (&names)[N]) {
  const size_t i = static_cast<size_t>(e);
  return i < N ? std::string(names[i]) : std::string(names[0]);
}

// ---------------------------------------------------------------- writing

json Double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

json ProcessGroupsJson(const std::vector<aggregate::ProcessGroup>& groups) {
  json out = json::array();
  for (const aggregate::ProcessGroup& g : groups) {
    out.push_back({{"description", g.description}, {"ranks", g.ranks}});
  }
  return out;
}

// The kinds that ran, as raw sums (aggregate/collectives.h).
json CollectivesJson(const aggregate::CollectiveStats& c) {
  json out = json::array();
  for (size_t k = 0; k < aggregate::kCollectiveKinds; ++k) {
    const aggregate::CollectiveSums& s = c.kinds[k];
    if (s.calls == 0) continue;
    out.push_back(
        {{"collective", aggregate::CollectiveKindName(static_cast<aggregate::CollectiveKind>(k))},
         {"calls", s.calls},
         {"kernel_ps", s.kernel_ps},
         {"exposed_ps", s.exposed_ps},
         {"sized_calls", s.sized_calls},
         {"sized_ps", s.sized_ps},
         {"bytes", Double(s.bytes)},
         {"bus_ps", s.bus_ps},
         {"bus_bytes", Double(s.bus_bytes)},
         {"group_sizes", s.group_sizes},
         {"more_group_sizes", s.more_group_sizes},
         {"process_groups", ProcessGroupsJson(s.process_groups)},
         {"more_process_groups", s.more_process_groups},
         {"sources", s.sources},
         {"generic_kernels", s.generic_kernels}});
    // Written only when some call claimed an impossible size (issue 47).
    if (s.oversized_calls > 0) out.back()["oversized_calls"] = s.oversized_calls;
  }
  return out;
}

json FlopsJson(const aggregate::FlopStats& f) {
  json kinds = json::array();
  for (size_t k = 0; k < f.flops.size(); ++k) {
    kinds.push_back({{"flops", Double(f.flops[k])}, {"kernel_ps", f.kernel_ps[k]}});
  }
  json families = json::array();
  for (const auto& fam : f.families) {
    families.push_back(
        {{"family", fam.family}, {"flops", Double(fam.flops)}, {"kernel_ps", fam.kernel_ps}});
  }
  json uncounted = json::array();
  for (const auto& u : f.uncounted) {
    uncounted.push_back({{"name", u.name}, {"op", u.op}, {"ps", u.ps}});
  }
  return {{"kinds", std::move(kinds)},
          {"mixed_kernel_ps", f.mixed_kernel_ps},
          {"unknown_ops", f.unknown_ops},
          {"unknown_kernel_ps", f.unknown_kernel_ps},
          {"math_ps", f.math_ps},
          {"math_counted_ps", f.math_counted_ps},
          {"uncounted", std::move(uncounted)},
          {"families", std::move(families)},
          {"device_name", f.device_name},
          {"peak_per_second", Double(f.peak_per_second)},
          {"peak_source", f.peak_source}};
}

json BytesJson(const aggregate::ByteStats& b) {
  json families = json::array();
  for (const auto& fam : b.families) {
    families.push_back({{"family", fam.family},
                        {"bytes", Double(fam.bytes)},
                        {"kernel_ps", fam.kernel_ps},
                        {"memory_bound_ps", fam.memory_bound_ps}});
  }
  return {{"families", std::move(families)},
          {"unknown_ops", b.unknown_ops},
          {"memop_bytes", Double(b.memop_bytes)},
          {"memop_ps", b.memop_ps},
          {"memops", b.memops},
          {"absent", b.absent},
          {"peak_hbm_bytes_per_second", Double(b.peak_hbm_bytes_per_second)},
          {"peak_hbm_source", b.peak_hbm_source}};
}

// Per trace file: schema, events, drops.
json FilesJson(const std::vector<aggregate::FileSummary>& v) {
  json files = json::array();
  for (const auto& f : v) {
    json drops = json::object();
    for (const auto& [reason, n] : f.drops) drops[reason] = n;
    files.push_back({{"path", f.path},
                     {"schema", EnumName(f.schema, kSchemas)},
                     {"events", f.events},
                     {"suspected_truncated", f.suspected_truncated},
                     {"partial", f.partial},
                     {"drops", std::move(drops)},
                     {"gpus", f.gpus}});
  }
  return files;
}

// Per family, with its top kernels.
json FamiliesJson(const std::vector<aggregate::FamilySummary>& v) {
  json families = json::array();
  for (const auto& f : v) {
    json top = json::array();
    for (const auto& k : f.top_kernels) {
      top.push_back({{"name", k.name},
                     {"launches", k.launches},
                     {"total_ps", k.total_ps},
                     {"exclusive_ps", k.exclusive_ps},
                     {"idle_before_ps", k.idle_before_ps}});
    }
    families.push_back({{"family", f.family},
                        {"kind", EnumName(f.kind, kFamilyKinds)},
                        {"launches", f.launches},
                        {"total_ps", f.total_ps},
                        {"distinct_kernels", f.distinct_kernels},
                        {"exclusive_ps", f.exclusive_ps},
                        {"idle_before_ps", f.idle_before_ps},
                        {"top_kernels", std::move(top)}});
  }
  return families;
}

// Per device; the nsys-only keys only where set.
json DevicesJson(const std::vector<aggregate::DeviceSummary>& v) {
  json devices = json::array();
  for (const auto& d : v) {
    json jd = {{"file", d.file},
               {"device", d.device},
               {"kernels", d.kernels},
               {"kernel_ps", d.kernel_ps},
               {"busy_ps", d.busy_ps},
               {"span_ps", d.span_ps},
               {"streams", d.streams},
               {"comm_ps", d.comm_ps},
               {"exposed_comm_ps", d.exposed_comm_ps},
               {"memops", d.memops},
               {"memop_ps", d.memop_ps},
               {"compute_busy_ps", d.compute_busy_ps},
               {"exclusive_ps", d.exclusive_ps}};
    // nsys devices only: absent keys read back as unset.
    if (d.pid) jd["pid"] = *d.pid;
    if (d.device_id) jd["device_id"] = *d.device_id;
    if (d.rank) jd["rank"] = *d.rank;
    if (!d.largest_gaps_ps.empty()) jd["largest_gaps_ps"] = d.largest_gaps_ps;
    devices.push_back(std::move(jd));
  }
  return devices;
}

json ToJson(const aggregate::WindowStats& st) {
  // Columns, not an object per step: a window may hold 65,536 steps per file.
  json step_files = json::array(), step_numbers = json::array(), step_ps = json::array();
  for (const auto& s : st.trace_steps) {
    step_files.push_back(s.file);
    step_numbers.push_back(s.step);
    step_ps.push_back(s.dur_ps);
  }
  json steps = {{"file", std::move(step_files)},
                {"step", std::move(step_numbers)},
                {"dur_ps", std::move(step_ps)}};
  auto ranked = [](const std::vector<aggregate::RankedKernel>& v) {
    json out = json::array();
    for (const auto& k : v) out.push_back({{"name", k.name}, {"family", k.family}, {"ps", k.ps}});
    return out;
  };
  json serial = json::array();
  for (const auto& k : st.serial_kernels) {
    serial.push_back({{"name", k.name},
                      {"family", k.family},
                      {"launches", k.launches},
                      {"total_ps", k.total_ps},
                      {"exclusive_ps", k.exclusive_ps}});
  }
  json regions = json::array();
  for (const auto& r : st.regions)
    regions.push_back({{"region", r.region}, {"kernel_ps", r.kernel_ps}});
  json out = {{"files", FilesJson(st.files)},
              {"timestamp_dirs", st.timestamp_dirs},
              {"rule_set", st.rule_set},
              {"profile_steps", st.profile_steps},
              {"profile_steps_source",
               std::string(aggregate::ProfileStepsSourceName(st.profile_steps_source))},
              {"profile_steps_disagreement", st.profile_steps_disagreement},
              {"launcher_mode", EnumName(st.launcher_mode, kLauncherModes)},
              {"gpus_per_file", Double(st.gpus_per_file)},
              {"events", st.events},
              {"truncated", st.truncated},
              {"families", FamiliesJson(st.families)},
              {"total_kernel_ps", st.total_kernel_ps},
              {"total_launches", st.total_launches},
              {"devices", DevicesJson(st.devices)},
              {"trace_steps", std::move(steps)},
              {"top_exclusive", ranked(st.top_exclusive)},
              {"top_idle_before", ranked(st.top_idle_before)},
              {"serial_kernels", std::move(serial)},
              {"regions", regions},
              {"regions_other_ps", st.regions_other_ps},
              {"has_regions", st.has_regions},
              {"region_coverage", Double(st.region_coverage)},
              {"graph",
               {{"kernel_ps", st.graph.kernel_ps},
                {"placed_ps", st.graph.placed_ps},
                {"unplaced", st.graph.unplaced}}},
              {"flops", FlopsJson(st.flops)},
              {"bytes", BytesJson(st.bytes)},
              {"collectives", CollectivesJson(st.collectives)}};
  // rocprofv3 windows only: absent reads back as unset.
  if (st.idle_gpu_agents) {
    out["idle_gpu_agents"] = *st.idle_gpu_agents;
    out["idle_gpu_agent_names"] = st.idle_gpu_agent_names;
  }
  return out;
}

json ToJson(const snapshot::TrainingInfo& t) {
  json j = json::object();
  if (t.last_step) j["last_step"] = *t.last_step;
  if (t.last_step_seconds) j["last_step_seconds"] = Double(*t.last_step_seconds);
  if (t.steady_step_seconds) j["steady_step_seconds"] = Double(*t.steady_step_seconds);
  if (t.tokens_per_second_per_device) {
    j["tokens_per_second_per_device"] = Double(*t.tokens_per_second_per_device);
  }
  if (t.tflops_per_device) j["tflops_per_device"] = Double(*t.tflops_per_device);
  if (t.mfu_ratio) j["mfu_ratio"] = Double(*t.mfu_ratio);
  if (t.loss) j["loss"] = Double(*t.loss);
  if (t.last_step_unix) j["last_step_unix"] = Double(*t.last_step_unix);
  return j;
}

json ToJson(const snapshot::WindowLogSteps& w) {
  json j = {{"bound", w.bound},         {"located", w.located}, {"first_step", w.first_step},
            {"last_step", w.last_step}, {"segment", w.segment}, {"steps", w.steps},
            {"settled", w.settled}};
  if (w.period_first) j["period_first"] = *w.period_first;
  if (w.period_end) j["period_end"] = *w.period_end;
  if (w.seconds) j["seconds"] = Double(*w.seconds);
  return j;
}

json ToJson(const RunState& r) {
  json j = {{"training_job", r.key.training_job},
            {"run", r.key.run},
            {"window_id", r.window_id},
            {"window_start", r.window_start},
            {"stats", ToJson(*r.stats)},
            {"format", r.format},
            {"expected_gpus", r.expected_gpus},
            {"incomplete", r.incomplete},
            {"analyzed_unix", Double(r.analyzed_unix)},
            {"step_source", r.step_source},
            {"training", ToJson(r.training)},
            {"last_activity_unix", Double(r.last_activity_unix)},
            {"has_window", r.has_window}};
  if (r.step_seconds) j["step_seconds"] = Double(*r.step_seconds);
  // Absent in log-only runs; optional to the reader.
  if (r.has_window) j["window_log"] = ToJson(r.window_log);
  // Kept across a restart: the failed window is not analysed again unless a
  // file changes, so the flag would otherwise vanish while the fault stays.
  if (!r.window_failure.empty()) j["window_failure"] = r.window_failure;
  return j;
}

std::string Dump(json j, bool pretty) {
  // Every string in its reversible form (core/text.h): names that differ
  // only in bytes that are not UTF-8 stay apart in the file. replace stays
  // as a guard: nothing invalid is left for it.
  ReversibleUtf8Strings(j);
  return j.dump(pretty ? 1 : -1, ' ', false, json::error_handler_t::replace);
}

// ---------------------------------------------------------------- reading

// Tracks the JSON path for error messages and records the first error.
class Reader {
 public:
  class Scope {
   public:
    Scope(Reader& r, std::string seg) : r_(r) { r_.path_.push_back(std::move(seg)); }
    ~Scope() { r_.path_.pop_back(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Reader& r_;
  };

  bool Fail(std::string_view key, std::string_view what) {
    if (!error_) {
      std::string where;
      for (const auto& seg : path_) {
        if (!where.empty() && seg.front() != '[') where += '.';
        where += seg;
      }
      if (!key.empty()) where += (where.empty() ? "" : ": ") + std::string(key);
      error_ = Error{ErrorCode::kCorrupt,
                     "state: " + where + (where.empty() ? "" : ": ") + std::string(what)};
    }
    return false;
  }
  const std::optional<Error>& error() const { return error_; }

  const json* Field(const json& obj, std::string_view key) {
    if (!obj.is_object()) {
      Fail("", "not an object");
      return nullptr;
    }
    auto it = obj.find(key);
    if (it == obj.end()) {
      Fail(key, "missing");
      return nullptr;
    }
    return &*it;
  }

  bool Int64(const json& obj, std::string_view key, int64_t& out) {
    const json* v = Field(obj, key);
    if (v == nullptr) return false;
    return Int64Value(*v, key, out);
  }
  bool Int64Value(const json& v, std::string_view key, int64_t& out) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Fail(key, "out of range");
      }
      out = static_cast<int64_t>(u);
      return true;
    }
    if (v.is_number_integer()) {
      out = v.get<int64_t>();
      return true;
    }
    return Fail(key, "not an integer");
  }
  bool Uint64(const json& obj, std::string_view key, uint64_t& out) {
    const json* v = Field(obj, key);
    if (v == nullptr) return false;
    if (!v->is_number_unsigned()) return Fail(key, "not an unsigned integer");
    out = v->get<uint64_t>();
    return true;
  }
  bool Int(const json& obj, std::string_view key, int& out) {
    int64_t v = 0;
    if (!Int64(obj, key, v)) return false;
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
      return Fail(key, "out of range");
    }
    out = static_cast<int>(v);
    return true;
  }
  bool Bool(const json& obj, std::string_view key, bool& out) {
    const json* v = Field(obj, key);
    if (v == nullptr) return false;
    if (!v->is_boolean()) return Fail(key, "not a boolean");
    out = v->get<bool>();
    return true;
  }
  bool String(const json& obj, std::string_view key, std::string& out) {
    const json* v = Field(obj, key);
    if (v == nullptr) return false;
    return StringValue(*v, key, out);
  }
  bool StringValue(const json& v, std::string_view key, std::string& out) {
    if (!v.is_string()) return Fail(key, "not a string");
    out = FromReversibleUtf8(v.get_ref<const std::string&>());
    return true;
  }
  bool Double(const json& obj, std::string_view key, double& out) {
    const json* v = Field(obj, key);
    if (v == nullptr) return false;
    if (v->is_number()) {
      out = v->get<double>();
      return true;
    }
    if (v->is_string()) {
      const auto& s = v->get_ref<const std::string&>();
      if (s == "NaN") {
        out = std::numeric_limits<double>::quiet_NaN();
        return true;
      }
      if (s == "Infinity" || s == "-Infinity") {
        out = (s[0] == '-' ? -1 : 1) * std::numeric_limits<double>::infinity();
        return true;
      }
    }
    return Fail(key, "not a number");
  }
  template <class T>
  bool Optional(const json& obj, std::string_view key, std::optional<T>& out) {
    if (!obj.is_object()) return Fail("", "not an object");
    if (!obj.contains(key)) {
      out.reset();
      return true;
    }
    T v{};
    bool ok;
    if constexpr (std::is_same_v<T, double>) {
      ok = Double(obj, key, v);
    } else {
      ok = Int64(obj, key, v);
    }
    if (ok) out = v;
    return ok;
  }
  template <class E, size_t N>
  bool Enum(const json& obj, std::string_view key, const std::string_view (&names)[N], E& out) {
    std::string s;
    if (!String(obj, key, s)) return false;
    for (size_t i = 0; i < N; ++i) {
      if (names[i] == s) {
        out = static_cast<E>(i);
        return true;
      }
    }
    return Fail(key, "unknown value \"" + s + "\"");
  }
  // Calls fn(element) for each element of the array obj[key] in a scope
  // "key[i]"; stops at the first failure.
  template <class Fn>
  bool Array(const json& obj, std::string_view key, Fn&& fn) {
    const json* v = Field(obj, key);
    if (v == nullptr) return false;
    if (!v->is_array()) return Fail(key, "not an array");
    for (size_t i = 0; i < v->size(); ++i) {
      Scope s(*this, std::string(key) + "[" + std::to_string(i) + "]");
      if (!fn((*v)[i])) return false;
    }
    return true;
  }

 private:
  std::vector<std::string> path_;
  std::optional<Error> error_;
};

bool ReadFile(Reader& r, const json& j, aggregate::FileSummary& f) {
  bool ok = r.String(j, "path", f.path) && r.Enum(j, "schema", kSchemas, f.schema) &&
            r.Uint64(j, "events", f.events) &&
            r.Bool(j, "suspected_truncated", f.suspected_truncated) &&
            r.Bool(j, "partial", f.partial) && r.Int(j, "gpus", f.gpus);
  if (!ok) return false;
  const json* drops = r.Field(j, "drops");
  if (drops == nullptr) return false;
  if (!drops->is_object()) return r.Fail("drops", "not an object");
  Reader::Scope s(r, "drops");
  for (const auto& [reason, n] : drops->items()) {
    if (!r.Uint64(*drops, reason, f.drops[reason])) return false;
  }
  return true;
}

// The diagnosis figures (issue #22) are absent from state files written
// before them: read as 0.
bool Int64OrZero(Reader& r, const json& j, std::string_view key, int64_t& out) {
  std::optional<int64_t> v;
  if (!r.Optional(j, key, v)) return false;
  out = v.value_or(0);
  return true;
}

// Optional keys (written since the diagnosis of issue #29): absent reads as empty.
bool ReadSerialKernels(Reader& r, const json& j, aggregate::WindowStats& st) {
  if (j.is_object() && !j.contains("serial_kernels")) return true;
  return r.Array(j, "serial_kernels", [&](const json& k) {
    aggregate::SerialKernel sk;
    if (!(r.String(k, "name", sk.name) && r.String(k, "family", sk.family) &&
          r.Int64(k, "launches", sk.launches) && r.Int64(k, "total_ps", sk.total_ps) &&
          r.Int64(k, "exclusive_ps", sk.exclusive_ps))) {
      return false;
    }
    if (sk.launches <= 0) return r.Fail("launches", "must be positive");  // a divisor
    st.serial_kernels.push_back(std::move(sk));
    return true;
  });
}

bool ReadGaps(Reader& r, const json& j, aggregate::DeviceSummary& d) {
  if (j.is_object() && !j.contains("largest_gaps_ps")) return true;
  return r.Array(j, "largest_gaps_ps", [&](const json& g) {
    int64_t v = 0;
    if (!g.is_number_integer() || (v = g.get<int64_t>()) < 0) {
      return r.Fail("", "not a non-negative integer");
    }
    d.largest_gaps_ps.push_back(v);
    return true;
  });
}

bool ReadRanked(Reader& r, const json& j, std::string_view key,
                std::vector<aggregate::RankedKernel>& out) {
  if (j.is_object() && !j.contains(key)) return true;
  return r.Array(j, key, [&](const json& k) {
    aggregate::RankedKernel rk;
    if (!(r.String(k, "name", rk.name) && r.String(k, "family", rk.family) &&
          r.Int64(k, "ps", rk.ps))) {
      return false;
    }
    out.push_back(std::move(rk));
    return true;
  });
}

// Where the profile steps came from; written since issue #48 (older files
// read as the default, which is what they could not tell apart).
bool ReadProfileStepsSource(Reader& r, const json& j, aggregate::WindowStats& st) {
  if (!j.is_object() || !j.contains("profile_steps_source")) return true;
  std::string name;
  if (!r.String(j, "profile_steps_source", name)) return false;
  auto source = aggregate::ParseProfileStepsSource(name);
  if (!source) return r.Fail("profile_steps_source", "unknown value \"" + name + "\"");
  st.profile_steps_source = *source;
  return !j.contains("profile_steps_disagreement") ||
         r.String(j, "profile_steps_disagreement", st.profile_steps_disagreement);
}

// FLOPs counted from operator shapes; optional: a file without "flops" reads
// as a window that counted none.
bool ReadFlops(Reader& r, const json& j, aggregate::FlopStats& f) {
  if (!j.is_object() || !j.contains("flops")) return true;
  const json& fj = j["flops"];
  bool ok = r.Int64(fj, "mixed_kernel_ps", f.mixed_kernel_ps) &&
            r.Int64(fj, "unknown_ops", f.unknown_ops) &&
            r.Int64(fj, "unknown_kernel_ps", f.unknown_kernel_ps) &&
            r.String(fj, "device_name", f.device_name) &&
            r.Double(fj, "peak_per_second", f.peak_per_second) &&
            r.String(fj, "peak_source", f.peak_source);
  size_t k = 0;
  ok = ok && r.Array(fj, "kinds", [&](const json& e) {
    if (k >= f.flops.size()) return false;
    const bool read = r.Double(e, "flops", f.flops[k]) && r.Int64(e, "kernel_ps", f.kernel_ps[k]);
    ++k;
    return read;
  });
  // Math time, written since issue #48 (older files: no math time known).
  if (ok && fj.contains("math_ps")) {
    ok = r.Int64(fj, "math_ps", f.math_ps) && r.Int64(fj, "math_counted_ps", f.math_counted_ps) &&
         r.Array(fj, "uncounted", [&](const json& e) {
           aggregate::FlopStats::Uncounted u;
           if (!(r.String(e, "name", u.name) && r.Bool(e, "op", u.op) && r.Int64(e, "ps", u.ps))) {
             return false;
           }
           if (f.uncounted.size() < aggregate::kTopUncounted) f.uncounted.push_back(std::move(u));
           return true;
         });
  }
  return ok && r.Array(fj, "families", [&](const json& e) {
    aggregate::FlopStats::Family fam;
    if (!(r.String(e, "family", fam.family) && r.Double(e, "flops", fam.flops) &&
          r.Int64(e, "kernel_ps", fam.kernel_ps))) {
      return false;
    }
    f.families.push_back(std::move(fam));
    return true;
  });
}

// Bytes moved (issue #51); optional: a file without "bytes" reads as a
// window whose bytes were not counted.
bool ReadBytes(Reader& r, const json& j, aggregate::ByteStats& b) {
  if (!j.is_object() || !j.contains("bytes")) {
    b.absent = "not counted by the version that wrote this state";
    return true;
  }
  const json& bj = j["bytes"];
  return r.Int64(bj, "unknown_ops", b.unknown_ops) && r.Double(bj, "memop_bytes", b.memop_bytes) &&
         r.Int64(bj, "memop_ps", b.memop_ps) && r.Int64(bj, "memops", b.memops) &&
         r.String(bj, "absent", b.absent) &&
         r.Double(bj, "peak_hbm_bytes_per_second", b.peak_hbm_bytes_per_second) &&
         r.String(bj, "peak_hbm_source", b.peak_hbm_source) &&
         r.Array(bj, "families", [&](const json& e) {
           aggregate::ByteStats::Family fam;
           if (!(r.String(e, "family", fam.family) && r.Double(e, "bytes", fam.bytes) &&
                 r.Int64(e, "kernel_ps", fam.kernel_ps) &&
                 // Written since issue #61: an older state has no memory-bound kind.
                 Int64OrZero(r, e, "memory_bound_ps", fam.memory_bound_ps))) {
             return false;
           }
           b.families.push_back(std::move(fam));
           return true;
         });
}

// A kind's named process groups; written since process groups (older files
// have none). Kept as the analysis keeps them: bounded in number and text.
bool ReadProcessGroups(Reader& r, const json& e, aggregate::CollectiveSums& s) {
  if (!e.contains("process_groups")) return true;
  return r.Bool(e, "more_process_groups", s.more_process_groups) &&
         r.Array(e, "process_groups", [&](const json& g) {
           std::string description, ranks;
           if (!r.String(g, "description", description) || !r.String(g, "ranks", ranks)) {
             return false;
           }
           s.AddProcessGroup(aggregate::MakeProcessGroup(description, ranks));
           return true;
         });
}

// The formats a kind's calls came from; written since issue #48 (older
// files: none known, the notes then name no format).
bool ReadCollectiveSources(Reader& r, const json& e, aggregate::CollectiveSums& s) {
  if (!e.contains("sources")) return true;
  int64_t sources = 0;
  if (!r.Int64(e, "sources", sources) || !r.Bool(e, "generic_kernels", s.generic_kernels)) {
    return false;
  }
  s.sources = static_cast<uint8_t>(sources & 7);
  return true;
}

// Collectives by kind; written since collective figures (older files have
// none: no collective is known for the window).
bool ReadCollectives(Reader& r, const json& j, aggregate::CollectiveStats& c) {
  if (!j.is_object() || !j.contains("collectives")) return true;
  return r.Array(j, "collectives", [&](const json& e) {
    std::string name;
    if (!r.String(e, "collective", name)) return false;
    size_t k = 0;
    while (k < aggregate::kCollectiveKinds &&
           aggregate::CollectiveKindName(static_cast<aggregate::CollectiveKind>(k)) != name) {
      ++k;
    }
    if (k == aggregate::kCollectiveKinds) return r.Fail("collective", "unknown kind");
    aggregate::CollectiveSums& s = c.kinds[k];
    bool ok = r.Int64(e, "calls", s.calls) && r.Int64(e, "kernel_ps", s.kernel_ps) &&
              r.Int64(e, "exposed_ps", s.exposed_ps) && r.Int64(e, "sized_calls", s.sized_calls) &&
              r.Int64(e, "sized_ps", s.sized_ps) && r.Double(e, "bytes", s.bytes) &&
              r.Int64(e, "bus_ps", s.bus_ps) && r.Double(e, "bus_bytes", s.bus_bytes) &&
              r.Bool(e, "more_group_sizes", s.more_group_sizes) &&
              (!e.contains("oversized_calls") || r.Int64(e, "oversized_calls", s.oversized_calls));
    return ok &&
           r.Array(e, "group_sizes",
                   [&](const json& g) {
                     int64_t n = 0;
                     if (!r.Int64Value(g, "group_sizes", n)) return false;
                     s.AddGroupSize(n);  // bounded like the analysis
                     return true;
                   }) &&
           ReadProcessGroups(r, e, s) && ReadCollectiveSources(r, e, s);
  });
}

bool ReadRegions(Reader& r, const json& j, aggregate::WindowStats& st) {
  if (!j.is_object() || !j.contains("regions")) return true;  // written before regions
  if (!r.Bool(j, "has_regions", st.has_regions) ||
      !r.Int64(j, "regions_other_ps", st.regions_other_ps)) {
    return false;
  }
  // Written since CUDA-graph regions; older files have neither.
  if (j.contains("region_coverage") && !r.Double(j, "region_coverage", st.region_coverage)) {
    return false;
  }
  if (j.contains("graph")) {
    const json& g = j["graph"];
    if (!(r.Int64(g, "kernel_ps", st.graph.kernel_ps) &&
          r.Int64(g, "placed_ps", st.graph.placed_ps) &&
          r.String(g, "unplaced", st.graph.unplaced))) {
      return false;
    }
  }
  return r.Array(j, "regions", [&](const json& e) {
    aggregate::RegionSummary rs;
    if (!(r.String(e, "region", rs.region) && r.Int64(e, "kernel_ps", rs.kernel_ps))) return false;
    st.regions.push_back(std::move(rs));
    return true;
  });
}

bool ReadFamily(Reader& r, const json& j, aggregate::FamilySummary& f) {
  return r.String(j, "family", f.family) && r.Enum(j, "kind", kFamilyKinds, f.kind) &&
         r.Int64(j, "launches", f.launches) && r.Int64(j, "total_ps", f.total_ps) &&
         r.Int64(j, "distinct_kernels", f.distinct_kernels) &&
         Int64OrZero(r, j, "exclusive_ps", f.exclusive_ps) &&
         Int64OrZero(r, j, "idle_before_ps", f.idle_before_ps) &&
         r.Array(j, "top_kernels", [&](const json& k) {
           aggregate::KernelSummary ks;
           if (!(r.String(k, "name", ks.name) && r.Int64(k, "launches", ks.launches) &&
                 r.Int64(k, "total_ps", ks.total_ps) &&
                 Int64OrZero(r, k, "exclusive_ps", ks.exclusive_ps) &&
                 Int64OrZero(r, k, "idle_before_ps", ks.idle_before_ps))) {
             return false;
           }
           f.top_kernels.push_back(std::move(ks));
           return true;
         });
}

bool ReadDevice(Reader& r, const json& j, aggregate::DeviceSummary& d) {
  return r.String(j, "file", d.file) && r.String(j, "device", d.device) &&
         r.Int64(j, "kernels", d.kernels) && r.Int64(j, "kernel_ps", d.kernel_ps) &&
         r.Int64(j, "busy_ps", d.busy_ps) && r.Int64(j, "span_ps", d.span_ps) &&
         r.Int(j, "streams", d.streams) && r.Int64(j, "comm_ps", d.comm_ps) &&
         r.Int64(j, "exposed_comm_ps", d.exposed_comm_ps) && r.Int64(j, "memops", d.memops) &&
         r.Int64(j, "memop_ps", d.memop_ps) && r.Optional(j, "pid", d.pid) &&
         r.Optional(j, "device_id", d.device_id) && r.Optional(j, "rank", d.rank) &&
         Int64OrZero(r, j, "compute_busy_ps", d.compute_busy_ps) &&
         Int64OrZero(r, j, "exclusive_ps", d.exclusive_ps) && ReadGaps(r, j, d);
}

// v2: three columns of equal length, the file an index into st.files; v1:
// an object per step naming its file by path. Read after st.files.
bool ReadSteps(Reader& r, const json& j, aggregate::WindowStats& st) {
  const json* steps = r.Field(j, "trace_steps");
  if (steps == nullptr) return false;
  Reader::Scope scope(r, "trace_steps");
  if (steps->is_array()) {
    std::map<std::string, uint32_t, std::less<>> index;
    for (size_t i = 0; i < st.files.size(); ++i) {
      index.emplace(st.files[i].path, static_cast<uint32_t>(i));
    }
    for (size_t i = 0; i < steps->size(); ++i) {
      Reader::Scope element(r, "[" + std::to_string(i) + "]");
      aggregate::StepSpan s;
      std::string file;
      if (!(r.String((*steps)[i], "file", file) && r.Int64((*steps)[i], "step", s.step) &&
            r.Int64((*steps)[i], "dur_ps", s.dur_ps))) {
        return false;
      }
      auto it = index.find(file);
      if (it == index.end()) return r.Fail("file", "not one of the window's files");
      s.file = it->second;
      st.trace_steps.push_back(s);
    }
    return true;
  }
  const json* files = r.Field(*steps, "file");
  const json* numbers = r.Field(*steps, "step");
  const json* ps = r.Field(*steps, "dur_ps");
  if (files == nullptr || numbers == nullptr || ps == nullptr) return false;
  if (!files->is_array() || !numbers->is_array() || !ps->is_array() ||
      numbers->size() != files->size() || ps->size() != files->size()) {
    return r.Fail("", "not three arrays of one length");
  }
  st.trace_steps.reserve(files->size());
  for (size_t i = 0; i < files->size(); ++i) {
    aggregate::StepSpan s;
    int64_t file = 0;
    if (!(r.Int64Value((*files)[i], "file", file) && r.Int64Value((*numbers)[i], "step", s.step) &&
          r.Int64Value((*ps)[i], "dur_ps", s.dur_ps))) {
      return false;
    }
    if (file < 0 || static_cast<uint64_t>(file) >= st.files.size()) {
      return r.Fail("file", "index " + std::to_string(file) + " out of range");
    }
    s.file = static_cast<uint32_t>(file);
    st.trace_steps.push_back(s);
  }
  return true;
}

// Written for rocprofv3 windows since issue #63: absent reads as unset; at
// most kIdleGpuAgentNamesListed names are kept.
bool ReadIdleGpuAgents(Reader& r, const json& j, aggregate::WindowStats& st) {
  if (!r.Optional(j, "idle_gpu_agents", st.idle_gpu_agents)) return false;
  if (!st.idle_gpu_agents || !j.contains("idle_gpu_agent_names")) return true;
  return r.Array(j, "idle_gpu_agent_names", [&](const json& e) {
    std::string s;
    if (!r.StringValue(e, "", s)) return false;
    if (st.idle_gpu_agent_names.size() < aggregate::kIdleGpuAgentNamesListed) {
      st.idle_gpu_agent_names.push_back(std::move(s));
    }
    return true;
  });
}

bool ReadStats(Reader& r, const json& j, aggregate::WindowStats& st) {
  return r.Array(j, "files",
                 [&](const json& e) {
                   aggregate::FileSummary f;
                   if (!ReadFile(r, e, f)) return false;
                   st.files.push_back(std::move(f));
                   return true;
                 }) &&
         r.Array(j, "timestamp_dirs",
                 [&](const json& e) {
                   std::string s;
                   if (!r.StringValue(e, "", s)) return false;
                   st.timestamp_dirs.push_back(std::move(s));
                   return true;
                 }) &&
         r.String(j, "rule_set", st.rule_set) && r.Int(j, "profile_steps", st.profile_steps) &&
         ReadProfileStepsSource(r, j, st) &&
         r.Enum(j, "launcher_mode", kLauncherModes, st.launcher_mode) &&
         r.Double(j, "gpus_per_file", st.gpus_per_file) && r.Uint64(j, "events", st.events) &&
         r.Bool(j, "truncated", st.truncated) &&
         r.Array(j, "families",
                 [&](const json& e) {
                   aggregate::FamilySummary f;
                   if (!ReadFamily(r, e, f)) return false;
                   st.families.push_back(std::move(f));
                   return true;
                 }) &&
         r.Int64(j, "total_kernel_ps", st.total_kernel_ps) &&
         r.Int64(j, "total_launches", st.total_launches) &&
         r.Array(j, "devices",
                 [&](const json& e) {
                   aggregate::DeviceSummary d;
                   if (!ReadDevice(r, e, d)) return false;
                   st.devices.push_back(std::move(d));
                   return true;
                 }) &&
         ReadSteps(r, j, st) && ReadRanked(r, j, "top_exclusive", st.top_exclusive) &&
         ReadRanked(r, j, "top_idle_before", st.top_idle_before) && ReadSerialKernels(r, j, st) &&
         ReadRegions(r, j, st) && ReadFlops(r, j, st.flops) && ReadBytes(r, j, st.bytes) &&
         ReadCollectives(r, j, st.collectives) && ReadIdleGpuAgents(r, j, st);
}

bool ReadTraining(Reader& r, const json& j, snapshot::TrainingInfo& t) {
  Reader::Scope s(r, "training");
  return r.Optional(j, "last_step", t.last_step) &&
         r.Optional(j, "last_step_seconds", t.last_step_seconds) &&
         r.Optional(j, "steady_step_seconds", t.steady_step_seconds) &&
         r.Optional(j, "tokens_per_second_per_device", t.tokens_per_second_per_device) &&
         r.Optional(j, "tflops_per_device", t.tflops_per_device) &&
         r.Optional(j, "mfu_ratio", t.mfu_ratio) && r.Optional(j, "loss", t.loss) &&
         r.Optional(j, "last_step_unix", t.last_step_unix);
}

bool ReadWindowLog(Reader& r, const json& j, snapshot::WindowLogSteps& w) {
  Reader::Scope s(r, "window_log");
  return r.Bool(j, "bound", w.bound) && r.Bool(j, "located", w.located) &&
         r.Int64(j, "first_step", w.first_step) && r.Int64(j, "last_step", w.last_step) &&
         r.Uint64(j, "segment", w.segment) && r.Int64(j, "steps", w.steps) &&
         r.Bool(j, "settled", w.settled) && r.Optional(j, "period_first", w.period_first) &&
         r.Optional(j, "period_end", w.period_end) && r.Optional(j, "seconds", w.seconds);
}

bool ReadRun(Reader& r, const json& j, RunState& rs) {
  if (!(r.String(j, "training_job", rs.key.training_job) && r.String(j, "run", rs.key.run) &&
        r.String(j, "window_id", rs.window_id) && r.String(j, "format", rs.format) &&
        r.Int(j, "expected_gpus", rs.expected_gpus) && r.Bool(j, "incomplete", rs.incomplete) &&
        r.Double(j, "analyzed_unix", rs.analyzed_unix) &&
        r.Optional(j, "step_seconds", rs.step_seconds) &&
        r.String(j, "step_source", rs.step_source) &&
        r.Double(j, "last_activity_unix", rs.last_activity_unix) &&
        r.Bool(j, "has_window", rs.has_window))) {
    return false;
  }
  // Optional: absent in files of older versions and when nothing failed.
  if (j.contains("window_failure") && !r.String(j, "window_failure", rs.window_failure)) {
    return false;
  }
  // Files written before window_start existed: the window's start is its
  // first <ts> dir's time, read once here from the name it was saved under.
  std::optional<int64_t> start;
  if (!r.Optional(j, "window_start", start)) return false;
  if (start) {
    rs.window_start = *start;
  } else if (auto from_name = watch::ParseTimestampDirName(rs.window_id)) {
    rs.window_start = *from_name;
  }
  const json* training = r.Field(j, "training");
  if (training == nullptr || !ReadTraining(r, *training, rs.training)) return false;
  if (j.contains("window_log")) {
    if (!ReadWindowLog(r, j.at("window_log"), rs.window_log)) return false;
  } else if (rs.has_window && rs.step_source == "log" && rs.step_seconds) {
    // Files written before windows were placed in their log: the step time
    // the window was exported with stays (the log is read again from its
    // start after a restart, and its latest steps are not this window's).
    rs.window_log.bound = true;
    rs.window_log.settled = true;
    rs.window_log.seconds = rs.step_seconds;
  }
  const json* stats = r.Field(j, "stats");
  if (stats == nullptr) return false;
  Reader::Scope s(r, "stats");
  return ReadStats(r, *stats, rs.MutableStats());
}

Result<json> ParseJson(std::string_view text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // parse_error names the byte offset and what was expected; out_of_range
    // is a number too large for a double.
    return MakeError(ErrorCode::kCorrupt, std::string("state: not JSON: ") + e.what());
  }
}

template <class T>
Result<T> Outcome(const Reader& r, T value, bool ok) {
  if (ok) return value;
  if (r.error()) return tl::unexpected<Error>(*r.error());
  return MakeError(ErrorCode::kCorrupt, "state: invalid");
}

}  // namespace

std::string SerializeState(const Snapshot& snap) {
  // Written run by run, never as one document: the state of 1,000 runs as a
  // DOM would cost several times the text. The bytes are those of the whole
  // document dumped compactly (keys in nlohmann::json's sorted order).
  std::string out = "{\"last_scan_unix\":" + Dump(Double(snap.last_scan_unix), false) +
                    ",\"pending_windows\":" + Dump(json(snap.pending_windows), false) +
                    ",\"runs\":[";
  bool first = true;
  for (const auto& [key, rs] : snap.runs) {
    if (!first) out += ',';
    first = false;
    out += Dump(ToJson(rs), false);
  }
  out += "],\"schema\":" + Dump(json(kStateSchema), false) + "}";
  return out;
}

std::string SerializeRunState(const RunState& run) { return Dump(ToJson(run), false); }

StateRunReader::StateRunReader(std::vector<std::string> prefix, bool drop_bad_runs)
    : prefix_(std::move(prefix)), drop_bad_runs_(drop_bad_runs) {}

bool StateRunReader::operator()(int depth, json::parse_event_t event, json& parsed) {
  if (depth < 0) return true;
  const auto d = static_cast<size_t>(depth);
  switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      kinds_.resize(d + 1);
      kinds_[d] = event == json::parse_event_t::object_start ? 'o' : 'a';
      keys_.resize(d + 1);  // keys of closed containers are stale
      return true;
    case json::parse_event_t::key:
      keys_.resize(d + 1);
      keys_[d] = parsed.is_string() ? parsed.get<std::string>() : std::string();
      return true;
    case json::parse_event_t::object_end:
      break;
    default:
      return true;
  }
  // An element of the state document's "runs" array: prefix_.size() objects
  // down, then "runs", then the array.
  const size_t p = prefix_.size();
  if (d != p + 2 || kinds_.size() < p + 2 || keys_.size() < p + 2 || kinds_[p] != 'o' ||
      kinds_[p + 1] != 'a' || keys_[p + 1] != "runs") {
    return true;
  }
  for (size_t i = 0; i < p; ++i) {
    if (kinds_[i] != 'o' || keys_[i + 1] != prefix_[i]) return true;
  }
  const size_t index = runs_read_++;
  if (error_) return false;
  Reader r;
  RunState rs;
  bool ok;
  {
    Reader::Scope scope(r, "runs[" + std::to_string(index) + "]");
    ok = ReadRun(r, parsed, rs);
  }
  if (!ok) {
    Error e = r.error() ? *r.error() : Error{ErrorCode::kCorrupt, "state: invalid"};
    if (drop_bad_runs_) {
      dropped_.push_back({"invalid", std::move(e)});
    } else {
      error_ = std::move(e);
    }
    return false;
  }
  const std::string name = rs.key.training_job + "/" + rs.key.run;
  snapshot::RunKey key = rs.key;
  if (!runs_.emplace(std::move(key), std::move(rs)).second) {
    Error e{ErrorCode::kCorrupt,
            "state: runs[" + std::to_string(index) + "]: duplicate run " + ReversibleUtf8(name)};
    if (drop_bad_runs_) {
      dropped_.push_back({"duplicate", std::move(e)});
    } else {
      error_ = std::move(e);
    }
  }
  return false;  // kept as a RunState (or dropped): its tree is dropped
}

Result<Snapshot> StateRunReader::Finish(const json& document) {
  try {
    Reader r;
    std::string schema;
    if (!r.String(document, "schema", schema)) return Outcome(r, Snapshot{}, false);
    if (schema != kStateSchema && schema != kStateSchemaV1) {
      return MakeError(ErrorCode::kUnsupported, "state: schema \"" + schema + "\", expected \"" +
                                                    std::string(kStateSchema) + "\"");
    }
    Snapshot snap;
    // operator() took every object of "runs"; what is left is not a run.
    bool ok = r.Double(document, "last_scan_unix", snap.last_scan_unix) &&
              r.Int64(document, "pending_windows", snap.pending_windows) &&
              r.Array(document, "runs", [&](const json&) {
                if (!drop_bad_runs_) return r.Fail("", "not an object");
                Reader element;
                element.Fail("", "not an object");
                dropped_.push_back({"invalid", *element.error()});
                return true;
              });
    if (ok && error_) return tl::unexpected<Error>(*error_);
    snap.runs = std::move(runs_);
    return Outcome(r, std::move(snap), ok);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternal, std::string("state: ") + e.what());
  }
}

Result<Snapshot> ParseState(std::string_view text) {
  StateRunReader runs({});
  json doc;
  try {
    doc = json::parse(text, std::ref(runs));
  } catch (const json::exception& e) {
    // parse_error names the byte offset and what was expected; out_of_range
    // is a number too large for a double.
    return MakeError(ErrorCode::kCorrupt, std::string("state: not JSON: ") + e.what());
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternal, std::string("state: ") + e.what());
  }
  return runs.Finish(doc);
}

Result<RunState> ParseRunState(std::string_view text) {
  try {
    Result<json> doc = ParseJson(text);
    if (!doc) return tl::unexpected<Error>(doc.error());
    Reader r;
    RunState rs;
    const bool ok = ReadRun(r, *doc, rs);
    return Outcome(r, std::move(rs), ok);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternal, std::string("state: ") + e.what());
  }
}

}  // namespace profwatch::store
