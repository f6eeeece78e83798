#include "aggregate/aggregator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <tuple>
#include <utility>

#include "aggregate/file_stats.h"

namespace profwatch::aggregate {
namespace {

using classify::Classifier;
using parse::Id;
using parse::IdKind;
using parse::TraceEvent;

constexpr int64_t kUs = 1'000'000;  // ps per µs

Id Int(int64_t v) { return Id{IdKind::kInt, v, {}}; }
Id Str(std::string_view s) { return Id{IdKind::kString, 0, s}; }

TraceEvent ProcessName(int64_t pid, std::string_view name) {
  TraceEvent e;
  e.ph = 'M';
  e.has_name = true;
  e.name = "process_name";
  e.pid = Int(pid);
  e.args_name = name;
  return e;
}

TraceEvent ThreadName(int64_t pid, int64_t tid, std::string_view name) {
  TraceEvent e = ProcessName(pid, name);
  e.name = "thread_name";
  e.tid = Int(tid);
  return e;
}

TraceEvent X(Id pid, Id tid, std::string_view name, int64_t ts_ps, int64_t dur_ps,
             std::string_view cat = "") {
  TraceEvent e;
  e.ph = 'X';
  e.has_name = true;
  e.name = name;
  e.cat = cat;
  e.pid = pid;
  e.tid = tid;
  e.has_ts = true;
  e.ts_ps = ts_ps;
  e.has_dur = true;
  e.dur_exact = true;
  e.dur_ps = dur_ps;
  return e;
}

TraceEvent Jx(int64_t pid, int64_t tid, std::string_view name, int64_t ts, int64_t dur) {
  return X(Int(pid), Int(tid), name, ts, dur);
}

std::shared_ptr<const Classifier> Builtin(std::string_view name) {
  return *Classifier::Create(*classify::BuiltinRuleSet(name));
}

// The nvidia set plus a user family of kind memory (a rules file): its
// kernels are memory operations. Built-in rules never make a kernel a memory
// op by a substring of its name.
std::shared_ptr<const Classifier> WithMemoryFamily() {
  auto set = classify::ParseRulesText(
      "rules:\n  - family: copies\n    kind: memory\n    match:\n      contains: memcpy_kernel\n",
      "t.yaml", *classify::BuiltinRuleSet("nvidia"));
  return *Classifier::Create(*set);
}

struct FileSpec {
  std::string path;
  std::vector<TraceEvent> events;
  parse::ParseSummary summary;
  bool partial = false;
};

WindowStats Aggregate(std::vector<FileSpec> files, const Classifier& c,
                      AggregateOptions opts = {}) {
  std::vector<std::shared_ptr<FileStats>> stats;
  for (auto& f : files) {
    FileAggregator agg(f.path);
    for (const auto& e : f.events) agg.OnEvent(e);
    if (f.summary.events == 0) f.summary.events = f.events.size();
    stats.push_back(agg.Finish(f.summary, f.partial, c));
  }
  return MergeWindow(stats, c, opts);
}

const FamilySummary& Family(const WindowStats& w, std::string_view name) {
  for (const auto& f : w.families) {
    if (f.family == name) return f;
  }
  ADD_FAILURE() << "no family " << name;
  static FamilySummary none;
  return none;
}

std::vector<TraceEvent> JaxHeader() {
  return {ProcessName(1, "/device:GPU:0"),     ProcessName(2, "/device:GPU:1"),
          ProcessName(701, "/host:CPU"),       ThreadName(1, 10, "Stream #16(Kernel)"),
          ThreadName(1, 11, "CUPTI overhead"), ThreadName(1, 12, "Stream #17(MemcpyD2D,Compute)"),
          ThreadName(2, 20, "Stream #2"),      ThreadName(701, 1, "python")};
}

TEST(FileAggregatorTest, JaxKernelsAreEventsOnDeviceStreamsOnly) {
  FileSpec f{"h0.trace.json.gz", JaxHeader(), {}, false};
  auto& ev = f.events;
  ev.push_back(Jx(1, 10, "Cijk_gemm", 0, 10 * kUs));
  ev.push_back(Jx(1, 12, "loop_convert_fusion.kd", 5 * kUs, 10 * kUs));
  ev.push_back(Jx(1, 11, "Cijk_overhead", 0, 50 * kUs));    // CUPTI overhead: not a stream
  ev.push_back(Jx(701, 1, "Cijk_host_side", 0, 50 * kUs));  // host pid: ignored
  ev.push_back(Jx(2, 20, "ncclDevKernel_Generic_1", 0, 4 * kUs));
  ev.push_back(Jx(1, 10, "MemcpyD2D", 30 * kUs, 2 * kUs));  // memory op, not a kernel
  ev.push_back(Jx(1, 10, "CopyDeviceToDevice", 40 * kUs, 3 * kUs));
  ev.push_back(Jx(1, 10, "FillBuffer", 50 * kUs, 1 * kUs));
  auto c = Builtin("drill");
  WindowStats w = Aggregate({f}, *c);
  ASSERT_EQ(w.gpus(), 2);
  const DeviceSummary& g0 = w.devices[0];
  EXPECT_EQ(g0.device, "/device:GPU:0");
  EXPECT_EQ(g0.file, "h0.trace.json.gz");
  EXPECT_EQ(g0.kernels, 2);
  EXPECT_EQ(g0.kernel_ps, 20 * kUs);
  EXPECT_EQ(g0.busy_ps, 15 * kUs);
  EXPECT_EQ(g0.span_ps, 15 * kUs);
  EXPECT_EQ(g0.streams, 2);
  EXPECT_EQ(g0.memops, 3);
  EXPECT_EQ(g0.memop_ps, 6 * kUs);
  EXPECT_EQ(w.devices[1].device, "/device:GPU:1");
  EXPECT_EQ(w.devices[1].comm_ps, 4 * kUs);
  EXPECT_EQ(w.total_launches, 3);
  EXPECT_EQ(w.total_kernel_ps, 24 * kUs);
  EXPECT_EQ(Family(w, "CK+primus GEMM (non-DeepEP)").launches, 1);
  EXPECT_EQ(Family(w, "loop_convert_fusion").total_ps, 10 * kUs);
  EXPECT_EQ(w.files.size(), 1u);
  EXPECT_EQ(w.files[0].gpus, 2);
  EXPECT_EQ(w.launcher_mode, LauncherMode::kOneNodePerProcess);
}

// Finishing a file is inside its window's budget: with the stop flag set or
// the window's deadline passed, Finish reduces no device and returns null
// (the file is over budget); with neither, the same budget lets it finish.
TEST(FileAggregatorTest, FinishStopsAtTheStopFlagAndTheWindowDeadline) {
  auto c = Builtin("drill");
  auto finish = [&](FileLimits limits) {
    FileAggregator agg("h0.trace.json.gz");
    for (const TraceEvent& e : JaxHeader()) agg.OnEvent(e);
    agg.OnEvent(Jx(1, 10, "Cijk_gemm", 0, 10 * kUs));
    agg.OnEvent(Jx(2, 20, "ncclDevKernel_Generic_1", 0, 4 * kUs));
    parse::ParseSummary summary;
    summary.events = 2;
    FileBudget budget(limits);
    auto stats = agg.Finish(summary, false, *c, 1, &budget);
    return std::make_pair(stats, budget.exceeded() ? budget.Check().error().context : "");
  };
  FileLimits open;
  auto [stats, why] = finish(open);
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ(stats->devices.size(), 2u);
  EXPECT_EQ(why, "");

  std::atomic<bool> stop{true};
  FileLimits stopped;
  stopped.stop = &stop;
  std::tie(stats, why) = finish(stopped);
  EXPECT_EQ(stats, nullptr);
  EXPECT_THAT(why, ::testing::HasSubstr("shutting down"));

  FileLimits late;
  late.window_max_time = std::chrono::seconds(30);
  late.window_deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  std::tie(stats, why) = finish(late);
  EXPECT_EQ(stats, nullptr);
  EXPECT_THAT(why, ::testing::HasSubstr("--window-max-seconds"));
}

TraceEvent Scoped(TraceEvent e, std::string_view scope) {
  e.args_name = scope;
  return e;
}

// Regions: stream kernels' scopes, summed over files and devices; kernels of
// a memory family, memops, host events and kernels without a scope belong to none;
// events held for late metadata keep their scope; the rest beyond
// top_regions is other; equal times are ordered by name.
TEST(FileAggregatorTest, RegionsSumScopedStreamKernels) {
  const std::string mlp = "jit(step)/jit(main)/transpose(jvp(decoder))/mlp/dot";
  const std::string attn = "jit(step)/jvp(decoder)/attn/softmax";
  const std::string embed = "jit(step)/embed/gather";
  FileSpec a{"a.trace.json.gz", JaxHeader(), {}, false};
  a.events.push_back(Scoped(Jx(1, 10, "gemm_kernel", 0, 10 * kUs), mlp));
  a.events.push_back(Scoped(Jx(2, 20, "gemm_kernel", 0, 4 * kUs), mlp));
  a.events.push_back(Scoped(Jx(1, 12, "softmax_kernel", 0, 6 * kUs), attn));
  a.events.push_back(Scoped(Jx(1, 10, "vectorized_memcpy_kernel", 20 * kUs, 50 * kUs), mlp));
  a.events.push_back(Scoped(Jx(1, 12, "MemcpyD2D", 20 * kUs, 50 * kUs), mlp));
  a.events.push_back(Scoped(Jx(701, 1, "host_op", 0, 50 * kUs), mlp));
  a.events.push_back(Jx(1, 10, "unscoped_kernel", 80 * kUs, 50 * kUs));
  FileSpec b{"b.trace.json.gz", {}, {}, false};
  b.events.push_back(Scoped(Jx(1, 10, "softmax_kernel", 0, 8 * kUs), attn));  // held
  b.events.push_back(Scoped(Jx(1, 10, "gather_kernel", 10 * kUs, 8 * kUs), embed));
  for (const auto& e : JaxHeader()) b.events.push_back(e);
  auto c = WithMemoryFamily();
  WindowStats w = Aggregate({a, b}, *c);
  EXPECT_TRUE(w.has_regions);
  ASSERT_EQ(w.regions.size(), 3u);
  EXPECT_EQ(w.regions[0].region, "decoder/attn/softmax");  // 14 us each: by name
  EXPECT_EQ(w.regions[0].kernel_ps, 14 * kUs);
  EXPECT_EQ(w.regions[1].region, "decoder/mlp/dot");
  EXPECT_EQ(w.regions[1].kernel_ps, 14 * kUs);
  EXPECT_EQ(w.regions[2].region, "embed/gather");
  EXPECT_EQ(w.regions[2].kernel_ps, 8 * kUs);
  EXPECT_EQ(w.regions_other_ps, 0);

  AggregateOptions top1;
  top1.top_regions = 1;
  top1.region_depth = 1;
  WindowStats one = Aggregate({a, b}, *c, top1);
  ASSERT_EQ(one.regions.size(), 1u);
  EXPECT_EQ(one.regions[0].region, "decoder");
  EXPECT_EQ(one.regions[0].kernel_ps, 28 * kUs);
  EXPECT_EQ(one.regions_other_ps, 8 * kUs);

  FileSpec plain{"p.trace.json.gz", JaxHeader(), {}, false};
  plain.events.push_back(Jx(1, 10, "gemm_kernel", 0, 10 * kUs));
  WindowStats none = Aggregate({plain}, *c);
  EXPECT_FALSE(none.has_regions);
  EXPECT_TRUE(none.regions.empty());
}

TEST(FileAggregatorTest, EventsBeforeTheirMetadataAreHeldAndCounted) {
  FileSpec f{"late.trace.json.gz", {}, {}, false};
  // Kernels first, metadata after (unusual but seen): judged at Finish.
  f.events.push_back(Jx(3, 30, "late_kernel.kd", 0, 7 * kUs));
  f.events.push_back(Jx(3, 31, "not_a_stream.kd", 0, 7 * kUs));
  f.events.push_back(Jx(9, 90, "never_declared.kd", 0, 7 * kUs));
  f.events.push_back(ProcessName(3, "/device:GPU:2"));
  f.events.push_back(ThreadName(3, 30, "Stream #5"));
  f.events.push_back(ThreadName(3, 31, "CUPTI overhead"));
  auto c = Builtin("drill");
  WindowStats w = Aggregate({f}, *c);
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].device, "/device:GPU:2");
  EXPECT_EQ(w.devices[0].kernels, 1);
  EXPECT_EQ(w.devices[0].kernel_ps, 7 * kUs);
  EXPECT_EQ(w.files[0].drops.at("no_metadata"), 1u);
}

