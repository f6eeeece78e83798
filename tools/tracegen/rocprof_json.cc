// rocprofv3 JSON writer: see rocprof_json.h.
#include "rocprof_json.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <utility>

#include "gen_util.h"
#include "rocpd_schema.h"

namespace profwatch::tracegen {
namespace {

using Interval = std::pair<int64_t, int64_t>;

// The union of `v` (sorted here) as disjoint intervals.
std::vector<Interval> Union(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}
int64_t Length(const std::vector<Interval>& u) {
  int64_t n = 0;
  for (const Interval& i : u) n += i.second - i.first;
  return n;
}
// Length of the part of union `a` not covered by union `b`.
int64_t Uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t covered = 0;
  for (const Interval& x : a) {
    for (const Interval& y : b) {
      const int64_t lo = std::max(x.first, y.first), hi = std::min(x.second, y.second);
      if (hi > lo) covered += hi - lo;
    }
  }
  return Length(a) - covered;
}

struct Kernel {
  uint64_t id;
  const char* name;
  bool rccl;
};
const Kernel kKernels[] = {
    {11, "Cijk_Ailk_Bljk_BBS_BH_MT256x256x64_MI16x16x16x1_SN_1LDSB0_GRVW8", false},
    {12, "ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<bf16>>", false},
    {13,
     "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
     false},
    {14, "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", true},
};

constexpr int64_t kBaseNs = 320'000'000'000'000'000;  // ~10 years of uptime: ps overflow int64
constexpr uint64_t kGpuHandle0 = 94'823'749'823'000;
constexpr uint64_t kCpuHandle = 94'823'749'000'000;

std::string AgentJson(uint64_t handle, int type, int node, const std::string& name,
                      const std::string& product) {
  return "  {\"size\": 456, \"id\": {\"handle\": " + std::to_string(handle) +
         "}, \"type\": " + std::to_string(type) +
         ", \"cpu_cores_count\": 0, \"simd_count\": 1216, \"fw_version\": {\"uCode\": 166, "
         "\"Major\": 0, \"Minor\": 0, \"Stepping\": 0}, \"name\": \"" +
         name + "\", \"vendor_name\": \"AMD\", \"product_name\": \"" + product +
         "\", \"model_name\": \"\", \"node_id\": " + std::to_string(node) +
         ", \"logical_node_id\": " + std::to_string(node) + "}";
}

// The records of one process, as the rocpd writer stores them.
struct DispatchRow {
  uint64_t kernel;
  int64_t start, end;
  uint64_t queue;
  uint64_t corr;  // correlation id (internal)
};
// An RCCL API call: a region whose id is its correlation id.
struct CallRow {
  uint64_t corr;
  std::string name;
  int64_t start, end;
};
struct CopyRow {
  int64_t start, end, bytes;
};
struct MarkerRow {
  std::string text;
  int64_t start, end;
};

void ReplaceAll(std::string& s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

// One process's rocpd database, written as rocprofiler-sdk's generateRocpd.cpp
// does: the schema's tables suffixed with the run's UUID, its views, agents
// keyed by node id, the OS pid as the process id, markers as regions.
bool WriteRocpd(const std::string& path, int64_t pid, int gpus, int gpu, const std::string& product,
                uint64_t seed, const std::vector<DispatchRow>& dispatches,
                const std::vector<CopyRow>& copies, const std::vector<MarkerRow>& markers,
                const std::vector<CallRow>& calls, std::string* error) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    *error = "cannot create " + path;
    sqlite3_close(db);
    return false;
  }
  // The schema's string defaults are double-quoted (accepted by SQLite's
  // legacy rule, which some builds turn off).
  sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 1, nullptr);
  char guid[37];
  std::snprintf(guid, sizeof guid, "0195%04x-%04x-7%03x-8%03x-%012llx",
                static_cast<unsigned>(pid & 0xffff), static_cast<unsigned>(seed & 0xffff),
                static_cast<unsigned>(gpu & 0xfff), static_cast<unsigned>(gpus & 0xfff),
                static_cast<unsigned long long>(pid) * 7919ULL);
  std::string uuid = guid;
  std::replace(uuid.begin(), uuid.end(), '-', '_');
  const std::string suffix = "_" + uuid;
  std::string ddl = std::string(kRocpdTablesSql) + "\n" + kRocpdViewsSql;
  ReplaceAll(ddl, "{{uuid}}", suffix);
  ReplaceAll(ddl, "{{guid}}", guid);
  // A generator's scratch file: no journal, no sync (rocprofv3's own writer
  // syncs; the content is the same).
  std::string sql = "PRAGMA journal_mode = OFF;\nPRAGMA synchronous = OFF;\n" + ddl + "\nBEGIN;\n";
  auto q = [](const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  };
  const std::string t = suffix;
  sql += "INSERT INTO rocpd_info_node" + t +
         " (id, hash, machine_id, hostname) VALUES (1, 42, 'a1b2c3', 'node-0');\n";
  sql += "INSERT INTO rocpd_info_process" + t + " (id, nid, pid, command) VALUES (" +
         std::to_string(pid) + ", 1, " + std::to_string(pid) + ", 'python3 train.py');\n";
  for (int c = 0; c < 2; ++c) {
    sql += "INSERT INTO rocpd_info_agent" + t +
           " (id, nid, pid, type, absolute_index, logical_index, type_index, name, "
           "product_name) VALUES (" +
           std::to_string(c) + ", 1, " + std::to_string(pid) + ", 'CPU', " + std::to_string(c) +
           ", " + std::to_string(c) + ", " + std::to_string(c) +
           ", 'AMD EPYC 9654 96-Core Processor', 'AMD EPYC 9654 96-Core Processor');\n";
  }
  for (int g = 0; g < gpus; ++g) {
    sql += "INSERT INTO rocpd_info_agent" + t +
           " (id, nid, pid, type, absolute_index, logical_index, type_index, name, "
           "product_name) VALUES (" +
           std::to_string(2 + g) + ", 1, " + std::to_string(pid) + ", 'GPU', " +
           std::to_string(2 + g) + ", " + std::to_string(2 + g) + ", " + std::to_string(g) +
           ", 'gfx942', " + q(product) + ");\n";
  }
  sql += "INSERT INTO rocpd_info_code_object" + t +
         " (id, nid, pid, agent_id, uri) VALUES (1, 1, " + std::to_string(pid) + ", " +
         std::to_string(2 + gpu) + ", 'file:///opt/rocm/lib/librccl.so');\n";
  for (const Kernel& k : kKernels) {
    sql += "INSERT INTO rocpd_info_kernel_symbol" + t +
           " (id, nid, pid, code_object_id, kernel_name, display_name) VALUES (" +
           std::to_string(k.id) + ", 1, " + std::to_string(pid) + ", 1, " +
           q("_Z" + std::to_string(k.id) + "mangled.kd") + ", " + q(k.name) + ");\n";
  }
  std::map<uint64_t, int> queue_ids;
  for (const DispatchRow& d : dispatches) {
    if (queue_ids.emplace(d.queue, static_cast<int>(queue_ids.size()) + 1).second) {
      sql += "INSERT INTO rocpd_info_queue" + t + " (id, nid, pid, name) VALUES (" +
             std::to_string(queue_ids.size()) + ", 1, " + std::to_string(pid) + ", 'queue');\n";
    }
  }
  sql += "INSERT INTO rocpd_info_stream" + t + " (id, nid, pid, name) VALUES (0, 1, " +
         std::to_string(pid) + ", 'stream 0');\n";
  sql += "INSERT INTO rocpd_info_thread" + t + " (id, nid, pid, tid) VALUES (" +
         std::to_string(pid) + ", 1, " + std::to_string(pid) + ", " + std::to_string(pid) + ");\n";
  int64_t id = 1;
  for (const DispatchRow& d : dispatches) {
    // Its event: stack_id = the correlation id (generateRocpd.cpp).
    sql += "INSERT INTO rocpd_event" + t +
           " (id, stack_id, parent_stack_id, correlation_id) VALUES (" + std::to_string(id) + ", " +
           std::to_string(d.corr) + ", " + std::to_string(d.corr) + ", 0);\n";
    sql += "INSERT INTO rocpd_kernel_dispatch" + t +
           " (id, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, "
           "end, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, "
           "grid_size_z, event_id) VALUES (" +
           std::to_string(id) + ", 1, " + std::to_string(pid) + ", " + std::to_string(pid) + ", " +
           std::to_string(2 + gpu) + ", " + std::to_string(d.kernel) + ", " + std::to_string(id) +
           ", " + std::to_string(queue_ids.at(d.queue)) + ", 0, " + std::to_string(d.start) + ", " +
           std::to_string(d.end) + ", 256, 1, 1, 65536, 1, 1, " + std::to_string(id) + ");\n";
    ++id;
  }
  std::map<std::string, int64_t> strings;
  auto string_id = [&](const std::string& text) {
    auto [it, added] = strings.emplace(text, static_cast<int64_t>(strings.size()) + 1);
    if (added) {
      sql += "INSERT INTO rocpd_string" + t + " (id, string) VALUES (" +
             std::to_string(it->second) + ", " + q(text) + ");\n";
    }
    return it->second;
  };
  id = 1;
  for (const CopyRow& c : copies) {
    sql += "INSERT INTO rocpd_memory_copy" + t +
           " (id, nid, pid, tid, start, end, name_id, dst_agent_id, src_agent_id, size) "
           "VALUES (" +
           std::to_string(id++) + ", 1, " + std::to_string(pid) + ", " + std::to_string(pid) +
           ", " + std::to_string(c.start) + ", " + std::to_string(c.end) + ", " +
           std::to_string(string_id("MEMORY_COPY_HOST_TO_DEVICE")) + ", " +
           std::to_string(2 + gpu) + ", 0, " + std::to_string(c.bytes) + ");\n";
  }
  // Regions are keyed by correlation id in rocprofv3's writer: the RCCL
  // calls keep theirs; markers and the HIP call take ids above them.
  for (const CallRow& c : calls) {
    sql += "INSERT INTO rocpd_region" + t + " (id, nid, pid, tid, start, end, name_id) VALUES (" +
           std::to_string(c.corr) + ", 1, " + std::to_string(pid) + ", " + std::to_string(pid) +
           ", " + std::to_string(c.start) + ", " + std::to_string(c.end) + ", " +
           std::to_string(string_id(c.name)) + ");\n";
  }
  id = 1'000'000'000;
  // A HIP API region as well: regions hold every API call, not only markers.
  sql += "INSERT INTO rocpd_region" + t + " (id, nid, pid, tid, start, end, name_id) VALUES (" +
         std::to_string(id++) + ", 1, " + std::to_string(pid) + ", " + std::to_string(pid) + ", " +
         std::to_string(kBaseNs - 9000) + ", " + std::to_string(kBaseNs - 8000) + ", " +
         std::to_string(string_id("hipLaunchKernel")) + ");\n";
  for (const MarkerRow& m : markers) {
    sql += "INSERT INTO rocpd_region" + t + " (id, nid, pid, tid, start, end, name_id) VALUES (" +
           std::to_string(id++) + ", 1, " + std::to_string(pid) + ", " + std::to_string(pid) +
           ", " + std::to_string(m.start) + ", " + std::to_string(m.end) + ", " +
           std::to_string(string_id(m.text)) + ");\n";
  }
  sql += "COMMIT;\n";
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    *error = path + ": " + (message != nullptr ? message : "SQL failed");
    sqlite3_free(message);
    sqlite3_close(db);
    return false;
  }
  if (sqlite3_close(db) != SQLITE_OK) {
    *error = "cannot close " + path;
    return false;
  }
  return true;
}

