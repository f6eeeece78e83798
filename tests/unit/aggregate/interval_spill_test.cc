#include "aggregate/interval_spill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "aggregate/aggregator.h"
#include "aggregate/intervals.h"
#include "core/budget.h"
#include "testing/interval_reference.h"
#include "testing/test_util.h"

namespace profwatch::aggregate {
// Named for this file: the unity build compiles it with its neighbours.
namespace interval_spill_test {

using parse::Id;
using parse::IdKind;
using parse::TraceEvent;

using profwatch::testing::DifferenceLength;
using profwatch::testing::ReferenceUnion;

// A sorted run of random intervals, overlaps and equal starts included.
std::vector<Interval> RandomSortedRun(std::mt19937_64& rng, size_t n, int64_t horizon) {
  std::uniform_int_distribution<int64_t> pos(0, horizon), len(1, horizon / 50 + 1);
  std::vector<Interval> v;
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = pos(rng);
    v.push_back({s, s + len(rng)});
  }
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  return v;
}

using Tagged = std::tuple<int64_t, int64_t, uint32_t>;

// Every interval of the stream with its tag, checking start order on the way.
std::vector<Tagged> Drain(MergeStream& s) {
  std::vector<Tagged> out;
  Interval i;
  uint32_t tag = 0;
  while (s.Next(&i, &tag)) {
    if (!out.empty()) {
      EXPECT_LE(std::get<0>(out.back()), i.start);
    }
    out.emplace_back(i.start, i.end, tag);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Tagged> Expected(const std::vector<std::vector<Interval>>& runs,
                             const std::vector<uint32_t>& tags) {
  std::vector<Tagged> out;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const Interval& i : runs[r]) out.emplace_back(i.start, i.end, tags[r]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The spill file goes where the caller says (the CLI's --spill-dir), and a
// directory that cannot take one is a clear error naming it.
TEST(SpillFileTest, IsCreatedInTheGivenDirectoryOrNamesIt) {
  profwatch::testing::TempDir tmp;
  auto file = SpillFile::Create(tmp.path().string());
  ASSERT_TRUE(file.has_value()) << file.error().ToString();
  std::vector<Interval> a = {{3, 4}};
  ASSERT_TRUE((*file)->Write(a.data(), a.size()));
  EXPECT_EQ((*file)->size(), 1u);
  auto missing = SpillFile::Create(tmp.Sub("no/such/dir"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_NE(missing.error().context.find(tmp.Sub("no/such/dir")), std::string::npos)
      << missing.error().context;
}

TEST(SpillFileTest, RunsReadBackExactly) {
  auto file = SpillFile::Create();
  ASSERT_TRUE(file.has_value()) << file.error().ToString();
  std::vector<Interval> a = {{1, 2}, {5, 9}}, b = {{-7, 100}};
  auto ra = (*file)->Write(a.data(), a.size());
  auto rb = (*file)->Write(b.data(), b.size());
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(rb->offset, 2u);
  EXPECT_EQ((*file)->size(), 3u);
  RunCursor c = RunCursor::File(file->get(), *ra, 1);  // 1-interval buffer: refills
  Interval i;
  ASSERT_TRUE(c.Next(&i));
  EXPECT_EQ(i.start, 1);
  ASSERT_TRUE(c.Next(&i));
  EXPECT_EQ(i.end, 9);
  EXPECT_FALSE(c.Next(&i));
  EXPECT_FALSE(c.error().has_value());
}

// A merge holds a cursor per spilled run but reads max_fan_in at a time: a
// file cursor's buffer comes with its first read, sized at most to its run.
TEST(SpillFileTest, FileCursorsBufferFromTheirFirstReadOn) {
  auto file = SpillFile::Create();
  ASSERT_TRUE(file.has_value());
  std::vector<Interval> a = {{1, 2}, {5, 9}, {10, 11}};
  auto ra = (*file)->Write(a.data(), a.size());
  ASSERT_TRUE(ra);
  std::vector<RunCursor> cursors;
  for (int k = 0; k < 1000; ++k) cursors.push_back(RunCursor::File(file->get(), *ra, 4096));
  size_t held = 0;
  for (const RunCursor& c : cursors) held += c.buffered();
  EXPECT_EQ(held, 0u);
  Interval i;
  ASSERT_TRUE(cursors[7].Next(&i));
  EXPECT_EQ(i.start, 1);
  EXPECT_EQ(cursors[7].buffered(), 3u);  // the run, not 4096
  EXPECT_EQ(cursors[8].buffered(), 0u);
}

TEST(SpillFileTest, ReadingPastTheEndIsAnIoError) {
  auto file = SpillFile::Create();
  ASSERT_TRUE(file.has_value());
  std::vector<Interval> a = {{1, 2}};
  ASSERT_TRUE((*file)->Write(a.data(), a.size()));
  RunCursor c = RunCursor::File(file->get(), {0, 5}, 8);  // claims more than written
  Interval i;
  EXPECT_FALSE(c.Next(&i));
  ASSERT_TRUE(c.error().has_value());
  EXPECT_EQ(c.error()->code, ErrorCode::kIo);
}

// Many runs over few tags: merge passes within a tag through the file
// (fan-in 3), then one merge; every interval comes out once, with its tag.
TEST(MergeStreamTest, YieldsEveryIntervalWithItsTagThroughMergePasses) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 40; ++round) {
    auto file = SpillFile::Create();
    ASSERT_TRUE(file.has_value());
    const size_t nruns = 1 + rng() % 40;
    std::vector<std::vector<Interval>> runs;
    std::vector<uint32_t> tags;
    std::vector<TaggedRun> cursors;
    runs.reserve(nruns);
    for (size_t r = 0; r < nruns; ++r) {
      runs.push_back(RandomSortedRun(rng, rng() % 60, 10000));
      tags.push_back(static_cast<uint32_t>(rng() % (round % 2 == 0 ? 3 : 30)));
    }
    for (size_t r = 0; r < nruns; ++r) {
      if (r % 2 == 0) {
        cursors.push_back({RunCursor::Memory(&runs[r]), tags[r]});
      } else {
        auto run = (*file)->Write(runs[r].data(), runs[r].size());
        ASSERT_TRUE(run.has_value());
        cursors.push_back({RunCursor::File(file->get(), *run, 3), tags[r]});
      }
    }
    MergeStream s(std::move(cursors), file->get(), 3, 2);
    EXPECT_EQ(Drain(s), Expected(runs, tags)) << round;
    EXPECT_FALSE(s.error().has_value());
  }
}

// One heap over hundreds of runs (the in-place sift is deep), runs of very
// different lengths, and many equal starts.
TEST(MergeStreamTest, WideHeapWithEqualStarts) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 10; ++round) {
    const size_t nruns = 200 + rng() % 200;
    std::vector<std::vector<Interval>> runs;
    std::vector<uint32_t> tags;
    for (size_t r = 0; r < nruns; ++r) {
      std::vector<Interval> run = RandomSortedRun(rng, rng() % (r % 7 == 0 ? 400 : 8), 200);
      for (Interval& i : run) {
        i.start *= 50;  // coarse starts collide across runs
        i.end = i.start + 1 + (i.end - i.start) % 120;
      }
      runs.push_back(run);
      tags.push_back(static_cast<uint32_t>(r));
    }
    std::vector<TaggedRun> cursors;
    for (size_t r = 0; r < nruns; ++r) cursors.push_back({RunCursor::Memory(&runs[r]), tags[r]});
    MergeStream s(std::move(cursors), nullptr, 1024);
    EXPECT_EQ(Drain(s), Expected(runs, tags));
  }
}

TEST(MergeStreamTest, EmptyInputEndsAtOnce) {
  MergeStream s({}, nullptr);
  Interval i;
  uint32_t tag = 0;
  EXPECT_FALSE(s.Next(&i, &tag));
}

// ---- FileAggregator with a tiny budget vs the in-memory path ----

Id Int(int64_t v) { return Id{IdKind::kInt, v, {}}; }

TraceEvent Meta(std::string_view which, int64_t pid, int64_t tid, std::string_view value) {
  TraceEvent e;
  e.ph = 'M';
  e.has_name = true;
  e.name = which;
  e.pid = Int(pid);
  e.tid = Int(tid);
  e.args_name = value;
  return e;
}

TraceEvent Kernel(int64_t pid, int64_t tid, std::string_view name, int64_t ts, int64_t dur) {
  TraceEvent e;
  e.ph = 'X';
  e.has_name = true;
  e.name = name;
  e.pid = Int(pid);
  e.tid = Int(tid);
  e.has_ts = true;
  e.ts_ps = ts;
  e.has_dur = true;
  e.dur_exact = true;
  e.dur_ps = dur;
  return e;
}

const std::vector<std::string>& KernelNames() {
  static const std::vector<std::string> names = {
      "Cijk_Alik_Bljk_gemm",          "loop_add_fusion.kd",    "ncclDevKernel_AllReduce",
      "ncclDevKernel_AllGather_RING", "void memcpy_kernel<x>", "triton_softmax",
      "input_reduce_fusion",          "rcclGenericKernel"};
  return names;
}

// Random JAX trace: 3 GPUs x 3 streams, kernels mostly in order per stream,
// overlapping across streams, some out of order and zero-length.
std::vector<TraceEvent> RandomTrace(uint64_t seed, size_t kernels) {
  std::mt19937_64 rng(seed);
  std::vector<TraceEvent> ev;
  for (int g = 0; g < 3; ++g) {
    static const char* kDev[] = {"/device:GPU:0", "/device:GPU:1", "/device:GPU:2"};
    ev.push_back(Meta("process_name", 1 + g, 0, kDev[g]));
    for (int s = 1; s <= 3; ++s) ev.push_back(Meta("thread_name", 1 + g, s, "Stream #1"));
  }
  std::vector<int64_t> clock(9, 0);
  for (size_t i = 0; i < kernels; ++i) {
    const int g = static_cast<int>(rng() % 3), s = 1 + static_cast<int>(rng() % 3);
    int64_t& t = clock[static_cast<size_t>(g * 3 + s - 1)];
    int64_t ts = t + static_cast<int64_t>(rng() % 2000);
    if (rng() % 20 == 0) ts -= static_cast<int64_t>(rng() % 5000);  // out of order
    const int64_t dur = rng() % 50 == 0 ? 0 : static_cast<int64_t>(rng() % 3000);
    t = std::max(t, ts + dur);
    const auto& name = KernelNames()[rng() % KernelNames().size()];
    ev.push_back(Kernel(1 + g, s, name, ts, dur));
  }
  return ev;
}

std::shared_ptr<FileStats> RunFile(const std::vector<TraceEvent>& ev, size_t budget,
                                   const classify::Classifier& c, uint64_t* spilled,
                                   int finish_threads = 1) {
  FileAggregator agg("f.json", budget);
  for (const auto& e : ev) agg.OnEvent(e);
  *spilled = agg.SpilledIntervals();
  parse::ParseSummary summary;
  summary.events = ev.size();
  return agg.Finish(summary, false, c, finish_threads);
}

// The spill file is bounded by the file's budget: past it nothing more is
// written and the budget reports over_budget (the reader then stops at its
// next check), however many kernels keep coming.
TEST(FileAggregatorSpillTest, SpillStopsAtTheFileBudget) {
  const auto ev = RandomTrace(7, 200000);
  FileLimits limits;
  limits.max_bytes = 64 << 10;  // 4096 intervals
  limits.max_time = std::chrono::nanoseconds(0);
  FileBudget budget(limits);
  FileAggregator agg("f.json", 1000);
  agg.SetBudget(&budget);
  for (const auto& e : ev) agg.OnEvent(e);
  EXPECT_LE(agg.SpilledIntervals() * sizeof(Interval), limits.max_bytes);
  EXPECT_GT(agg.SpilledIntervals(), 0u);
  ASSERT_TRUE(budget.exceeded());
  Status s = budget.Check();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kOverBudget);
  EXPECT_NE(s.error().context.find("spill"), std::string::npos) << s.error().context;
  // Without a budget the same events spill far more.
  uint64_t unbounded = 0;
  auto c = *classify::Classifier::Create(*classify::BuiltinRuleSet("drill"));
  RunFile(ev, 1000, *c, &unbounded);
  EXPECT_GT(unbounded * sizeof(Interval), 4 * limits.max_bytes);
}

TEST(FileAggregatorSpillTest, TinyBudgetGivesTheSameDeviceFiguresAsInMemory) {
  for (std::string_view rules : {"drill", "nvidia"}) {
    auto c = *classify::Classifier::Create(*classify::BuiltinRuleSet(rules));
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      const auto ev = RandomTrace(seed, 20000);
      uint64_t spilled_mem = 0, spilled_tiny = 0;
      // Finish on several threads: devices merge their thousands of spilled
      // runs (external merge passes) into the one spill file at once.
      const int threads = 1 + static_cast<int>(seed % 3) * 2;  // 1, 3, 5
      auto mem = RunFile(ev, FileAggregator::kDefaultIntervalBudget, *c, &spilled_mem);
      auto tiny = RunFile(ev, 16, *c, &spilled_tiny, threads);
      EXPECT_EQ(spilled_mem, 0u);
      EXPECT_GT(spilled_tiny, 10000u);  // it really went through the spill file
      WindowStats a = MergeWindow({mem}, *c, AggregateOptions{});
      WindowStats b = MergeWindow({tiny}, *c, AggregateOptions{});
      ASSERT_EQ(a.devices.size(), 3u);
      ASSERT_EQ(a.devices.size(), b.devices.size());
      for (size_t d = 0; d < a.devices.size(); ++d) {
        const DeviceSummary &x = a.devices[d], &y = b.devices[d];
        EXPECT_EQ(x.device, y.device);
        EXPECT_EQ(x.kernels, y.kernels);
        EXPECT_EQ(x.kernel_ps, y.kernel_ps);
        EXPECT_EQ(x.busy_ps, y.busy_ps)
            << rules << " seed " << seed << " threads " << threads << " " << x.device;
        EXPECT_EQ(x.span_ps, y.span_ps);
        EXPECT_EQ(x.streams, y.streams);
        EXPECT_EQ(x.comm_ps, y.comm_ps);
        EXPECT_EQ(x.exposed_comm_ps, y.exposed_comm_ps) << rules << " seed " << seed;
        EXPECT_EQ(x.compute_busy_ps, y.compute_busy_ps) << rules << " seed " << seed;
        EXPECT_EQ(x.exclusive_ps, y.exclusive_ps) << rules << " seed " << seed;
        EXPECT_GT(x.exclusive_ps, 0);
        EXPECT_EQ(x.memops, y.memops);
        EXPECT_EQ(x.memop_ps, y.memop_ps);
        EXPECT_GT(x.busy_ps, 0);
        EXPECT_LT(x.busy_ps, x.kernel_ps);  // streams overlap: union < sum
      }
      for (size_t f = 0; f < a.families.size(); ++f) {
        EXPECT_EQ(a.families[f].exclusive_ps, b.families[f].exclusive_ps) << a.families[f].family;
        EXPECT_EQ(a.families[f].idle_before_ps, b.families[f].idle_before_ps);
      }
      EXPECT_EQ(b.files[0].drops.count("interval_spill_error"), 0u);
    }
  }
}

TEST(FileAggregatorSpillTest, BusyMatchesAnIndependentUnionWhenSpilled) {
  auto c = *classify::Classifier::Create(*classify::BuiltinRuleSet("drill"));
  const auto ev = RandomTrace(99, 30000);
  // Reference straight from the events: every non-memory kernel of GPU:1.
  ReferenceUnion all;
  for (const auto& e : ev) {
    if (e.ph == 'X' && e.pid.num == 2 &&
        c->KindOf(c->Classify(e.name)) != classify::FamilyKind::kMemory) {
      all.Add(e.ts_ps, e.ts_ps + e.dur_ps);
    }
  }
  uint64_t spilled = 0;
  auto stats = RunFile(ev, 64, *c, &spilled);
  EXPECT_GT(spilled, 0u);
  WindowStats w = MergeWindow({stats}, *c, AggregateOptions{});
  ASSERT_EQ(w.devices.size(), 3u);
  EXPECT_EQ(w.devices[1].device, "/device:GPU:1");
  EXPECT_EQ(w.devices[1].busy_ps, all.Length());
}

// In memory, for every device and both rule sets: busy and exposed comm
// equal unions computed straight from the events. RandomTrace puts every
// name on every stream, out of order at times, with zero-length kernels.
TEST(FileAggregatorSpillTest, InMemoryFiguresMatchIndependentUnions) {
  for (std::string_view rules : {"drill", "nvidia"}) {
    auto c = *classify::Classifier::Create(*classify::BuiltinRuleSet(rules));
    const auto ev = RandomTrace(7, 30000);
    uint64_t spilled = 0;
    auto stats = RunFile(ev, FileAggregator::kDefaultIntervalBudget, *c, &spilled);
    EXPECT_EQ(spilled, 0u);
    WindowStats w = MergeWindow({stats}, *c, AggregateOptions{});
    ASSERT_EQ(w.devices.size(), 3u);
    for (int64_t pid = 1; pid <= 3; ++pid) {
      ReferenceUnion compute, comm, all;
      for (const auto& e : ev) {
        if (e.ph != 'X' || e.pid.num != pid) continue;
        const auto kind = c->KindOf(c->Classify(e.name));
        if (kind == classify::FamilyKind::kMemory) continue;
        (kind == classify::FamilyKind::kComm ? comm : compute).Add(e.ts_ps, e.ts_ps + e.dur_ps);
        all.Add(e.ts_ps, e.ts_ps + e.dur_ps);
      }
      const DeviceSummary& d = w.devices[static_cast<size_t>(pid - 1)];
      EXPECT_GT(comm.Length(), 0) << rules;
      EXPECT_EQ(d.busy_ps, all.Length()) << rules << " " << d.device;
      EXPECT_EQ(d.exposed_comm_ps, DifferenceLength(comm, compute)) << rules << " " << d.device;
      EXPECT_EQ(d.streams, 3);
    }
  }
}

TEST(FileAggregatorSpillTest, ParkMovesIntervalsOutAndKeepsResults) {
  auto c = *classify::Classifier::Create(*classify::BuiltinRuleSet("drill"));
  const auto ev = RandomTrace(5, 3 * FileAggregator::kParkedIntervals);
  uint64_t spilled = 0;
  auto mem = RunFile(ev, FileAggregator::kDefaultIntervalBudget, *c, &spilled);
  EXPECT_EQ(spilled, 0u);
  FileAggregator parked("f.json");
  for (const auto& e : ev) parked.OnEvent(e);
  parked.Park();
  EXPECT_GT(parked.SpilledIntervals(), FileAggregator::kParkedIntervals);
  parse::ParseSummary summary;
  summary.events = ev.size();
  WindowStats a = MergeWindow({mem}, *c, AggregateOptions{});
  WindowStats b = MergeWindow({parked.Finish(summary, false, *c)}, *c, AggregateOptions{});
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t d = 0; d < a.devices.size(); ++d) {
    EXPECT_EQ(a.devices[d].busy_ps, b.devices[d].busy_ps);
    EXPECT_EQ(a.devices[d].exposed_comm_ps, b.devices[d].exposed_comm_ps);
    EXPECT_EQ(a.devices[d].span_ps, b.devices[d].span_ps);
  }
}