TEST(FileAggregatorTest, TpuDevicesCountAndIdleGpusDoNot) {
  FileSpec f{
      "tpu.trace.json.gz",
      {ProcessName(3, "/device:TPU:0"), ProcessName(4, "/device:GPU:7"),
       ThreadName(3, 1, "Stream #1"), ThreadName(4, 1, "Stream #1"), Jx(3, 1, "fusion.1", 0, 5)},
      {},
      false};
  WindowStats w = Aggregate({f}, *Builtin("nvidia"));
  ASSERT_EQ(w.gpus(), 1);  // GPU:7 has no kernel
  EXPECT_EQ(w.devices[0].device, "/device:TPU:0");
}

TEST(FileAggregatorTest, TpuOpsLineCountsOnTpuOnly) {
  FileSpec f{
      "tpu.json",
      {ProcessName(3, "/device:TPU:0"), ProcessName(4, "/device:GPU:0"),
       ThreadName(3, 2, "XLA Ops"), ThreadName(3, 3, "XLA Modules"), ThreadName(4, 1, "Stream #1"),
       ThreadName(4, 2, "XLA Ops"), Jx(3, 2, "fusion.2", 0, 50), Jx(3, 3, "jit_train_step", 0, 100),
       Jx(4, 1, "gemm_a", 0, 10), Jx(4, 2, "gemm_a", 0, 10)},
      {},
      false};
  WindowStats w = Aggregate({f}, *Builtin("nvidia"));
  ASSERT_EQ(w.gpus(), 2);
  EXPECT_EQ(w.devices[0].device, "/device:GPU:0");
  EXPECT_EQ(w.devices[0].kernels, 1);  // its XLA Ops line duplicates the stream
  EXPECT_EQ(w.devices[1].device, "/device:TPU:0");
  EXPECT_EQ(w.devices[1].kernels, 1);  // the XLA Modules line is not an op line
  EXPECT_EQ(w.devices[1].kernel_ps, 50);
}

