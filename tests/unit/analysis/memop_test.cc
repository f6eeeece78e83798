// Memory operations versus kernels through the whole analysis (read -> parse
// -> aggregate), in the three event formats: a Kineto JSON, a JAX
// trace-events JSON and an XSpace. Kernels whose names contain memset,
// memcpy or copy (vLLM's Triton `_combined_routing_memset`) stay kernels;
// only the runtimes' memory operations (Kineto cat gpu_memcpy/gpu_memset, the
// runtimes' whole copy names on JAX streams) are memory ops. Per-device
// kernels, kernel time, busy time and memory ops are computed here from the
// events written, under every built-in rule set.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "testing/proto_writer.h"
#include "testing/test_util.h"

namespace profwatch::analysis {
// Named for this file: the unity build compiles it with its neighbours.
namespace memop_test {

using testing::TempDir;

constexpr int64_t kPsPerUs = 1'000'000;

struct Op {
  std::string name;
  std::string kineto_cat;  // Kineto only: kernel, gpu_memcpy, gpu_memset
  int stream = 7;
  int64_t ts_us = 0;
  int64_t dur_us = 0;
  bool kernel = true;  // the truth: a kernel, or a memory operation
};

// Kernels that look like copies by name, and the runtimes' real copies.
std::vector<Op> KinetoOps() {
  return {
      {"_combined_routing_memset", "kernel", 7, 0, 10},
      {"triton_memcpy_kernel", "kernel", 7, 20, 5},
      {"copy_kernel", "kernel", 8, 22, 10},
      {"void at::native::memset_kernel<float>(float*, long)", "kernel", 8, 35, 4},
      {"void cutlass::Kernel2<cutlass_80_tensorop_gemm>(Params)", "kernel", 7, 40, 20},
      {"Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 7, 70, 3, false},
      {"Memcpy DtoD (Device -> Device)", "gpu_memcpy", 8, 75, 2, false},
      {"Memset (Device)", "gpu_memset", 7, 80, 1, false},
  };
}

std::vector<Op> JaxOps() {
  return {
      {"_combined_routing_memset", "", 7, 0, 10},
      {"triton_memcpy_kernel", "", 7, 20, 5},
      {"copy_kernel", "", 8, 22, 10},
      {"CopyTokensToExperts_kernel", "", 8, 35, 4},
      {"MemsetKernel", "", 7, 33, 2},
      {"loop_add_fusion", "", 7, 40, 20},
      {"MemcpyD2H", "", 7, 70, 3, false},
      {"MemcpyH2D", "", 8, 75, 2, false},
      {"Memset 3", "", 7, 80, 1, false},
      {"Memset", "", 8, 82, 1, false},
      {"CopyDeviceToDevice", "", 7, 90, 2, false},
      {"FillBuffer", "", 8, 95, 1, false},
  };
}

struct Figures {
  int64_t kernels = 0, kernel_ps = 0, busy_ps = 0, memops = 0, memop_ps = 0;
};

// Busy time by brute force over the elementary segments between interval ends.
Figures Expect(const std::vector<Op>& ops) {
  Figures f;
  std::set<int64_t> points;
  for (const Op& o : ops) {
    if (!o.kernel) {
      ++f.memops;
      f.memop_ps += o.dur_us * kPsPerUs;
      continue;
    }
    ++f.kernels;
    f.kernel_ps += o.dur_us * kPsPerUs;
    points.insert(o.ts_us);
    points.insert(o.ts_us + o.dur_us);
  }
  for (auto it = points.begin(); it != points.end() && std::next(it) != points.end(); ++it) {
    const int64_t a = *it, b = *std::next(it);
    for (const Op& o : ops) {
      if (o.kernel && o.ts_us <= a && o.ts_us + o.dur_us >= b) {
        f.busy_ps += (b - a) * kPsPerUs;
        break;
      }
    }
  }
  return f;
}

std::string KinetoJson(const std::vector<Op>& ops) {
  std::ostringstream out;
  out << R"({"schemaVersion":1,"traceEvents":[)";
  out << R"({"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":100,"tid":100,"ts":0,"dur":90},)";
  for (const Op& o : ops) {
    out << R"({"ph":"X","cat":")" << o.kineto_cat << R"(","name":")" << o.name
        << R"(","pid":0,"tid":)" << o.stream << R"(,"ts":)" << o.ts_us << R"(,"dur":)" << o.dur_us
        << R"(,"args":{"device":0,"stream":)" << o.stream << "}},";
  }
  out << "{}]}";
  return out.str();
}

std::string JaxJson(const std::vector<Op>& ops) {
  std::ostringstream out;
  out << R"({"displayTimeUnit":"ns","traceEvents":[)";
  out << R"({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)";
  for (int stream : {7, 8}) {
    out << R"j({"ph":"M","pid":1,"tid":)j" << stream
        << R"j(,"name":"thread_name","args":{"name":"Stream #)j" << stream << R"j((Kernel)"}},)j";
  }
  out << R"({"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}},)";
  // A host-side copy: not device work at all.
  out << R"({"ph":"X","pid":701,"tid":1,"name":"MemcpyD2H","ts":70,"dur":5},)";
  for (const Op& o : ops) {
    out << R"({"ph":"X","pid":1,"tid":)" << o.stream << R"(,"name":")" << o.name << R"(","ts":)"
        << o.ts_us << R"(,"dur":)" << o.dur_us << R"(,"args":{}},)";
  }
  out << "{}]}";
  return out.str();
}

