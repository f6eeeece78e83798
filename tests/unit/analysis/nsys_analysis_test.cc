// nsys exports through the whole analysis: generated exports of both schema
// generations (several ranks per file, rows in shuffled order, NCCL init
// rows before the profiler started, NVTX ranks and steps, one slow rank)
// give per-device kernels, kernel/busy/exposed-comm time and rank equal to
// values computed here, independently, from the rows written.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "nsys_export.h"
#include "testing/test_util.h"

namespace profwatch::analysis {
namespace {

using testing::TempDir;
using tracegen::NsysExportWriter;
using tracegen::NsysKernel;
using tracegen::NsysRange;
using tracegen::NsysSchema;

struct Expected {
  int64_t kernels = 0;
  int64_t kernel_ns = 0;
  int64_t busy_ns = 0;
  int64_t exposed_comm_ns = 0;
  int64_t rank = -1;
};

bool IsComm(const NsysKernel& k) { return k.short_name.starts_with("nccl"); }

// Busy and exposed communication by brute force: every elementary segment
// between two consecutive interval ends is busy when a kernel covers it, and
// exposed communication when a comm kernel covers it and no compute kernel.
void Measure(const std::vector<NsysKernel>& ks, Expected& e) {
  std::set<int64_t> points;
  for (const auto& k : ks) {
    points.insert(k.start_ns);
    points.insert(k.end_ns);
    ++e.kernels;
    e.kernel_ns += k.end_ns - k.start_ns;
  }
  for (auto it = points.begin(); it != points.end() && std::next(it) != points.end(); ++it) {
    const int64_t a = *it, b = *std::next(it);
    bool compute = false, comm = false;
    for (const auto& k : ks) {
      if (k.start_ns <= a && k.end_ns >= b) (IsComm(k) ? comm : compute) = true;
    }
    if (compute || comm) e.busy_ns += b - a;
    if (comm && !compute) e.exposed_comm_ns += b - a;
  }
}

struct Node {
  std::string path;
  std::map<int64_t, Expected> by_pid;  // pid -> expected figures of its one GPU
};

// One node file: `ranks` processes (pids 100*node + r, device r), each with
// compute kernels on two streams and NCCL kernels on a third, written in a
// shuffled order. The `slow_rank` runs its compute kernels 1.5x longer.
Node WriteNode(const TempDir& tmp, int node, NsysSchema schema, int ranks, int slow_rank,
               uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> start(0, 2'000'000), len(1, 60'000);
  std::vector<NsysKernel> rows;
  std::vector<NsysRange> ranges;
  Node out{tmp.Sub("capture-nsys-profile/job_node" + std::to_string(node) + ".sqlite"), {}};
  for (int r = 0; r < ranks; ++r) {
    const int64_t pid = 100 * node + r;
    const int rank = (node - 1) * ranks + r;
    std::vector<NsysKernel> mine;
    for (int i = 0; i < 120; ++i) {
      const int64_t s = start(rng);
      int64_t l = len(rng);
      NsysKernel k{s, s, pid, r, 7 + (i % 3) * 13, "", ""};
      if (i % 3 == 2) {
        k.short_name = "ncclDevKernel_AllGather_RING_LL";
        k.demangled_name = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
      } else {
        if (rank == slow_rank) l = l * 3 / 2;
        k.short_name = i % 2 ? "gemm" : "elementwise";
        k.demangled_name = i % 2 ? "void cutlass::Kernel<sm80_gemm>(Params)"
                                 : "void at::native::vectorized_elementwise_kernel<4>(int)";
      }
      k.end_ns = s + l;
      mine.push_back(k);
    }
    Measure(mine, out.by_pid[pid]);
    out.by_pid[pid].rank = rank;
    rows.insert(rows.end(), mine.begin(), mine.end());
    // NCCL setup before cudaProfilerStart: negative times, never counted.
    rows.push_back({-3'000'000, -2'000'000, pid, r, 27, "ncclDevKernel_Init", ""});
    ranges.push_back({1, 2, pid,
                      "rank=" + std::to_string(rank) + "; pp=0 dp=" + std::to_string(rank),
                      r % 2 == 1});
    for (int step = 0; step < 4; ++step) {
      ranges.push_back({step * 500'000, step * 500'000 + 400'000, pid,
                        "step " + std::to_string(10 + step), false});
    }
  }
  std::shuffle(rows.begin(), rows.end(), rng);
  std::shuffle(ranges.begin(), ranges.end(), rng);
  std::string error;
  auto w = NsysExportWriter::Create(out.path, schema, &error);
  EXPECT_TRUE(w) << error;
  for (const auto& k : rows) EXPECT_TRUE(w->AddKernel(k));
  for (const auto& r : ranges) EXPECT_TRUE(w->AddRange(r));
  EXPECT_TRUE(w->Finish(&error)) << error;
  return out;
}

TEST(NsysAnalysisTest, TwoNodesOfBothSchemasGiveExactPerDeviceFigures) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("capture-nsys-profile"));
  const Node a = WriteNode(tmp, 1, NsysSchema::k2020, 4, /*slow_rank=*/2, 7);
  const Node b = WriteNode(tmp, 2, NsysSchema::k2024, 4, /*slow_rank=*/-1, 8);
  AnalyzeOptions options;
  auto result = AnalyzeFiles({a.path, b.path}, options);
  ASSERT_TRUE(result) << result.error().ToString();
  const aggregate::WindowStats& w = result->stats;
  EXPECT_TRUE(result->errors.empty());
  EXPECT_EQ(result->format, "nsys");
  EXPECT_EQ(w.rule_set, "nvidia");
  ASSERT_EQ(w.gpus(), 8);
  EXPECT_EQ(w.launcher_mode, aggregate::LauncherMode::kOneGpuPerProcess);
  EXPECT_EQ(w.profile_steps, 4);  // NVTX steps 10..13
  EXPECT_EQ(w.profile_steps_source, aggregate::ProfileStepsSource::kNvtx);
  int64_t kernel_ns = 0, exposed_ns = 0;
  for (const Node* node : {&a, &b}) {
    for (const auto& [pid_key, want] : node->by_pid) {
      const int64_t pid = pid_key;  // a plain variable: clang 14 lambdas cannot capture bindings
      SCOPED_TRACE("pid " + std::to_string(pid));
      auto d = std::find_if(w.devices.begin(), w.devices.end(),
                            [&](const auto& d) { return d.file == node->path && d.pid == pid; });
      ASSERT_NE(d, w.devices.end());
      EXPECT_EQ(d->device, "pid " + std::to_string(pid) + " GPU " + std::to_string(pid % 100));
      EXPECT_EQ(d->device_id, pid % 100);
      EXPECT_EQ(d->rank, want.rank);
      EXPECT_EQ(d->kernels, want.kernels);
      EXPECT_EQ(d->kernel_ps, want.kernel_ns * 1000);
      EXPECT_EQ(d->busy_ps, want.busy_ns * 1000);
      EXPECT_EQ(d->exposed_comm_ps, want.exposed_comm_ns * 1000);
      EXPECT_EQ(d->streams, 3);
      kernel_ns += want.kernel_ns;
      exposed_ns += want.exposed_comm_ns;
    }
  }
  EXPECT_GT(exposed_ns, 0);  // the comm kernels are partly exposed
  EXPECT_EQ(w.total_kernel_ps, kernel_ns * 1000);
  EXPECT_EQ(w.SumExposedCommPs(), exposed_ns * 1000);
  // The slow rank (2) has the most compute kernel time of all devices.
  auto slow =
      std::max_element(w.devices.begin(), w.devices.end(), [](const auto& x, const auto& y) {
        return x.kernel_ps - x.comm_ps < y.kernel_ps - y.comm_ps;
      });
  EXPECT_EQ(slow->rank, 2);
  // Each file's NCCL init row was dropped and counted.
  for (const auto& f : w.files) EXPECT_EQ(f.drops.at("before_profiler_start"), 4u) << f.path;
}

TEST(NsysAnalysisTest, ExplicitProfileStepsWinOverNvtxSteps) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("capture-nsys-profile"));
  const Node a = WriteNode(tmp, 1, NsysSchema::k2024, 2, -1, 3);
  AnalyzeOptions options;
  options.aggregate.profile_steps_flag = 5;
  auto result = AnalyzeFiles({a.path}, options);
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(result->stats.profile_steps, 5);
  EXPECT_EQ(result->stats.gpus(), 2);
}