TEST(FileAggregatorSpillTest, HeldEventsForUndeclaredThreadsAreCapped) {
  std::vector<TraceEvent> ev;
  const size_t extra = 1000;
  ev.reserve(kMaxHeldEvents + extra + 2);
  for (size_t i = 0; i < kMaxHeldEvents + extra; ++i) {
    ev.push_back(Kernel(1, 1, "Cijk_gemm", static_cast<int64_t>(i) * 10, 5));
  }
  // The metadata comes last: held events are judged at the end.
  ev.push_back(Meta("process_name", 1, 0, "/device:GPU:0"));
  ev.push_back(Meta("thread_name", 1, 1, "Stream #1"));
  auto c = *classify::Classifier::Create(*classify::BuiltinRuleSet("drill"));
  uint64_t spilled = 0;
  auto stats = RunFile(ev, FileAggregator::kDefaultIntervalBudget, *c, &spilled);
  WindowStats w = MergeWindow({stats}, *c, AggregateOptions{});
  ASSERT_EQ(w.devices.size(), 1u);
  EXPECT_EQ(w.devices[0].kernels, static_cast<int64_t>(kMaxHeldEvents));
  EXPECT_EQ(w.files[0].drops.at("no_metadata_held_limit"), extra);
}

}  // namespace interval_spill_test
}  // namespace profwatch::aggregate