// ---- An XSpace of one GPU plane (testing/proto_writer.h). ----

using testing::LenField;
using testing::VarintField;

std::string XSpace(const std::vector<Op>& ops) {
  constexpr int64_t kLineNs = 1'000'000'000;
  std::string metadata;
  std::string lines;
  for (int stream : {7, 8}) {
    std::string line = VarintField(1, stream) +
                       LenField(2, "Stream #" + std::to_string(stream) + "(Kernel)") +
                       VarintField(3, kLineNs);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].stream != stream) continue;
      line += LenField(4, VarintField(1, static_cast<int64_t>(i) + 1) +
                              VarintField(2, ops[i].ts_us * kPsPerUs) +
                              VarintField(3, ops[i].dur_us * kPsPerUs));
    }
    lines += LenField(3, line);
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto key = static_cast<int64_t>(i) + 1;
    metadata += LenField(
        4, VarintField(1, key) + LenField(2, VarintField(1, key) + LenField(2, ops[i].name)));
  }
  const std::string plane = VarintField(1, 1) + LenField(2, "/device:GPU:0") + lines + metadata;
  return LenField(1, plane) + LenField(4, "host0");
}

void ExpectFigures(const std::string& path, const std::vector<Op>& ops) {
  const Figures want = Expect(ops);
  for (const char* rules : {"auto", "nvidia", "amd", "drill"}) {
    SCOPED_TRACE(std::string(rules) + " " + path);
    AnalyzeOptions options;
    options.rules = rules;
    auto r = AnalyzeFiles({path}, options);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    ASSERT_TRUE(r->errors.empty()) << r->errors[0].error.ToString();
    const auto& st = r->stats;
    ASSERT_EQ(st.gpus(), 1);
    const auto& d = st.devices[0];
    EXPECT_EQ(d.kernels, want.kernels);
    EXPECT_EQ(d.kernel_ps, want.kernel_ps);
    EXPECT_EQ(d.busy_ps, want.busy_ps);
    EXPECT_EQ(d.memops, want.memops);
    EXPECT_EQ(d.memop_ps, want.memop_ps);
    EXPECT_EQ(st.total_launches, want.kernels);
    EXPECT_EQ(st.total_kernel_ps, want.kernel_ps);
  }
}

TEST(MemopAnalysisTest, KinetoKernelsNamedLikeCopiesStayKernels) {
  TempDir tmp;
  const std::string path = tmp.Sub("vm_1481.1795652969892807939.pt.trace.json.gz");
  testing::WriteFile(path, testing::Gzip(KinetoJson(KinetoOps())));
  ExpectFigures(path, KinetoOps());
}

TEST(MemopAnalysisTest, JaxKernelsNamedLikeCopiesStayKernels) {
  TempDir tmp;
  const std::string path = tmp.Sub("vm.trace.json.gz");
  testing::WriteFile(path, testing::Gzip(JaxJson(JaxOps())));
  ExpectFigures(path, JaxOps());
}

TEST(MemopAnalysisTest, XplaneKernelsNamedLikeCopiesStayKernels) {
  TempDir tmp;
  const std::string path = tmp.Sub("vm.xplane.pb");
  testing::WriteFile(path, XSpace(JaxOps()));
  ExpectFigures(path, JaxOps());
}

// analyze and serve read gzip with ISA-L wherever it is built in.
TEST(AnalyzeOptionsTest, InflateDefaultsToTheDefaultBackend) {
  EXPECT_EQ(AnalyzeOptions{}.inflate, read::DefaultInflateBackend());
}

}  // namespace memop_test
}  // namespace profwatch::analysis