// PyTorch regions: each kernel's innermost gpu_user_annotation of its
// device; ProfilerStep#N ranges are steps, not regions; kernels outside
// every range and memory kernels belong to none; touching launches of one
// kernel on each side of a range boundary fall on their own sides.
TEST(FileAggregatorTest, KinetoRegionsAreTheInnermostAnnotation) {
  FileSpec f{"rank0.pt.trace.json", {}, {}, false};
  auto& ev = f.events;
  auto ann = [](int64_t dev, std::string_view name, int64_t ts, int64_t dur) {
    return X(Int(dev), Int(7), name, ts * kUs, dur * kUs, "gpu_user_annotation");
  };
  auto kernel = [](int64_t dev, std::string_view name, int64_t ts, int64_t dur) {
    return X(Int(dev), Int(7), name, ts * kUs, dur * kUs, "kernel");
  };
  ev.push_back(kernel(0, "gemm_kernel", 12, 3));  // kernels may come before their ranges
  ev.push_back(ann(0, "ProfilerStep#4", 0, 200));
  ev.push_back(ann(0, "DistributedDataParallel.forward", 10, 40));
  ev.push_back(ann(0, "## backward ##", 50, 50));
  ev.push_back(kernel(0, "gemm_kernel", 45, 5));               // forward [45,50)
  ev.push_back(kernel(0, "gemm_kernel", 50, 5));               // touching: backward [50,55)
  ev.push_back(kernel(0, "softmax_kernel", 95, 10));           // straddles backward's end: none
  ev.push_back(kernel(0, "vectorized_memcpy_kernel", 60, 5));  // a memory family: none
  ev.push_back(kernel(0, "late_kernel", 150, 5));              // only in ProfilerStep: none
  ev.push_back(ann(1, "## backward ##", 0, 100));
  ev.push_back(kernel(1, "gemm_kernel", 10, 7));
  auto c = WithMemoryFamily();
  WindowStats w = Aggregate({f}, *c);
  EXPECT_TRUE(w.has_regions);
  ASSERT_EQ(w.regions.size(), 2u);
  EXPECT_EQ(w.regions[0].region, "## backward ##");
  EXPECT_EQ(w.regions[0].kernel_ps, 12 * kUs);
  EXPECT_EQ(w.regions[1].region, "DistributedDataParallel.forward");
  EXPECT_EQ(w.regions[1].kernel_ps, 8 * kUs);
  EXPECT_TRUE(w.trace_steps.empty());  // the GPU copy of a step marker: steps come from the CPU one
  // Only a step marker: no scopes at all.
  FileSpec g{
      "rank1.pt.trace.json", {ann(0, "ProfilerStep#4", 0, 200), kernel(0, "k", 1, 2)}, {}, false};
  EXPECT_FALSE(Aggregate({g}, *c).has_regions);
}

TEST(FileAggregatorTest, KinetoKernelsWithIntAndStringTidsAndArgsDevice) {
  FileSpec f{"rank0.pt.trace.json", {}, {}, false};
  auto& ev = f.events;
  ev.push_back(ProcessName(0, "python3"));  // Kineto names device pids like the host
  ev.push_back(X(Int(0), Int(7), "nvjet_tst_64x64", 0, 10 * kUs, "kernel"));
  ev.push_back(X(Int(0), Str("stream 9"), "void cutlass::Kernel2<x>", 5 * kUs, 10 * kUs, "Kernel"));
  ev.push_back(
      X(Int(0), Int(7), "Memcpy DtoD (Device -> Device)", 40 * kUs, 2 * kUs, "gpu_memcpy"));
  ev.push_back(X(Int(0), Str("stream 7"), "Memset (Device)", 50 * kUs, 1 * kUs, "Memset"));
  ev.push_back(X(Int(0), Int(7), "aten::mm", 0, 100 * kUs, "cpu_op"));  // host side
  TraceEvent dev3 = X(Str("Spans"), Str("x"), "ncclDevKernel_AllReduce", 0, 3 * kUs, "kernel");
  dev3.has_args_device = true;
  dev3.args_device = 3;
  dev3.has_args_stream = true;
  dev3.args_stream = 21;
  ev.push_back(dev3);
  TraceEvent nodev = X(Str("Spans"), Int(1), "orphan", 0, 3 * kUs, "kernel");
  ev.push_back(nodev);
  auto c = Builtin("nvidia");
  WindowStats w = Aggregate({f}, *c);
  ASSERT_EQ(w.gpus(), 2);
  EXPECT_EQ(w.devices[0].device, "GPU 0");
  EXPECT_EQ(w.devices[0].kernels, 2);
  EXPECT_EQ(w.devices[0].streams, 2);
  EXPECT_EQ(w.devices[0].busy_ps, 15 * kUs);
  EXPECT_EQ(w.devices[0].memops, 2);
  EXPECT_EQ(w.devices[0].memop_ps, 3 * kUs);
  EXPECT_EQ(w.devices[1].device, "GPU 3");
  EXPECT_EQ(w.devices[1].comm_ps, 3 * kUs);
  EXPECT_EQ(w.devices[1].exposed_comm_ps, 3 * kUs);
  EXPECT_EQ(Family(w, "gemm").launches, 2);
  EXPECT_EQ(Family(w, "nccl").launches, 1);
  EXPECT_EQ(Family(w, "memory").launches, 0);  // gpu_memcpy events are not kernels
  EXPECT_EQ(w.files[0].drops.at("no_device"), 1u);
}

