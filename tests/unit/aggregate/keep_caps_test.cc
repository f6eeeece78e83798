// What one file and one window keep is bounded where it is read
// (aggregate/name_table.h, kernel_table.h): names cut past their length and
// judged on their whole text first, names past the file's and the window's
// caps summed under "other kernel names" with their time, devices and steps
// capped; every cut counted by reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aggregate/aggregator.h"
#include "aggregate/kernel_table.h"
#include "aggregate/name_table.h"

namespace profwatch::aggregate {
// Named for this file: the unity build compiles it with its neighbours.
namespace keep_caps_test {

using classify::Classifier;
using parse::Id;
using parse::IdKind;
using parse::TraceEvent;

constexpr int64_t kUs = 1'000'000;  // ps per µs

Id Int(int64_t v) { return Id{IdKind::kInt, v, {}}; }

// A Kineto kernel on device `dev`, stream 7.
TraceEvent Kernel(int64_t dev, std::string_view name, int64_t ts_ps, int64_t dur_ps) {
  TraceEvent e;
  e.ph = 'X';
  e.has_name = true;
  e.name = name;
  e.cat = "kernel";
  e.pid = Int(dev);
  e.tid = Int(7);
  e.has_ts = true;
  e.ts_ps = ts_ps;
  e.has_dur = true;
  e.dur_exact = true;
  e.dur_ps = dur_ps;
  return e;
}

std::shared_ptr<const Classifier> Builtin(std::string_view name) {
  return *Classifier::Create(*classify::BuiltinRuleSet(name));
}

// One file's events through an aggregator sharing `names`.
std::shared_ptr<FileStats> File(const std::string& path, const std::vector<std::string>& names,
                                const std::shared_ptr<WindowNames>& pool, const Classifier& c,
                                int64_t dev = 0) {
  FileAggregator agg(path, FileAggregator::kDefaultIntervalBudget, "/tmp", pool);
  int64_t ts = 0;
  for (const std::string& n : names) {
    agg.OnEvent(Kernel(dev, n, ts, 2 * kUs));
    ts += 3 * kUs;
  }
  parse::ParseSummary summary;
  summary.events = names.size();
  return agg.Finish(summary, false, c);
}

const FamilySummary& Family(const WindowStats& w, std::string_view name) {
  for (const auto& f : w.families) {
    if (f.family == name) return f;
  }
  ADD_FAILURE() << "no family " << name;
  static FamilySummary none;
  return none;
}

uint64_t Drops(const WindowStats& w, const std::string& reason) {
  uint64_t n = 0;
  for (const FileSummary& f : w.files) {
    auto it = f.drops.find(reason);
    if (it != f.drops.end()) n += it->second;
  }
  return n;
}

TEST(CutNameTest, KeepsShortNamesAndCutsLongOnesAtACharacterWithTheirLengthAndHash) {
  EXPECT_EQ(CutName("gemm_kernel", 64), "gemm_kernel");
  const std::string a = std::string(5000, 'a') + "_one", b = std::string(5000, 'a') + "_two";
  const std::string ca = CutName(a, 256), cb = CutName(b, 256);
  EXPECT_LE(ca.size(), 256u);
  EXPECT_NE(ca, cb) << "two long names of one prefix stay two";
  EXPECT_EQ(ca.substr(0, 100), std::string(100, 'a'));
  EXPECT_NE(ca.find("[5004 bytes #"), std::string::npos) << ca;
  EXPECT_EQ(CutName(a, 256), ca) << "deterministic";
  // 'é' is two bytes: a cut never leaves half of one.
  std::string accents;
  for (int i = 0; i < 300; ++i) accents += "\xC3\xA9";
  const std::string cut = CutName(accents, 101);
  const size_t marker = cut.find("\xE2\x80\xA6");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_EQ(marker % 2, 0u) << "the kept head is whole characters";
}

TEST(WindowNamesTest, ANameKeptByManyFilesIsChargedOnceAndTheCapsHold) {
  NameLimits limits;
  limits.max_names_per_window = 3;
  limits.max_name_bytes_per_window = 1000;
  WindowNames pool(limits);
  auto a1 = pool.Keep("alpha"), a2 = pool.Keep("alpha");
  ASSERT_TRUE(a1 && a2);
  EXPECT_EQ(a1->data(), a2->data()) << "one copy";
  EXPECT_TRUE(pool.Keep("beta"));
  EXPECT_TRUE(pool.Keep("gamma"));
  EXPECT_FALSE(pool.Keep("delta")) << "fourth distinct name";
  EXPECT_TRUE(pool.Keep("beta")) << "a kept name is still found";
  EXPECT_EQ(pool.names(), 3u);
  WindowNames small({16 << 10, 100, 100, 10});
  EXPECT_TRUE(small.Keep("0123456789"));
  EXPECT_FALSE(small.Keep("x")) << "bytes cap";
  NameTable t(&small);
  EXPECT_FALSE(t.Add("y").has_value());
  EXPECT_EQ(t[t.AddUnindexed("(other)")], "(other)") << "other entries are kept anyway";
}

// A kernel name past the length cap is kept cut, but its family comes from
// the whole name: here the NCCL marker lies past the cut.
TEST(KeepCapsTest, ALongNameIsKeptCutAndClassifiedOnItsWholeName) {
  auto c = Builtin("nvidia");
  NameLimits limits;
  limits.max_name_bytes = 1024;
  auto pool = std::make_shared<WindowNames>(limits, std::vector{c});
  const std::string nccl = std::string(4000, 'x') + "_ncclDevKernel_AllReduce_Sum_bf16";
  const std::string gemm = std::string(4000, 'x') + "_gemm";
  WindowStats w = MergeWindow({File("f", {nccl, nccl, gemm}, pool, *c)}, *c, {});
  const FamilySummary& comm = Family(w, "nccl");
  EXPECT_EQ(comm.launches, 2);
  ASSERT_EQ(comm.top_kernels.size(), 1u);
  EXPECT_LE(comm.top_kernels[0].name.size(), 1024u);
  EXPECT_EQ(comm.top_kernels[0].name.substr(0, 10), "xxxxxxxxxx");
  EXPECT_EQ(Family(w, "gemm").launches, 1);
  EXPECT_EQ(w.total_kernel_ps, 3 * 2 * kUs);
  EXPECT_EQ(Drops(w, "name_cut"), 3u) << "each event with a cut name";
  // The collective kind too comes from the whole name.
  EXPECT_EQ(w.collectives[CollectiveKind::kAllReduce].calls, 2);
}

// Past the file's cap, new names keep their time under one "other kernel
// names" entry per family (each judged on its whole name): nothing is lost.
TEST(KeepCapsTest, NamesPastTheFileCapKeepTheirTimeUnderOtherNamesOfTheirFamily) {
  auto c = Builtin("nvidia");
  NameLimits limits;
  limits.max_names_per_file = 3;
  auto pool = std::make_shared<WindowNames>(limits, std::vector{c});
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) names.push_back("triton_poi_fused_" + std::to_string(i));
  names.push_back("ncclDevKernel_AllGather_RING_LL");
  names.push_back("ncclDevKernel_AllGather_RING_LL");  // the same uncounted name twice
  names.push_back("ncclKernel_Broadcast");
  WindowStats w = MergeWindow({File("f", names, pool, *c)}, *c, {});
  EXPECT_EQ(w.total_kernel_ps, static_cast<int64_t>(names.size()) * 2 * kUs) << "no time lost";
  EXPECT_EQ(w.total_launches, static_cast<int64_t>(names.size()));
  const FamilySummary& triton = Family(w, "triton");
  EXPECT_EQ(triton.launches, 8);
  EXPECT_EQ(triton.distinct_kernels, 4) << "3 kept names and the other entry";
  const FamilySummary& comm = Family(w, "nccl");
  EXPECT_EQ(comm.launches, 3);
  ASSERT_EQ(comm.top_kernels.size(), 1u);
  EXPECT_EQ(comm.top_kernels[0].name, KernelTable::kOtherKernelNames);
  EXPECT_EQ(Drops(w, "name_limit"), 8u) << "every event past the cap";
  EXPECT_EQ(w.collectives[CollectiveKind::kAllGather].calls, 2) << "kind from the whole name";
}

// The window's cap is shared by its files: a name two files keep costs
// once; a name new to the full window goes to other names.
TEST(KeepCapsTest, TheWindowCapIsSharedByItsFiles) {
  auto c = Builtin("nvidia");
  NameLimits limits;
  limits.max_names_per_window = 2;
  auto pool = std::make_shared<WindowNames>(limits, std::vector{c});
  auto f1 = File("a", {"gemm_a", "gemm_b"}, pool, *c);
  auto f2 = File("b", {"gemm_b", "gemm_a", "gemm_c"}, pool, *c);
  WindowStats w = MergeWindow({f1, f2}, *c, {});
  EXPECT_EQ(Drops(w, "name_limit"), 1u);
  const FamilySummary& gemm = Family(w, "gemm");
  EXPECT_EQ(gemm.launches, 5);
  EXPECT_EQ(gemm.distinct_kernels, 3);
  EXPECT_EQ(pool->names(), 3u) << "two names and the other entry";
}

// The window's (device, name) slots are shared by its files, however many:
// past them a device's further names keep their time under its other-names
// slot of their family, counted per event; a pair that has its slot keeps
// it. Family figures are the same as without the cap.
TEST(KeepCapsTest, DeviceNamePairsPastTheWindowsCapGoToOtherNamesOfTheirFamily) {
  auto c = Builtin("nvidia");
  const std::vector<std::string> names = {"gemm_a", "gemm_b", "ncclDevKernel_AllReduce", "gemm_c"};
  auto window = [&](NameLimits limits) {
    auto pool = std::make_shared<WindowNames>(limits, std::vector{c});
    std::vector<std::shared_ptr<FileStats>> files;
    for (int f = 0; f < 3; ++f) {
      for (int64_t dev = 0; dev < 2; ++dev) {
        files.push_back(
            File("f" + std::to_string(f) + "d" + std::to_string(dev), names, pool, *c, dev));
      }
    }
    return MergeWindow(files, *c, {});
  };
  const WindowStats all = window(NameLimits{});
  NameLimits limits;
  limits.max_device_names_per_window = 5;  // of 6 files x 4 pairs
  const WindowStats capped = window(limits);
  EXPECT_EQ(Drops(all, "device_name_limit"), 0u);
  EXPECT_EQ(Drops(capped, "device_name_limit"), 24u - 5u) << "every event past the cap";
  EXPECT_EQ(capped.total_kernel_ps, all.total_kernel_ps);
  EXPECT_EQ(capped.total_launches, all.total_launches);
  for (const FamilySummary& f : all.families) {
    EXPECT_EQ(Family(capped, f.family).total_ps, f.total_ps) << f.family;
    EXPECT_EQ(Family(capped, f.family).launches, f.launches) << f.family;
  }
  const FamilySummary& nccl = Family(capped, "nccl");
  ASSERT_EQ(nccl.top_kernels.size(), 2u);  // the first file's slot and the others' entry
  EXPECT_EQ(nccl.top_kernels[0].name, KernelTable::kOtherKernelNames);
  EXPECT_EQ(nccl.top_kernels[0].launches, 5);
  EXPECT_EQ(nccl.top_kernels[1].name, "ncclDevKernel_AllReduce");
  EXPECT_EQ(capped.collectives[CollectiveKind::kAllReduce].calls,
            all.collectives[CollectiveKind::kAllReduce].calls)
      << "kind judged on the name";
}

// A window's step markers are capped over all its files.
TEST(KeepCapsTest, StepMarkersPastTheWindowsCapAreDroppedAndCounted) {
  auto c = Builtin("nvidia");
  NameLimits limits;
  limits.max_steps_per_window = 5;
  auto pool = std::make_shared<WindowNames>(limits, std::vector{c});
  std::vector<std::shared_ptr<FileStats>> files;
  for (int f = 0; f < 2; ++f) {
    FileAggregator agg("f" + std::to_string(f), FileAggregator::kDefaultIntervalBudget, "/tmp",
                       pool);
    agg.OnEvent(Kernel(0, "gemm", 0, kUs));
    for (int s = 0; s < 4; ++s) {
      const std::string name = "ProfilerStep#" + std::to_string(s);
      TraceEvent e = Kernel(0, name, s * 10 * kUs, kUs);
      e.cat = "cpu_op";
      agg.OnEvent(e);
    }
    parse::ParseSummary summary;
    files.push_back(agg.Finish(summary, false, *c));
  }
  WindowStats w = MergeWindow(files, *c, {});
  EXPECT_EQ(w.trace_steps.size(), 5u);
  EXPECT_EQ(Drops(w, "step_limit"), 3u);
}

TEST(KeepCapsTest, DevicesAndStepsPastTheirCapsAreDroppedAndCounted) {
  auto c = Builtin("nvidia");
  auto pool = std::make_shared<WindowNames>(NameLimits{}, std::vector{c});
  FileAggregator agg("f", FileAggregator::kDefaultIntervalBudget, "/tmp", pool);
  const int64_t devices = static_cast<int64_t>(kMaxDevices) + 5;
  for (int64_t d = 0; d < devices; ++d) agg.OnEvent(Kernel(d, "gemm", 0, kUs));
  const size_t steps = kMaxSteps + 3;
  for (size_t s = 0; s < steps; ++s) {
    TraceEvent e = Kernel(0, "ProfilerStep#" + std::to_string(s), 0, kUs);
    std::string name = "ProfilerStep#" + std::to_string(s);
    e.name = name;
    e.cat = "cpu_op";
    agg.OnEvent(e);
  }
  parse::ParseSummary summary;
  WindowStats w = MergeWindow({agg.Finish(summary, false, *c)}, *c, {});
  EXPECT_EQ(w.gpus(), static_cast<int>(kMaxDevices));
  EXPECT_EQ(Drops(w, "device_limit"), 5u);
  EXPECT_EQ(w.trace_steps.size(), kMaxSteps);
  EXPECT_EQ(Drops(w, "step_limit"), 3u);
}

}  // namespace keep_caps_test
}  // namespace profwatch::aggregate
