// rocprofv3 JSON writer: see rocprof_json.h.
#include "rocprof_json.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <utility>

#include "gen_util.h"

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
    t.path = dir + "/" + std::to_string(t.pid) + "_results.json" + (p.gzip ? ".gz" : "");
    t.idle_gpu_agents = p.gpus - 1;
    const uint64_t gpu_handle = kGpuHandle0 + static_cast<uint64_t>(t.gpu) * 7919;
    const uint64_t queue_compute = 0x7f00aa000000 + static_cast<uint64_t>(r),
                   queue_rccl = 0x7f00bb000000 + static_cast<uint64_t>(r);
    std::string dispatches, copies, markers, marker_texts, rccl_api;
    std::vector<Interval> compute, comm;
    int64_t first = INT64_MAX, last = 0;
    uint64_t corr = 1;
    auto add_dispatch = [&](const Kernel& k, int64_t s, int64_t e, uint64_t queue) {
      const uint64_t c = corr++;
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
          add_dispatch(k, s0, e0, queue_rccl);
          rccl_free = e0;
          if (i == 3) {  // the RCCL API call that launched it (skipped by the reader)
            rccl_api =
                "   {\"size\": 48, \"kind\": 16, \"operation\": 3, \"correlation_id\": "
                "{\"internal\": 1, \"external\": 0}, " +
                Times(s0 - 5000, s0 - 1000) + ", \"thread_id\": " + std::to_string(t.pid) + "}";
          }
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
        "\"ncclReduceScatter\"]}], \"marker_api\": [" +
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
    if (p.gzip) {
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