std::string Times(int64_t s, int64_t e) {
  return "\"start_timestamp\": " + std::to_string(s) + ", \"end_timestamp\": " + std::to_string(e);
}

}  // namespace

bool WriteRocprofOutputs(const RocprofSynthetic& p, const std::string& dir,
                         std::vector<RocprofTruth>* truth, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const int64_t step_ns = std::max<int64_t>(10'000'000, int64_t{p.kernels_per_step} * 250'000);
  for (int r = 0; r < p.ranks; ++r) {
    uint64_t rng = p.seed * 1000 + static_cast<uint64_t>(r);
    RocprofTruth t;
    t.pid = 4000 + r;
    t.rank = r;
    t.gpu = (p.first_gpu + r) % p.gpus;
    t.device = "pid " + std::to_string(t.pid) + " GPU " + std::to_string(t.gpu);
    t.path = dir + "/" + std::to_string(t.pid) +
             (p.rocpd ? "_results.db" : "_results.json" + std::string(p.gzip ? ".gz" : ""));
    t.idle_gpu_agents = p.gpus - 1;
    const uint64_t gpu_handle = kGpuHandle0 + static_cast<uint64_t>(t.gpu) * 7919;
    const uint64_t queue_compute = 0x7f00aa000000 + static_cast<uint64_t>(r),
                   queue_rccl = 0x7f00bb000000 + static_cast<uint64_t>(r);
    std::string dispatches, copies, markers, marker_texts, rccl_api;
    std::vector<DispatchRow> dispatch_rows;
    std::vector<CopyRow> copy_rows;
    std::vector<MarkerRow> marker_rows;
    std::vector<CallRow> call_rows;
    std::vector<Interval> compute, comm;
    int64_t first = INT64_MAX, last = 0;
    uint64_t corr = 1;
    auto add_dispatch = [&](const Kernel& k, int64_t s, int64_t e, uint64_t queue) {
      const uint64_t c = corr++;
      dispatch_rows.push_back({k.id, s, e, queue, c});
      if (!dispatches.empty()) dispatches += ",\n";
      dispatches +=
          "   {\"size\": 96, \"kind\": 12, \"operation\": 0, \"thread_id\": " +
          std::to_string(t.pid) + ", \"correlation_id\": {\"internal\": " + std::to_string(c) +
          ", \"external\": 0}, " + Times(s, e) +
          ", \"dispatch_info\": {\"size\": 64, \"agent_id\": {\"handle\": " +
          std::to_string(gpu_handle) + "}, \"queue_id\": {\"handle\": " + std::to_string(queue) +
          "}, \"kernel_id\": " + std::to_string(k.id) + ", \"dispatch_id\": " + std::to_string(c) +
          ", \"private_segment_size\": 0, \"group_segment_size\": 0, "
          "\"workgroup_size\": {\"x\": 256, \"y\": 1, \"z\": 1}, \"grid_size\": "
          "{\"x\": 65536, \"y\": 1, \"z\": 1}}}";
      ++t.kernels;
      t.kernel_ps += (e - s) * 1000;
      (k.rccl ? comm : compute).emplace_back(s, e);
      if (k.rccl) {
        ++t.rccl_kernels;
        t.comm_ps += (e - s) * 1000;
      }
      first = std::min(first, s);
      last = std::max(last, e);
    };
    auto add_marker = [&](const std::string& text, int64_t s, int64_t e) {
      const uint64_t c = 1'000'000 + corr++;
      marker_rows.push_back({text, s, e});
      if (!markers.empty()) markers += ",\n";
      markers +=
          "   {\"size\": 64, \"kind\": 5, \"operation\": 2, \"correlation_id\": "
          "{\"internal\": " +
          std::to_string(c) + ", \"external\": 0}, " + Times(s, e) +
          ", \"thread_id\": " + std::to_string(t.pid) + "}";
      if (!marker_texts.empty()) marker_texts += ", ";
      marker_texts += "{\"key\": " + std::to_string(c) + ", \"value\": \"" + text + "\"}";
    };
    if (p.markers) {
      add_marker("rank=" + std::to_string(r) + "; tp=0 dp=" + std::to_string(r), kBaseNs - 5000,
                 kBaseNs + p.steps * step_ns);
    }
    for (int s = 0; s < p.steps; ++s) {
      const int64_t step_start = kBaseNs + s * step_ns;
      if (p.markers) {
        add_marker("step " + std::to_string(10 + s), step_start, step_start + step_ns);
        ++t.steps;
      }
      // A host-to-device copy before the step's first kernel.
      const int64_t bytes = int64_t{1} << (20 + s % 4);
      copy_rows.push_back({step_start + 20'000, step_start + 70'000, bytes});
      if (!copies.empty()) copies += ",\n";
      copies += "   {\"size\": 80, \"kind\": 10, \"operation\": 1, \"thread_id\": " +
                std::to_string(t.pid) +
                ", \"correlation_id\": {\"internal\": " + std::to_string(corr++) +
                ", \"external\": 0}, " + Times(step_start + 20'000, step_start + 70'000) +
                ", \"dst_agent_id\": {\"handle\": " + std::to_string(gpu_handle) +
                "}, \"src_agent_id\": {\"handle\": " + std::to_string(kCpuHandle) +
                "}, \"bytes\": " + std::to_string(bytes) + "}";
      ++t.memops;
      t.memop_ps += 50'000 * 1000;
      t.memop_bytes += bytes;
      int64_t at = step_start + 100'000, rccl_free = 0;
      for (int i = 0; i < p.kernels_per_step; ++i) {
        const Kernel& k = kKernels[i % 4];
        if (k.rccl) {
          // Starts halfway into the previous compute kernel: partly hidden.
          const int64_t prev_start = compute.empty() ? at : compute.back().first;
          const int64_t s0 = std::max(rccl_free, prev_start + 10'000);
          const int64_t e0 = s0 + 30'000 + static_cast<int64_t>(SplitMix(rng) % 100'000);
          // The RCCL API call that launched it (operation 1 ncclAllReduce or 0
          // ncclAllGather of the strings below), numbered just before the
          // launch nested in it, and a ncclGroupStart (not a collective)
          // before it.
          const bool gather = (i / 4) % 2 == 1;
          for (int op : {4, gather ? 0 : 1}) {
            call_rows.push_back({corr,
                                 op == 4   ? "ncclGroupStart"
                                 : op == 0 ? "ncclAllGather"
                                           : "ncclAllReduce",
                                 s0 - 5000, s0 - 1000});
            if (!rccl_api.empty()) rccl_api += ",\n";
            rccl_api += "   {\"size\": 48, \"kind\": 16, \"operation\": " + std::to_string(op) +
                        ", \"correlation_id\": {\"internal\": " + std::to_string(corr++) +
                        ", \"external\": 0}, " + Times(s0 - 5000, s0 - 1000) +
                        ", \"thread_id\": " + std::to_string(t.pid) + "}";
          }
          ++(gather ? t.rccl_all_gather : t.rccl_all_reduce);
          add_dispatch(k, s0, e0, queue_rccl);
          rccl_free = e0;
          continue;
        }
        const int64_t dur = 20'000 + static_cast<int64_t>(SplitMix(rng) % 80'000);
        add_dispatch(k, at, at + dur, queue_compute);
        at += dur + static_cast<int64_t>(SplitMix(rng) % 5'000);
      }
    }
    const auto all = Union([&] {
      std::vector<Interval> v = compute;
      v.insert(v.end(), comm.begin(), comm.end());
      return v;
    }());
    t.busy_ps = Length(all) * 1000;
    t.exposed_comm_ps = Uncovered(Union(comm), Union(compute)) * 1000;
    t.span_ps = t.kernels > 0 ? (last - first) * 1000 : 0;
    t.streams = (compute.empty() ? 0 : 1) + (comm.empty() ? 0 : 1);

    std::string agents = AgentJson(kCpuHandle, 1, 0, "AMD EPYC 9654 96-Core Processor",
                                   "AMD EPYC 9654 96-Core Processor") +
                         ",\n" +
                         AgentJson(kCpuHandle + 1, 1, 1, "AMD EPYC 9654 96-Core Processor",
                                   "AMD EPYC 9654 96-Core Processor");
    for (int g = 0; g < p.gpus; ++g) {
      agents += ",\n" + AgentJson(kGpuHandle0 + static_cast<uint64_t>(g) * 7919, 2, 2 + g, "gfx942",
                                  p.product_name);
    }
    std::string symbols;
    for (const Kernel& k : kKernels) {
      if (!symbols.empty()) symbols += ",\n";
      symbols += "  {\"size\": 88, \"kernel_id\": " + std::to_string(k.id) +
                 ", \"code_object_id\": 1, \"kernel_name\": \"_Z" + std::to_string(k.id) +
                 "mangled.kd\", \"kernel_object\": 140000, \"formatted_kernel_name\": \"" +
                 std::string(k.name).substr(0, 24) + "\", \"demangled_kernel_name\": \"" + k.name +
                 "\", \"truncated_kernel_name\": \"" + std::string(k.name).substr(0, 12) + "\"}";
    }
    const std::string doc =
        "{\n \"rocprofiler-sdk-tool\": [\n  {\n \"metadata\": {\"pid\": " + std::to_string(t.pid) +
        ", \"init_time\": " + std::to_string(kBaseNs - 1'000'000) +
        ", \"fini_time\": " + std::to_string(kBaseNs + p.steps * step_ns + 1'000'000) +
        ", \"config\": {\"kernel_trace\": true, \"memory_copy_trace\": true, "
        "\"marker_trace\": true, \"rccl_trace\": true, \"output_path\": \"[x]{}\"}, "
        "\"command\": [\"python3\", \"train.py\"]},\n"
        " \"summary\": [{\"domain\": \"KERNEL_DISPATCH\", \"stats\": {\"count\": " +
        std::to_string(t.kernels) +
        "}}],\n"
        " \"agents\": [\n" +
        agents +
        "\n ],\n \"counters\": [],\n"
        " \"strings\": {\"callback_records\": [], \"buffer_records\": [{\"kind\": \"RCCL_API\", "
        "\"operations\": [\"ncclAllGather\", \"ncclAllReduce\", \"ncclBroadcast\", "
        "\"ncclReduceScatter\", \"ncclGroupStart\"]}], \"marker_api\": [" +
        marker_texts +
        "], \"correlation_id\": {\"external\": []}, \"counters\": {\"dimension_ids\": []}},\n"
        " \"code_objects\": [{\"size\": 72, \"code_object_id\": 1, \"uri\": "
        "\"file:///opt/rocm/lib/librccl.so#offset=0&size=0\"}],\n"
        " \"kernel_symbols\": [\n" +
        symbols +
        "\n ],\n \"callback_records\": {\"counter_collection\": []},\n"
        " \"buffer_records\": {\n  \"kernel_dispatch\": [\n" +
        dispatches + "\n  ],\n  \"hip_api\": [],\n  \"hsa_api\": [],\n  \"marker_api\": [\n" +
        markers + "\n  ],\n  \"rccl_api\": [\n" + rccl_api + "\n  ],\n  \"memory_copy\": [\n" +
        copies + "\n  ],\n  \"scratch_memory\": []\n }\n  }\n ]\n}\n";
    if (p.rocpd) {
      if (!WriteRocpd(t.path, t.pid, p.gpus, t.gpu, p.product_name, p.seed, dispatch_rows,
                      copy_rows, marker_rows, call_rows, error)) {
        return false;
      }
    } else if (p.gzip) {
      if (!WriteGzipParts(t.path, {&doc}, error)) return false;
    } else {
      std::ofstream out(t.path, std::ios::trunc | std::ios::binary);
      out << doc;
      if (!out) {
        *error = "cannot write " + t.path;
        return false;
      }
    }
    truth->push_back(std::move(t));
  }
  return true;
}

}  // namespace profwatch::tracegen