TEST(FileAggregatorTest, KernelsOfAMemoryFamilyCountAsMemoryOps) {
  FileSpec f{"m.json",
             {X(Int(0), Int(7), "gemm_a", 0, 10 * kUs, "kernel"),
              X(Int(0), Int(8), "void memcpy_kernel<x>", 100 * kUs, 50 * kUs, "kernel")},
             {},
             false};
  WindowStats w = Aggregate({f}, *WithMemoryFamily());
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].kernels, 1);
  EXPECT_EQ(w.devices[0].kernel_ps, 10 * kUs);
  EXPECT_EQ(w.devices[0].busy_ps, 10 * kUs);
  EXPECT_EQ(w.devices[0].span_ps, 10 * kUs);
  EXPECT_EQ(w.devices[0].streams, 1);
  EXPECT_EQ(w.devices[0].memops, 1);
  EXPECT_EQ(w.devices[0].memop_ps, 50 * kUs);
  // The family row still shows them; totals leave them out.
  EXPECT_EQ(Family(w, "copies").launches, 1);
  EXPECT_EQ(Family(w, "copies").kind, classify::FamilyKind::kMemory);
  EXPECT_EQ(w.total_launches, 1);
  EXPECT_EQ(w.total_kernel_ps, 10 * kUs);
  EXPECT_EQ(w.SumKernelPs(), w.total_kernel_ps);
}

std::vector<TraceEvent> OneGpu(int64_t pid = 1) {
  return {ProcessName(pid, "/device:GPU:0"), ThreadName(pid, 1, "Stream #1"),
          ThreadName(pid, 2, "Stream #2"), ThreadName(pid, 3, "Stream #3")};
}

TEST(FileAggregatorTest, BusyIsTheUnionOverStreams) {
  FileSpec f{"u.json", OneGpu(), {}, false};
  f.events.push_back(Jx(1, 1, "a.kd", 0, 10));
  f.events.push_back(Jx(1, 2, "b.kd", 5, 15));
  f.events.push_back(Jx(1, 1, "a.kd", 30, 10));
  WindowStats w = Aggregate({f}, *Builtin("drill"));
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].busy_ps, 30);
  EXPECT_EQ(w.devices[0].kernel_ps, 35);
  EXPECT_EQ(w.devices[0].span_ps, 40);
  EXPECT_EQ(w.devices[0].streams, 2);
  EXPECT_EQ(w.SumBusyPs(), 30);
}

TEST(FileAggregatorTest, PartialOverlapsOnOneStreamWithoutNesting) {
  FileSpec f{"p.json", OneGpu(), {}, false};
  f.events.push_back(Jx(1, 1, "a.kd", 0, 10));  // [0,10)
  f.events.push_back(Jx(1, 1, "b.kd", 8, 7));   // [8,15)
  f.events.push_back(Jx(1, 1, "a.kd", 14, 6));  // [14,20)
  f.events.push_back(Jx(1, 1, "c.kd", 25, 5));  // [25,30)
  f.events.push_back(Jx(1, 1, "b.kd", 3, 2));   // out of order, inside
  WindowStats w = Aggregate({f}, *Builtin("drill"));
  EXPECT_EQ(w.devices[0].busy_ps, 25);
  EXPECT_EQ(w.devices[0].kernel_ps, 10 + 7 + 6 + 5 + 2);
  EXPECT_EQ(w.devices[0].span_ps, 30);
  EXPECT_EQ(w.devices[0].streams, 1);
}

TEST(FileAggregatorTest, ZeroLengthEventsAreLaunchesWithNoTime) {
  FileSpec f{"z.json", OneGpu(), {}, false};
  f.events.push_back(Jx(1, 1, "a.kd", 100, 0));
  TraceEvent nodur = Jx(1, 2, "a.kd", 150, 0);
  nodur.has_dur = false;
  nodur.dur_exact = false;
  f.events.push_back(nodur);
  f.events.push_back(Jx(1, 1, "b.kd", 200, 50));
  WindowStats w = Aggregate({f}, *Builtin("drill"));
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].kernels, 3);
  EXPECT_EQ(w.devices[0].kernel_ps, 50);
  EXPECT_EQ(w.devices[0].busy_ps, 50);
  EXPECT_EQ(w.devices[0].span_ps, 150);  // from the zero-length launch at 100 to 250
  EXPECT_EQ(w.total_launches, 3);
  EXPECT_EQ(w.families.back().top_kernels.size(), 2u);
}

TEST(FileAggregatorTest, OnlyZeroLengthKernelsStillMakeAGpu) {
  FileSpec f{"z0.json", OneGpu(), {}, false};
  f.events.push_back(Jx(1, 1, "a.kd", 100, 0));
  WindowStats w = Aggregate({f}, *Builtin("drill"));
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].busy_ps, 0);
  EXPECT_EQ(w.devices[0].span_ps, 0);
}

TEST(FileAggregatorTest, BadDurationsAndMissingTimestampsAreDroppedAndCounted) {
  FileSpec f{"b.json", OneGpu(), {}, false};
  f.events.push_back(Jx(1, 1, "neg.kd", 100, -5));
  TraceEvent inexact = Jx(1, 1, "huge.kd", 100, 0);
  inexact.dur_exact = false;
  f.events.push_back(inexact);
  f.events.push_back(Jx(1, 1, "overflow.kd", INT64_MAX - 5, 10));
  TraceEvent nots = Jx(1, 1, "nots.kd", 0, 10);
  nots.has_ts = false;
  f.events.push_back(nots);
  f.events.push_back(Jx(1, 1, "ok.kd", 0, 10));
  f.summary.drops["bad_json"] = 2;
  WindowStats w = Aggregate({f}, *Builtin("drill"));
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].kernels, 1);
  EXPECT_EQ(w.files[0].drops.at("bad_duration"), 3u);
  EXPECT_EQ(w.files[0].drops.at("no_timestamp"), 1u);
  EXPECT_EQ(w.files[0].drops.at("bad_json"), 2u);  // parser drops carried over
}