// Confined (serve): SQLite reads the export through the descriptor checked
// against the roots (/proc/self/fd/N) and finds what it finds by name; an
// export whose real path is outside the roots is refused and not read.
TEST(NsysAnalysisTest, ConfinedReadGoesThroughTheCheckedDescriptor) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("capture-nsys-profile"));
  const Node a = WriteNode(tmp, 1, NsysSchema::k2024, 2, -1, 3);
  AnalyzeOptions options;
  options.confine_to = read::Confinement{std::filesystem::canonical(tmp.path()).string()};
  auto inside = AnalyzeFiles({a.path}, options);
  ASSERT_TRUE(inside) << inside.error().ToString();
  EXPECT_TRUE(inside->errors.empty());
  EXPECT_EQ(inside->format, "nsys");
  EXPECT_EQ(inside->stats.gpus(), 2);
  options.confine_to = read::Confinement{"/nonexistent-root"};
  auto outside = AnalyzeFiles({a.path}, options);
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code, ErrorCode::kPermission);
  EXPECT_NE(outside.error().context.find("outside the watched roots"), std::string::npos)
      << outside.error().context;
}

// NCCL's NVTX ranges name the collective of the kernels launched inside
// them (joined through CUPTI_ACTIVITY_KIND_RUNTIME by correlationId, on the
// launching thread): RCCL-style generic kernels become all_gather and
// reduce_scatter; a launch outside any NCCL range, or inside ncclGroupEnd,
// keeps what its name says (other). No sizes: bytes stay unknown.
TEST(NsysAnalysisTest, NcclNvtxRangesNameTheirKernelsCollective) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("capture-nsys-profile"));
  const std::string path = tmp.Sub("capture-nsys-profile/n_node0.sqlite");
  std::string error;
  auto w = NsysExportWriter::Create(path, NsysSchema::k2024, &error);
  ASSERT_TRUE(w) << error;
  const int64_t pid = 4242;
  const std::string generic = "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)";
  // (range text or "" for none, as a StringIds id?, kernel start, length)
  struct Call {
    std::string range;
    bool string_id;
    int64_t start, len;
  };
  const std::vector<Call> calls = {{"ncclAllGather", false, 1000, 400},
                                   {"ncclReduceScatter", true, 3000, 300},
                                   {"", false, 5000, 200},
                                   {"ncclGroupEnd", false, 7000, 100}};
  ASSERT_TRUE(w->AddKernel({0, 5000000, pid, 0, 7, "gemm_kernel", ""}));  // compute, covers all
  ASSERT_TRUE(w->AddRuntime(pid, 0, 10, w->last_correlation()));
  for (const Call& c : calls) {
    const int64_t launch = c.start - 500;  // on the host, before the kernel runs
    if (!c.range.empty()) {
      ASSERT_TRUE(w->AddRange({launch - 10, launch + 20, pid, c.range, c.string_id}));
    }
    ASSERT_TRUE(
        w->AddKernel({c.start + 10000000, c.start + 10000000 + c.len, pid, 0, 20, generic, ""}));
    ASSERT_TRUE(w->AddRuntime(pid, launch, launch + 5, w->last_correlation()));
  }
  ASSERT_TRUE(w->Finish(&error)) << error;
  AnalyzeOptions options;
  auto result = AnalyzeFiles({path}, options);
  ASSERT_TRUE(result) << result.error().ToString();
  const aggregate::CollectiveStats& c = result->stats.collectives;
  EXPECT_EQ(c[aggregate::CollectiveKind::kAllGather].calls, 1);
  EXPECT_EQ(c[aggregate::CollectiveKind::kAllGather].kernel_ps, 400 * 1000);
  EXPECT_EQ(c[aggregate::CollectiveKind::kAllGather].sized_calls, 0);
  EXPECT_EQ(c[aggregate::CollectiveKind::kReduceScatter].calls, 1);
  EXPECT_EQ(c[aggregate::CollectiveKind::kReduceScatter].kernel_ps, 300 * 1000);
  EXPECT_EQ(c[aggregate::CollectiveKind::kOther].calls, 2);
  EXPECT_EQ(c[aggregate::CollectiveKind::kOther].kernel_ps, 300 * 1000);
}

}  // namespace
}  // namespace profwatch::analysis
