// The aggregator on real profiler output (../shared/fixtures, skipped when
// absent): parser -> FileAggregator -> MergeWindow.
#include <gtest/gtest.h>

#include <algorithm>

#include "aggregate/aggregator.h"
#include "parse/xplane_parser.h"
#include "read/byte_source.h"
#include "testing/test_util.h"

namespace profwatch::aggregate {
namespace {

WindowStats AnalyzeOne(const std::string& path, bool xplane, std::string_view rules,
                       std::vector<std::string>* names = nullptr) {
  auto source = read::OpenTraceSource(path);
  EXPECT_TRUE(source.has_value());
  if (!source) return {};
  auto parser = xplane ? parse::MakeXPlaneParser() : parse::MakeJsonTraceParser();
  FileAggregator agg(path);
  auto summary = parser->Parse(**source, agg);
  EXPECT_TRUE(summary.has_value()) << summary.error().ToString();
  if (!summary) return {};
  if (names != nullptr) *names = agg.KernelNames(100000);
  auto c = *classify::Classifier::Create(*classify::BuiltinRuleSet(rules));
  auto stats = agg.Finish(*summary, false, *c);
  return MergeWindow({stats}, *c, {});
}

std::string AutoFor(const std::vector<std::string>& names) {
  std::vector<std::string_view> v(names.begin(), names.end());
  return std::string(classify::AutoRuleSetName(v));
}

// The converted JSON and its source xplane.pb must give identical per-device
// figures (two parsers, one aggregator).
TEST(RealFixtureTest, ConvertedJsonAndItsXplaneAgreePerDevice) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(json, "converted/mi300x_jax08_gemm_tw003.trace.json.gz");
  PROFWATCH_REQUIRE_SHARED_FIXTURE(pb, "real/xplane/mi300x_jax08_gemm_tw003.xplane.pb");
  std::vector<std::string> names;
  WindowStats a = AnalyzeOne(json, false, "drill", &names);
  WindowStats b = AnalyzeOne(pb, true, "drill");
  EXPECT_EQ(AutoFor(names), "amd");
  ASSERT_EQ(a.gpus(), 1);
  ASSERT_EQ(b.gpus(), 1);
  const DeviceSummary& x = a.devices[0];
  const DeviceSummary& y = b.devices[0];
  EXPECT_EQ(x.device, "/device:GPU:0");
  EXPECT_EQ(y.device, x.device);
  EXPECT_EQ(x.kernels, 54);
  EXPECT_EQ(x.kernel_ps, 3'475'484'000);
  EXPECT_EQ(x.busy_ps, 3'475'484'000);
  EXPECT_EQ(x.span_ps, 9'456'212'000);
  EXPECT_EQ(x.streams, 2);
  EXPECT_EQ(y.kernels, x.kernels);
  EXPECT_EQ(y.kernel_ps, x.kernel_ps);
  EXPECT_EQ(y.busy_ps, x.busy_ps);
  EXPECT_EQ(y.span_ps, x.span_ps);
  EXPECT_EQ(y.streams, x.streams);
  for (size_t f = 0; f < a.families.size(); ++f) {
    EXPECT_EQ(a.families[f].launches, b.families[f].launches) << a.families[f].family;
    EXPECT_EQ(a.families[f].total_ps, b.families[f].total_ps) << a.families[f].family;
  }
}

// Expected figures cross-checked with an independent Python (Decimal)
// computation over the same files: kernel count, summed duration, union.
TEST(RealFixtureTest, KinetoNcclSampleUnionAndProfilerSteps) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/kineto/a100x2_nccl_data.json.gz");
  std::vector<std::string> names;
  WindowStats w = AnalyzeOne(path, false, "nvidia", &names);
  EXPECT_EQ(AutoFor(names), "nvidia");
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].device, "GPU 0");
  EXPECT_EQ(w.devices[0].kernels, 2700);
  EXPECT_EQ(w.devices[0].kernel_ps, 162'532'340'000);
  EXPECT_EQ(w.devices[0].busy_ps, 155'215'315'000);
  EXPECT_EQ(w.devices[0].span_ps, 660'551'005'000);
  EXPECT_EQ(w.devices[0].memops, 1074);
  ASSERT_EQ(w.trace_steps.size(), 3u);
  EXPECT_EQ(w.trace_steps[0].step, 4);
  EXPECT_EQ(w.trace_steps[0].dur_ps, 222'442'191'000);
  EXPECT_DOUBLE_EQ(w.TraceStepSeconds(), 0.222442191);
  EXPECT_GT(std::find_if(w.families.begin(), w.families.end(),
                         [](const FamilySummary& f) { return f.family == "gemm"; })
                ->launches,
            0);
}

// Collective figures against tests/reference/collective_reference.py
// (Decimal over the raw JSON, its own kind table and interval arithmetic):
// calls, summed kernel time, bytes = nelems x dtype size (all-gather: the
// output), the nccl-tests bus factors, exposed = the kind's union minus the
// GPU's compute union. The a100 sample: 15 all-reduces (Float) and 6
// broadcasts (5 Float, 1 Long of 53 elements), 2 ranks.
TEST(RealFixtureTest, KinetoNcclSampleCollectives) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/kineto/a100x2_nccl_data.json.gz");
  const WindowStats w = AnalyzeOne(path, false, "nvidia");
  const CollectiveSums& ar = w.collectives[CollectiveKind::kAllReduce];
  EXPECT_EQ(ar.calls, 15);
  EXPECT_EQ(ar.kernel_ps, 46'762'159'000);
  EXPECT_EQ(ar.exposed_ps, 39'445'134'000);
  EXPECT_EQ(ar.sized_calls, 15);
  EXPECT_EQ(ar.sized_ps, ar.kernel_ps);
  EXPECT_EQ(ar.bytes, 306'684'384.0);
  EXPECT_EQ(ar.group_sizes, std::vector<int64_t>{2});
  ASSERT_TRUE(ar.AlgBandwidth().has_value());
  EXPECT_NEAR(*ar.AlgBandwidth(), 6'558'388'033.366894, 1e-3);
  EXPECT_NEAR(*ar.BusBandwidth(), 6'558'388'033.366894, 1e-3);  // 2(n-1)/n = 1 for n = 2
  // The trace names its one process group (torch's default group).
  EXPECT_EQ(ar.process_groups, (std::vector<ProcessGroup>{{"default_pg", "[0, 1]"}}));
  const CollectiveSums& bc = w.collectives[CollectiveKind::kBroadcast];
  EXPECT_EQ(bc.calls, 6);
  EXPECT_EQ(bc.kernel_ps, 114'334'000);
  EXPECT_EQ(bc.exposed_ps, 114'334'000);
  EXPECT_EQ(bc.bytes, 638'712.0);
  EXPECT_NEAR(*bc.AlgBandwidth(), 5'586'369'758.776917, 1e-3);
  EXPECT_NEAR(*bc.BusBandwidth(), 5'586'369'758.776917, 1e-3);
  // Every comm-family kernel is in some kind; no other kind has calls.
  int64_t calls = 0, ps = 0;
  for (const CollectiveSums& k : w.collectives.kinds) {
    calls += k.calls;
    ps += k.kernel_ps;
  }
  EXPECT_EQ(calls, 21);
  EXPECT_EQ(ps, w.devices[0].comm_ps);
}

// The B200 sample (vLLM): one 8-rank bf16 all-gather, 25,136 elements in,
// 201,088 out: bytes = 201,088 x 2, busbw = algbw x 7/8. And 73
// symmetric-memory all-reduces (multimem_all_reduce_kernel under
// symm_mem::multimem_all_reduce_, issue #48): all-reduces sized by their
// operators' bf16 Input Dims, no group size in the trace, so no busbw.
TEST(RealFixtureTest, KinetoB200AllGatherBytesAndBusBandwidth) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(path, "real/kineto/b200_eager_no_metadata.json.gz");
  const WindowStats w = AnalyzeOne(path, false, "nvidia");
  const CollectiveSums& ag = w.collectives[CollectiveKind::kAllGather];
  EXPECT_EQ(ag.calls, 1);
  EXPECT_EQ(ag.kernel_ps, 21'953'000);
  EXPECT_EQ(ag.exposed_ps, 21'953'000);
  EXPECT_EQ(ag.bytes, 402'176.0);
  EXPECT_EQ(ag.group_sizes, std::vector<int64_t>{8});
  EXPECT_TRUE(ag.process_groups.empty());  // its description is torch's "undefined"
  EXPECT_NEAR(*ag.AlgBandwidth(), 18'319'865'166.492051, 1e-3);
  EXPECT_NEAR(*ag.BusBandwidth(), 16'029'882'020.680545, 1e-3);
  const CollectiveSums& ar = w.collectives[CollectiveKind::kAllReduce];
  EXPECT_EQ(ar.calls, 73);
  EXPECT_EQ(ar.sized_calls, 73);
  EXPECT_EQ(ar.bytes, 385'661'952.0);  // Σ prod(Input Dims[0]) x 2 over the 73 operators
  EXPECT_TRUE(ar.group_sizes.empty());
  EXPECT_FALSE(ar.BusBandwidth().has_value());
  EXPECT_EQ(w.collectives[CollectiveKind::kOther].calls, 0);
}

TEST(RealFixtureTest, KinetoSamplesOfEverySchema) {
  struct Case {
    const char* file;
    const char* auto_set;
    int gpus;
    int64_t kernels;
    int64_t kernel_ps;
    int64_t busy_ps;
  };
  for (const Case& c : {
           Case{"real/kineto/a100_alexnet_trace.json.gz", "nvidia", 1, 79, 10'692'000'000,
                10'630'000'000},
           Case{"real/kineto/b200_eager_no_metadata.json.gz", "nvidia", 1, 768, 10'862'916'000,
                10'793'638'000},
           Case{"real/kineto/v100_resnet50_worker0.1623143089861.pt.trace.json.gz", "nvidia", 1,
                8772, 591'532'000'000, 591'532'000'000},
           Case{"real/kineto/mi250_minitoy_train_ROCm6_2_kineto.json.gz", "amd", 1, 14, 110'881'000,
                110'881'000},
           Case{"real/kineto/cpu_only_rank-34.pt.trace.json.gz", "drill", 0, 0, 0, 0},
       }) {
    PROFWATCH_REQUIRE_SHARED_FIXTURE(path, c.file);
    std::vector<std::string> names;
    WindowStats w = AnalyzeOne(path, false, "nvidia", &names);
    EXPECT_EQ(AutoFor(names), c.auto_set) << c.file;
    ASSERT_EQ(w.gpus(), c.gpus) << c.file;
    EXPECT_EQ(w.total_launches, c.kernels) << c.file;
    EXPECT_EQ(w.total_kernel_ps, c.kernel_ps) << c.file;
    EXPECT_EQ(w.SumBusyPs(), c.busy_ps) << c.file;
  }
}

// PyTorch 2.11 on an H200 (fixtures README): torch names the files
// <host>_<pid>.<ns>.pt.trace.json.gz; the host is "vm". Kernel counts and
// times are the README's (memsets and memcpys of cat gpu_memset/gpu_memcpy
// are not kernels; Inductor's triton_poi_fused__to_copy_* kernels are).
TEST(RealFixtureTest, H200KinetoCyclesKernelsAndHost) {
  struct Case {
    const char* file;
    int64_t kernels;
    int64_t kernel_ps;
  };
  for (const Case& c : {
           Case{"real/h200/jobs/4343-gpt-h200-torch/stall20/profiler/"
                "vm_1481.1795652969892807939.pt.trace.json.gz",
                699, 178'688'704'000},
           Case{"real/h200/jobs/4343-gpt-h200-torch/stall20/profiler/"
                "vm_1481.1795652970610113897.pt.trace.json.gz",
                699, 179'443'919'000},
           Case{"real/h200/jobs/4444-gpt-h200-cudagraphs/graphs/profiler/"
                "vm_956.1795655007791927762.pt.trace.json.gz",
                594, 167'266'027'000},
           Case{"real/h200/jobs/4545-gpt-h200-flops/flops/profiler/"
                "vm_442.1795655713837382813.pt.trace.json.gz",
                699, 178'825'142'000},
       }) {
    PROFWATCH_REQUIRE_SHARED_FIXTURE(path, c.file);
    for (const char* rules : {"nvidia", "drill"}) {
      WindowStats w = AnalyzeOne(path, false, rules);
      ASSERT_EQ(w.gpus(), 1) << c.file;
      EXPECT_EQ(w.total_launches, c.kernels) << c.file << " " << rules;
      EXPECT_EQ(w.total_kernel_ps, c.kernel_ps) << c.file << " " << rules;
      const auto straggler = w.FindStraggler();
      ASSERT_TRUE(straggler.has_value()) << c.file;
      EXPECT_EQ(straggler->host, "vm") << c.file;
    }
  }
}

TEST(RealFixtureTest, KinetoOldSchemaStringTidsAndMiDeviceOrdinal) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(
      v100, "real/kineto/v100_resnet50_worker0.1623143089861.pt.trace.json.gz");
  WindowStats w = AnalyzeOne(v100, false, "nvidia");
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].streams, 1);  // "stream 7"
  EXPECT_EQ(w.devices[0].memops, 324);
  EXPECT_EQ(w.trace_steps.size(), 6u);  // ProfilerStep#5..#10 with cat "Operator"
  PROFWATCH_REQUIRE_SHARED_FIXTURE(mi250, "real/kineto/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  WindowStats m = AnalyzeOne(mi250, false, "drill");
  ASSERT_EQ(m.gpus(), 1);
  EXPECT_EQ(m.devices[0].device, "GPU 2");
}

TEST(RealFixtureTest, XplaneWithIdleGpusAndStepsLines) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(pb, "real/xplane/v100x8_tf_bert_34.83.195.179_6003.xplane.pb");
  std::vector<std::string> names;
  WindowStats w = AnalyzeOne(pb, true, "nvidia", &names);
  EXPECT_EQ(AutoFor(names), "nvidia");
  // Only GPU:4 and GPU:6 ran kernels (GPU:1 has a copy stream only).
  ASSERT_EQ(w.gpus(), 2);
  EXPECT_EQ(w.devices[0].device, "/device:GPU:4");
  EXPECT_EQ(w.devices[1].device, "/device:GPU:6");
  EXPECT_EQ(w.devices[0].kernels, 665);
  EXPECT_EQ(w.devices[1].kernels, 665);
  EXPECT_EQ(w.trace_steps.size(), 2u);  // one "Steps" span per device plane
  EXPECT_EQ(w.launcher_mode, LauncherMode::kOneNodePerProcess);
}

}  // namespace
}  // namespace profwatch::aggregate