// A kernel event without a name cannot be classified: it is dropped, and
// counted (it used to vanish without a trace).
TEST(FileAggregatorTest, KernelEventsWithoutANameAreCountedAsDropped) {
  FileSpec f{"n.json", OneGpu(), {}, false};
  f.events.push_back(Jx(1, 1, "", 0, 10));
  TraceEvent unnamed = Jx(1, 1, "x.kd", 20, 10);
  unnamed.has_name = false;
  f.events.push_back(unnamed);
  f.events.push_back(Jx(1, 1, "ok.kd", 40, 10));
  WindowStats w = Aggregate({f}, *Builtin("drill"));
  ASSERT_EQ(w.gpus(), 1);
  EXPECT_EQ(w.devices[0].kernels, 1);
  EXPECT_EQ(w.files[0].drops.at("empty_name"), 2u);
}

TEST(FileAggregatorTest, ExposedCommIsCommNotCoveredByCompute) {
  FileSpec f{"c.json", OneGpu(), {}, false};
  f.events.push_back(Jx(1, 1, "Cijk_gemm", 0, 100));                  // compute [0,100)
  f.events.push_back(Jx(1, 2, "ncclDevKernel_AllReduce", 50, 100));   // comm [50,150)
  f.events.push_back(Jx(1, 2, "ncclDevKernel_AllReduce", 200, 50));   // comm [200,250)
  f.events.push_back(Jx(1, 3, "primus_turbo::deep_ep::x", 220, 10));  // comm, nested
  f.events.push_back(Jx(1, 1, "loop_add_fusion.kd", 240, 20));        // compute [240,260)
  WindowStats w = Aggregate({f}, *Builtin("drill"));
  const DeviceSummary& d = w.devices[0];
  EXPECT_EQ(d.comm_ps, 160);
  EXPECT_EQ(d.exposed_comm_ps, 50 + 40);  // [100,150) + [200,240)
  EXPECT_EQ(d.busy_ps, 150 + 60);
  EXPECT_EQ(w.SumExposedCommPs(), 90);
}

TEST(FileAggregatorTest, TimestampsNearAnEpochBaseStayExact) {
  // Kineto epoch µs with 3 decimals, e.g. 1712195495505582.988, as exact ps
  // relative to the file's base 1712195495505000 µs.
  const int64_t base_rel = 582'988'000;  // 582.988 µs in ps
  FileSpec f{"e.json", {}, {}, false};
  for (int i = 0; i < 1000; ++i) {
    // Back-to-back 0.251 µs kernels with 1 ns gaps: 1000 intervals.
    const int64_t ts = base_rel + i * 252'000;
    f.events.push_back(X(Int(0), Int(7), "k", ts, 251'000, "kernel"));
  }
  f.events.push_back(X(Int(0), Int(8), "k", base_rel + 100, 1, "kernel"));  // inside, 1 ps
  WindowStats w = Aggregate({f}, *Builtin("nvidia"));
  EXPECT_EQ(w.devices[0].busy_ps, 1000 * 251'000);
  EXPECT_EQ(w.devices[0].kernel_ps, 1000 * 251'000 + 1);
  EXPECT_EQ(w.devices[0].span_ps, 999 * 252'000 + 251'000);
}

TEST(MergeWindowTest, FamiliesInClassifierOrderWithZeroRowsAndTopKernels) {
  FileSpec a{"a.json", OneGpu(), {}, false};
  a.events.push_back(Jx(1, 1, "input_scatter_fusion_2.kd", 0, 30));
  a.events.push_back(Jx(1, 1, "input_scatter_fusion_7.kd", 100, 20));
  a.events.push_back(Jx(1, 1, "input_scatter_fusion_1.kd", 200, 20));  // tie with _7
  a.events.push_back(Jx(1, 1, "input_scatter_fusion_9.kd", 300, 5));
  a.events.push_back(Jx(1, 1, "zzz_other", 400, 1));
  FileSpec b{"b.json", OneGpu(), {}, false};
  b.events.push_back(Jx(1, 1, "input_scatter_fusion_9.kd", 0, 40));  // 45 in total
  AggregateOptions opts;
  opts.top_kernels = 3;
  auto c = Builtin("drill");
  WindowStats w = Aggregate({a, b}, *c, opts);
  ASSERT_EQ(w.families.size(), 14u);
  EXPECT_EQ(w.families.front().family, "RaggedAllToAllKernelImpl");
  EXPECT_EQ(w.families.front().launches, 0);
  EXPECT_EQ(w.families.front().kind, classify::FamilyKind::kComm);
  EXPECT_EQ(w.families.back().family, "Other kernels");
  EXPECT_EQ(w.families.back().launches, 1);
  const FamilySummary& s = Family(w, "input_scatter_fusion");
  EXPECT_EQ(s.launches, 5);
  EXPECT_EQ(s.total_ps, 115);
  EXPECT_EQ(s.distinct_kernels, 4);
  ASSERT_EQ(s.top_kernels.size(), 3u);
  EXPECT_EQ(s.top_kernels[0].name, "input_scatter_fusion_9.kd");
  EXPECT_EQ(s.top_kernels[0].total_ps, 45);
  EXPECT_EQ(s.top_kernels[0].launches, 2);
  EXPECT_EQ(s.top_kernels[1].name, "input_scatter_fusion_2.kd");
  EXPECT_EQ(s.top_kernels[2].name, "input_scatter_fusion_1.kd");  // name breaks the tie
  EXPECT_EQ(w.total_kernel_ps, 116);
  EXPECT_EQ(w.total_launches, 6);
  EXPECT_EQ(w.rule_set, "drill");
  opts.top_kernels = 0;
  WindowStats all = Aggregate({a, b}, *c, opts);
  EXPECT_EQ(Family(all, "input_scatter_fusion").top_kernels.size(), 4u);
  EXPECT_EQ(Family(all, "input_scatter_fusion").top_kernels[3].name, "input_scatter_fusion_7.kd");
}

FileSpec GpusFile(std::string path, int gpus) {
  FileSpec f{std::move(path), {}, {}, false};
  static std::vector<std::string> names;  // views must outlive the events
  names.reserve(64);
  for (int g = 0; g < gpus; ++g) {
    if (names.size() <= static_cast<size_t>(g)) names.push_back("/device:GPU:" + std::to_string(g));
    f.events.push_back(ProcessName(g + 1, names[static_cast<size_t>(g)]));
    f.events.push_back(ThreadName(g + 1, 5, "Stream #5"));
    f.events.push_back(Jx(g + 1, 5, "k.kd", 0, 10));
  }
  return f;
}

TEST(MergeWindowTest, LauncherModeFromGpusPerFile) {
  auto c = Builtin("drill");
  WindowStats node =
      Aggregate({GpusFile("h0.trace.json.gz", 8), GpusFile("h1.trace.json.gz", 8)}, *c);
  EXPECT_EQ(node.gpus(), 16);
  EXPECT_EQ(node.launcher_mode, LauncherMode::kOneNodePerProcess);
  EXPECT_DOUBLE_EQ(node.gpus_per_file, 8.0);
  EXPECT_EQ(node.divisor(), 48);
  std::vector<FileSpec> four;
  for (int i = 0; i < 4; ++i) four.push_back(GpusFile("h0.proc" + std::to_string(i), 1));
  WindowStats gpu = Aggregate(four, *c);
  EXPECT_EQ(gpu.launcher_mode, LauncherMode::kOneGpuPerProcess);
  EXPECT_DOUBLE_EQ(gpu.gpus_per_file, 1.0);
  four[3] = GpusFile("h0.proc3", 0);
  WindowStats mixed = Aggregate(four, *c);
  EXPECT_EQ(mixed.gpus(), 3);
  EXPECT_EQ(mixed.launcher_mode, LauncherMode::kMixed);
  EXPECT_DOUBLE_EQ(mixed.gpus_per_file, 0.75);
  WindowStats none = Aggregate({GpusFile("x", 0)}, *c);
  EXPECT_EQ(none.launcher_mode, LauncherMode::kUnknown);
  EXPECT_EQ(none.divisor(), 0);
  EXPECT_EQ(none.families.size(), 14u);  // rows even without kernels
}

TEST(MergeWindowTest, DevicesSortedByFileThenNaturalDeviceOrder) {
  auto c = Builtin("drill");
  WindowStats w = Aggregate({GpusFile("b.json", 12), GpusFile("a.json", 2)}, *c);
  ASSERT_EQ(w.gpus(), 14);
  EXPECT_EQ(w.devices[0].file, "b.json");  // window order of files
  EXPECT_EQ(w.devices[1].device, "/device:GPU:1");
  EXPECT_EQ(w.devices[2].device, "/device:GPU:2");
  EXPECT_EQ(w.devices[11].device, "/device:GPU:11");
  EXPECT_EQ(w.devices[12].file, "a.json");
  // The per-GPU-per-step figure: 14 GPUs x 3 steps, 10 ps each.
  EXPECT_DOUBLE_EQ(w.PerGpuStepSeconds(w.total_kernel_ps), 140e-12 / 42);
}

TEST(MergeWindowTest, TimestampDirsEventsAndTruncation) {
  auto c = Builtin("drill");
  FileSpec a = GpusFile("/r/plugins/profile/2024_05_01_10_00_03/h1.trace.json.gz", 1);
  FileSpec b = GpusFile("/r/plugins/profile/2024_05_01_10_00_01/h0.trace.json.gz", 1);
  FileSpec d = GpusFile("/r/plugins/profile/2024_05_01_10_00_01/h2.trace.json.gz", 1);
  FileSpec e = GpusFile("/elsewhere/h3.trace.json.gz", 1);
  a.summary.events = 100;
  b.summary.events = 50;
  WindowStats w = Aggregate({a, b, d, e}, *c);
  EXPECT_EQ(w.timestamp_dirs, (std::vector<std::string>{"/r/plugins/profile/2024_05_01_10_00_01",
                                                        "/r/plugins/profile/2024_05_01_10_00_03"}));
  EXPECT_EQ(w.events, 100u + 50u + 3u + 3u);
  EXPECT_FALSE(w.truncated);
  b.summary.suspected_truncated = true;
  EXPECT_TRUE(Aggregate({a, b}, *c).truncated);
  b.summary.suspected_truncated = false;
  b.partial = true;
  WindowStats p = Aggregate({a, b}, *c);
  EXPECT_TRUE(p.truncated);
  EXPECT_TRUE(p.files[1].partial);
}

TEST(FileAggregatorTest, KinetoProfilerStepsBecomeStepSpans) {
  FileSpec a{"a.json", {}, {}, false};
  const int64_t ms = 1'000'000'000;
  a.events.push_back(X(Int(100), Int(100), "ProfilerStep#4", 0, 10 * ms, "user_annotation"));
  a.events.push_back(X(Int(100), Int(100), "ProfilerStep#5", 10 * ms, 20 * ms, "user_annotation"));
  a.events.push_back(X(Int(0), Int(7), "ProfilerStep#5", 0, 99 * ms, "gpu_user_annotation"));
  a.events.push_back(X(Int(100), Str("100"), "ProfilerStep#6", 30 * ms, 30 * ms, "Operator"));
  FileSpec b{"b.json", {}, {}, false};
  b.events.push_back(X(Int(200), Int(200), "ProfilerStep#4", 0, 12 * ms, "user_annotation"));
  b.events.push_back(X(Int(200), Int(200), "ProfilerStep#5", 0, 18 * ms, "user_annotation"));
  b.events.push_back(X(Int(200), Int(200), "ProfilerStep#6", 0, 40 * ms, "user_annotation"));
  WindowStats w = Aggregate({a, b}, *Builtin("nvidia"));
  ASSERT_EQ(w.trace_steps.size(), 6u);
  EXPECT_EQ(w.files[w.trace_steps[0].file].path, "a.json");
  EXPECT_EQ(w.files[w.trace_steps[3].file].path, "b.json");
  EXPECT_EQ(w.trace_steps[0].step, 4);
  EXPECT_EQ(w.trace_steps[0].dur_ps, 10 * ms);
  EXPECT_EQ(w.trace_steps[2].step, 6);
  EXPECT_DOUBLE_EQ(w.TraceStepSeconds(), 0.020);  // steps 12, 20, 40 ms
  EXPECT_EQ(w.gpus(), 0);
}

TEST(FileAggregatorTest, StepsThreadEventsBecomeStepSpans) {
  FileSpec f{"x.json", OneGpu(), {}, false};
  f.events.push_back(ThreadName(1, 50, "Steps"));
  f.events.push_back(Jx(1, 50, "7", 0, 100));
  f.events.push_back(Jx(1, 50, "8", 100, 300));
  f.events.push_back(Jx(1, 50, "train", 400, 200));
  f.events.push_back(Jx(1, 1, "k.kd", 0, 10));
  WindowStats w = Aggregate({f}, *Builtin("drill"));
  ASSERT_EQ(w.trace_steps.size(), 3u);
  EXPECT_EQ(w.trace_steps[0].step, 7);
  EXPECT_EQ(w.trace_steps[1].step, 8);
  EXPECT_EQ(w.trace_steps[1].dur_ps, 300);
  EXPECT_EQ(w.trace_steps[2].step, -1);
  EXPECT_EQ(w.devices[0].kernels, 1);  // the Steps line is not a stream
}

TEST(FileAggregatorTest, KernelNamesListsDistinctKernelNamesUpToLimit) {
  FileAggregator agg("k.json");
  for (const auto& e : OneGpu()) agg.OnEvent(e);
  std::string name = "transient_buffer_name.kd";
  TraceEvent e = Jx(1, 1, name, 0, 1);
  agg.OnEvent(e);
  name = "overwritten_after_the_call";  // the aggregator must have copied it
  agg.OnEvent(Jx(1, 1, "b.kd", 0, 1));
  agg.OnEvent(Jx(1, 1, "b.kd", 5, 1));
  agg.OnEvent(Jx(1, 1, "MemcpyD2D", 5, 1));
  EXPECT_EQ(agg.KernelNames(10), (std::vector<std::string>{"transient_buffer_name.kd", "b.kd"}));
  EXPECT_EQ(agg.KernelNames(1).size(), 1u);
  auto stats = agg.Finish({}, false, *Builtin("drill"));
  WindowStats w = MergeWindow({stats}, *Builtin("drill"), {});
  EXPECT_EQ(w.families.back().top_kernels.front().name, "b.kd");
}

}  // namespace
}  // namespace profwatch::aggregate

namespace profwatch::aggregate {
namespace {

// The blocker candidates (diagnosis.h): outside math and memory, alone for
// at least half their time, 1 ms or more alone per call on average.
TEST(MergeWindowTest, SerialKernelsAreLongLoneCallsOutsideMath) {
  constexpr int64_t kMs = 1000 * kUs;
  FileSpec f{"s.json", OneGpu(), {}, false};
  auto& ev = f.events;
  int64_t t = 0;
  auto alone = [&](std::string_view name, int64_t dur) {
    ev.push_back(Jx(1, 1, name, t, dur));
    t += dur + kUs;
  };
  alone("RaggedAllToAllKernelImpl", 30 * kMs);  // comm, alone, long: a candidate
  alone("RaggedAllToAllKernelImpl", 20 * kMs);
  alone("Cijk_gemm_big", 40 * kMs);           // math: never
  alone("loop_add_fusion.kd", 999 * kUs);     // alone but under 1 ms a call
  alone("input_scatter_fusion.kd", 1 * kMs);  // exactly 1 ms: a candidate
  alone("FillBuffer", 5 * kMs);               // a memory op: never
  // Overlapped by a compute kernel on another stream for more than half of
  // its 4 ms: alone 1.9 ms in one call, so not a candidate.
  ev.push_back(Jx(1, 1, "loop_select_fusion.kd", t, 4 * kMs));
  ev.push_back(Jx(1, 2, "loop_convert_fusion.kd", t + 1900 * kUs, 2100 * kUs + 1));
  t += 5 * kMs;
  // Alone for less than half its time: not a candidate.
  ev.push_back(Jx(1, 1, "loop_reduce_fusion.kd", t, 4 * kMs));
  ev.push_back(Jx(1, 2, "loop_gather_fusion.kd", t, 3 * kMs));
  WindowStats w = Aggregate({f}, *Builtin("amd"));
  ASSERT_EQ(w.serial_kernels.size(), 2u);
  EXPECT_EQ(w.serial_kernels[0].name, "RaggedAllToAllKernelImpl");
  EXPECT_EQ(w.serial_kernels[0].family, "comm_other");
  EXPECT_EQ(w.serial_kernels[0].launches, 2);
  EXPECT_EQ(w.serial_kernels[0].exclusive_ps, 50 * kMs);
  EXPECT_EQ(w.serial_kernels[1].name, "input_scatter_fusion.kd");
  EXPECT_EQ(w.serial_kernels[1].exclusive_ps, 1 * kMs);
  // The device's idle gaps, longest first: around the memory op (not a
  // kernel: idle for the sweep), after the overlapped pair (1 ms less 1 ps),
  // then the 1 µs gaps between the lone kernels.
  EXPECT_EQ(w.devices[0].largest_gaps_ps,
            (std::vector<int64_t>{5 * kMs + 2 * kUs, kMs - 1, kUs, kUs, kUs, kUs}));
}

}  // namespace
}  // namespace profwatch::aggregate

namespace profwatch::aggregate {
namespace {

// A Kineto kernel with the collective args of PyTorch 2.1 and later.
TraceEvent Comm(std::string_view kernel, int64_t ts, int64_t dur, std::string_view collective,
                std::string_view dtype, int64_t in, int64_t out, int64_t group) {
  TraceEvent e = X(Int(0), Int(7), kernel, ts, dur, "kernel");
  e.args_collective = collective;
  e.args_dtype = dtype;
  e.args_in_nelems = in;
  e.args_out_nelems = out;
  e.args_group_size = group;
  return e;
}

// Kind from the metadata first (one kernel name, two kinds), the kernel name
// second, other otherwise; bytes only from sized calls; exposed per kind
// against the compute union, each kind charged where kinds overlap.
TEST(FileAggregatorTest, CollectivesByKindWithBytesAndExposedTime) {
  FileSpec f{"rank0.pt.trace.json", {}, {}, false};
  auto& ev = f.events;
  ev.push_back(X(Int(0), Int(8), "nvjet_gemm", 0, 100 * kUs, "kernel"));  // compute [0,100)
  // SendRecv kernels: one all_to_allv, one send (a stream of their own).
  ev.push_back(Comm("ncclDevKernel_SendRecv(x)", 50 * kUs, 100 * kUs, "all_to_allv", "BFloat16",
                    1000, 1000, 4));  // [50,150): 50 exposed
  ev.push_back(Comm("ncclDevKernel_SendRecv(x)", 200 * kUs, 10 * kUs, "send", "Float", 256, 256,
                    2));  // [200,210): 10 exposed
  // No metadata: the kernel name says all_gather; no bytes, no bandwidth.
  ev.push_back(X(Int(0), Int(9), "ncclDevKernel_AllGather_RING_LL(x)", 140 * kUs, 20 * kUs,
                 "kernel"));  // [140,160): 20 exposed, 10 of them with the all-to-all
  // An unknown dtype: a call without a size.
  ev.push_back(Comm("ncclKernel_AllReduce_RING_LL_Sum_float(x)", 300 * kUs, 10 * kUs, "allreduce",
                    "Mystery", 10, 10, 8));
  // RCCL's generic kernel without metadata: other.
  ev.push_back(X(Int(0), Int(7), "ncclDevKernel_Generic_4(x)", 400 * kUs, 5 * kUs, "kernel"));
  const WindowStats w = Aggregate({f}, *Builtin("nvidia"));
  const CollectiveStats& c = w.collectives;
  const CollectiveSums& a2a = c[CollectiveKind::kAllToAll];
  EXPECT_EQ(a2a.calls, 1);
  EXPECT_EQ(a2a.kernel_ps, 100 * kUs);
  EXPECT_EQ(a2a.exposed_ps, 50 * kUs);
  EXPECT_EQ(a2a.bytes, 2000.0);
  EXPECT_DOUBLE_EQ(*a2a.AlgBandwidth(), 2000 / 100e-6);
  EXPECT_DOUBLE_EQ(*a2a.BusBandwidth(), 2000 * 0.75 / 100e-6);
  const CollectiveSums& sr = c[CollectiveKind::kSendRecv];
  EXPECT_EQ(sr.calls, 1);
  EXPECT_EQ(sr.exposed_ps, 10 * kUs);
  EXPECT_EQ(sr.bytes, 1024.0);
  EXPECT_DOUBLE_EQ(*sr.BusBandwidth(), 1024 / 10e-6);
  const CollectiveSums& ag = c[CollectiveKind::kAllGather];
  EXPECT_EQ(ag.calls, 1);
  EXPECT_EQ(ag.exposed_ps, 20 * kUs);
  EXPECT_EQ(ag.sized_calls, 0);
  EXPECT_EQ(ag.AlgBandwidth(), std::nullopt);
  EXPECT_TRUE(ag.group_sizes.empty());
  const CollectiveSums& ar = c[CollectiveKind::kAllReduce];
  EXPECT_EQ(ar.calls, 1);
  EXPECT_EQ(ar.sized_calls, 0);
  EXPECT_EQ(ar.BusBandwidth(), std::nullopt);
  EXPECT_EQ(ar.group_sizes, std::vector<int64_t>{8});
  EXPECT_EQ(c[CollectiveKind::kOther].calls, 1);
  EXPECT_EQ(c[CollectiveKind::kOther].exposed_ps, 5 * kUs);
  // Exposed comm of the device counts overlapping kinds once.
  EXPECT_EQ(w.devices[0].exposed_comm_ps, (60 + 10 + 10 + 5) * kUs);
}

// Older Kineto: the kernels carry no collective args, their
// record_param_comms operator does; Kineto links the two by External id.
// The operator's metadata says all_to_all for a SendRecv kernel and gives
// its size and process group; a kernel with no operator of its id keeps the
// kind its name says, with no size; an operator after its kernel is not
// used (documented: Kineto writes operators first).
TEST(FileAggregatorTest, RecordParamCommsGivesItsKernelsTheirCollective) {
  FileSpec f{"rank0.pt.trace.json", {}, {}, false};
  auto& ev = f.events;
  auto op = [](int64_t id, std::string_view collective, std::string_view desc) {
    TraceEvent e = X(Int(3141), Int(3141), "record_param_comms", 0, kUs, "cpu_op");
    e.args_external_id = id;
    e.has_args_external_id = true;
    e.args_collective = collective;
    e.args_dtype = "BFloat16";
    e.args_in_nelems = e.args_out_nelems = 1000;
    e.args_group_size = 4;
    e.args_pg_desc = desc;
    e.args_pg_ranks = "[0, 2, 4, 6]";
    return e;
  };
  auto kernel = [](std::string_view name, int64_t ts, int64_t id) {
    TraceEvent e = X(Int(0), Int(20), name, ts, 10 * kUs, "kernel");
    e.args_external_id = id;
    e.has_args_external_id = true;
    return e;
  };
  ev.push_back(op(11, "all_to_allv", "ep"));
  ev.push_back(op(12, "all_to_allv", "undefined"));
  ev.push_back(kernel("ncclDevKernel_SendRecv(x)", 100 * kUs, 11));
  ev.push_back(kernel("ncclDevKernel_SendRecv(x)", 200 * kUs, 12));
  ev.push_back(kernel("ncclDevKernel_SendRecv(x)", 300 * kUs, 13));  // no operator 13
  ev.push_back(kernel("ncclDevKernel_SendRecv(x)", 400 * kUs, 14));
  ev.push_back(op(14, "allreduce", "dp"));  // after its kernel
  const WindowStats w = Aggregate({f}, *Builtin("nvidia"));
  const CollectiveSums& a2a = w.collectives[CollectiveKind::kAllToAll];
  EXPECT_EQ(a2a.calls, 2);
  EXPECT_EQ(a2a.sized_calls, 2);
  EXPECT_EQ(a2a.bytes, 4000.0);
  EXPECT_DOUBLE_EQ(*a2a.BusBandwidth(), 4000 * 0.75 / 20e-6);
  EXPECT_EQ(a2a.group_sizes, std::vector<int64_t>{4});
  ASSERT_EQ(a2a.process_groups.size(), 1u);  // "undefined" names none
  EXPECT_EQ(a2a.process_groups[0].description, "ep");
  EXPECT_EQ(a2a.process_groups[0].ranks, "[0, 2, 4, 6]");
  const CollectiveSums& sr = w.collectives[CollectiveKind::kSendRecv];
  EXPECT_EQ(sr.calls, 2);
  EXPECT_EQ(sr.sized_calls, 0);
  EXPECT_EQ(w.collectives[CollectiveKind::kAllReduce].calls, 0);
}

// JAX: a kernel's hlo_op names its collective, so RCCL's generic kernel is
// the all-gather its instruction is; a fusion's hlo_op says nothing.
TEST(FileAggregatorTest, JaxHloOpNamesTheCollective) {
  FileSpec f{"j.trace.json", OneGpu(), {}, false};
  TraceEvent ag = Jx(1, 2, "ncclDevKernel_Generic_4(x)", 0, 10);
  ag.args_hlo_op = "all-gather-start.3";
  f.events.push_back(ag);
  TraceEvent cp = Jx(1, 2, "ncclDevKernel_Generic_4(x)", 20, 10);
  cp.args_hlo_op = "collective-permute-start.1";
  f.events.push_back(cp);
  TraceEvent fusion = Jx(1, 1, "loop_add_fusion", 0, 5);
  fusion.args_hlo_op = "loop_add_fusion";
  f.events.push_back(fusion);
  f.events.push_back(Jx(1, 2, "ncclDevKernel_Generic_4(x)", 40, 10));  // no hlo_op: other
  const WindowStats w = Aggregate({f}, *Builtin("amd"));
  EXPECT_EQ(w.collectives[CollectiveKind::kAllGather].calls, 1);
  EXPECT_EQ(w.collectives[CollectiveKind::kAllGather].exposed_ps, 5);
  EXPECT_EQ(w.collectives[CollectiveKind::kSendRecv].calls, 1);
  EXPECT_EQ(w.collectives[CollectiveKind::kOther].calls, 1);
  EXPECT_EQ(w.collectives[CollectiveKind::kOther].kernel_ps, 10);
}

}  // namespace
}  // namespace profwatch::aggregate
