#include "expose/snapshot_collectable.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/build_revision.h"
#include "expose/metric_names.h"
#include "figures/kernel_label.h"
#include "testing/sample_snapshot.h"
#include "testing/test_util.h"

namespace profwatch::expose {
namespace {

using ::profwatch::testing::ProjectFixture;
using ::profwatch::testing::ReadFile;
using ::profwatch::testing::RunCommand;
using ::profwatch::testing::TempDir;
using ::profwatch::testing::WriteFile;
using Families = std::vector<prometheus::MetricFamily>;
using LabelMap = std::map<std::string, std::string>;

const BuildInfo kTestBuild{"0.0.0-test", "golden"};

// The snapshot as the daemon publishes it: runs with their figures.
std::shared_ptr<snapshot::SnapshotStore> StoreWith(snapshot::Snapshot s) {
  auto store = std::make_shared<snapshot::SnapshotStore>();
  store->Publish(std::make_shared<const snapshot::Snapshot>(testing::Published(std::move(s))));
  return store;
}
Families RenderPublished(const snapshot::Snapshot& s, const BuildInfo& build) {
  return RenderSnapshot(testing::Published(s), build);
}
std::string RenderText(const snapshot::Snapshot& s, const BuildInfo& build) {
  return RenderSnapshotText(testing::Published(s), build);
}

std::string Render(const Families& f) { return prometheus::TextSerializer().Serialize(f); }

LabelMap LabelsOf(const prometheus::ClientMetric& m) {
  LabelMap out;
  for (const auto& l : m.label) out[l.name] = l.value;
  return out;
}

// The gauge value of the one sample of `name` whose labels include `want`.
// Fails the test (and returns NaN) when there is not exactly one.
double Value(const Families& fams, std::string_view name, const LabelMap& want) {
  std::vector<double> found;
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      LabelMap have = LabelsOf(m);
      bool match = true;
      for (const auto& [k, v] : want) {
        auto it = have.find(k);
        if (it == have.end() || it->second != v) match = false;
      }
      if (match) found.push_back(m.gauge.value);
    }
  }
  EXPECT_EQ(found.size(), 1u) << name;
  return found.size() == 1 ? found[0] : std::nan("");
}

// Names of the families that have a sample for (job, run).
std::set<std::string> NamesForRun(const Families& fams, const std::string& job,
                                  const std::string& run) {
  std::set<std::string> out;
  for (const auto& f : fams) {
    for (const auto& m : f.metric) {
      LabelMap l = LabelsOf(m);
      if (l["training_job"] == job && l["run"] == run) out.insert(f.name);
    }
  }
  return out;
}

const LabelMap kRun1{{"training_job", "1234-llama"}, {"run", "run-1"}};
const LabelMap kRun2{{"training_job", "1234-llama"}, {"run", "run-2"}};

LabelMap With(LabelMap base, const LabelMap& extra) {
  base.insert(extra.begin(), extra.end());
  return base;
}

TEST(SnapshotCollectableTest, MatchesGolden) {
  SnapshotCollectable c(StoreWith(testing::SampleSnapshot()), kTestBuild);
  const std::string text = Render(c.Collect());
  const std::string golden = ProjectFixture("expose/snapshot_basic.out");
  if (std::getenv("PROFWATCH_UPDATE_GOLDEN") != nullptr) {
    WriteFile(golden, text);
    GTEST_SKIP() << "golden rewritten: " << golden;
  }
  ASSERT_TRUE(std::filesystem::exists(golden)) << golden;
  EXPECT_EQ(text, ReadFile(golden));
}

TEST(SnapshotCollectableTest, SerializerEscapesKernelNameLabel) {
  SnapshotCollectable c(StoreWith(testing::SampleSnapshot()), kTestBuild);
  const std::string text = Render(c.Collect());
  EXPECT_THAT(text,
              ::testing::HasSubstr(R"(kernel="weird \"quoted\" back\\slash\nnewline"} 0.05)"));
}

TEST(SnapshotCollectableTest, PromtoolCheckMetricsReportsNoProblems) {
  const char* promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) GTEST_SKIP() << "promtool not installed";
  SnapshotCollectable c(StoreWith(testing::SampleSnapshot()), kTestBuild);
  TempDir dir;
  const std::string path = dir.Sub("metrics.txt");
  WriteFile(path, Render(c.Collect()));
  auto r = RunCommand(std::string(promtool) + " check metrics < '" + path + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");
  // The lint is live: a counter without _total is reported.
  WriteFile(path, "# HELP bad_counter x\n# TYPE bad_counter counter\nbad_counter 1\n");
  auto bad = RunCommand(std::string(promtool) + " check metrics < '" + path + "'");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.out + bad.err, ::testing::HasSubstr("bad_counter"));
}

// Scrapes racing publishes see one whole snapshot each: within one Collect()
// the pending count and the run's expected GPUs come from the same generation.
TEST(SnapshotCollectableTest, CollectDuringPublishSeesWholeSnapshots) {
  auto store = std::make_shared<snapshot::SnapshotStore>();
  auto make = [](int g) {
    snapshot::Snapshot s;
    snapshot::RunState r = testing::RunWithoutStepTime();
    r.expected_gpus = g;
    s.runs.emplace(r.key, r);
    s.pending_windows = g;
    s.pending_by_run[r.key] = g;
    return std::make_shared<const snapshot::Snapshot>(testing::Published(std::move(s)));
  };
  store->Publish(make(1));
  SnapshotCollectable c(store, kTestBuild);
  constexpr int kGenerations = 300;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, scrapes{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (true) {
        const bool finished = done.load();
        const Families f = c.Collect();
        double pending = -1, expected = -2;
        for (const auto& fam : f) {
          if (fam.name == "profwatch_pending_windows") pending = fam.metric.at(0).gauge.value;
          if (fam.name == "profwatch_window_expected_gpus") expected = fam.metric.at(0).gauge.value;
        }
        if (pending != expected) bad.fetch_add(1);
        if (finished && pending != kGenerations) bad.fetch_add(1);
        scrapes.fetch_add(1);
        if (finished) break;
      }
    });
  }
  for (int g = 2; g <= kGenerations; ++g) store->Publish(make(g));
  done.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(scrapes.load(), 2);
}

TEST(SnapshotCollectableTest, NamesTypesHelpAndLabelsMatchContract) {
  SnapshotCollectable c(StoreWith(testing::SampleSnapshot()), kTestBuild);
  const Families fams = c.Collect();
  std::set<std::string> seen;
  for (const auto& f : fams) {
    const MetricSpec* spec = FindMetric(f.name);
    ASSERT_NE(spec, nullptr) << f.name;
    EXPECT_TRUE(seen.insert(f.name).second) << "family twice: " << f.name;
    EXPECT_EQ(f.help, spec->help) << f.name;
    const bool summary = spec->type == MetricType::kSummary;
    EXPECT_TRUE(summary || spec->type == MetricType::kGauge) << f.name;
    EXPECT_EQ(f.type, summary ? prometheus::MetricType::Summary : prometheus::MetricType::Gauge)
        << f.name;
    std::vector<std::string> want;
    if (spec->per_run) want = {"training_job", "run"};
    for (std::string_view l : spec->labels) {
      if (!l.empty()) want.emplace_back(l);
    }
    EXPECT_FALSE(f.metric.empty()) << f.name;
    std::set<std::vector<std::string>> label_values;
    for (const auto& m : f.metric) {
      std::vector<std::string> names, values;
      for (const auto& l : m.label) {
        names.push_back(l.name);
        values.push_back(l.value);
      }
      EXPECT_EQ(names, want) << f.name;
      EXPECT_TRUE(label_values.insert(values).second) << "duplicate series in " << f.name;
    }
  }
  // The sample snapshot sets every optional field, so every metric the
  // snapshot writes must be present; counters, the histogram and the front
  // door's gauge belong to a registry and must not be.
  for (const MetricSpec& spec : kMetrics) {
    if (spec.source == Source::kSnapshot) {
      EXPECT_TRUE(seen.count(std::string(spec.name))) << "missing " << spec.name;
    } else {
      EXPECT_FALSE(seen.count(std::string(spec.name))) << "unexpected " << spec.name;
    }
  }
}

TEST(SnapshotCollectableTest, PerGpuPerStepValuesAreHandComputed) {
  const Families f = RenderPublished(testing::SampleSnapshot(), kTestBuild);
  // job-a/run-1: 2 GPUs x 3 steps = divisor 6.
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_gpu_steps", kRun1), 6);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_family_kernel_seconds", With(kRun1, {{"family", "GEMM"}})),
                   0.2);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_family_kernel_seconds", With(kRun1, {{"family", "NCCL"}})),
                   0.1);
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_family_kernel_seconds", With(kRun1, {{"family", "Other kernels"}})), 0);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_family_kernel_launches", With(kRun1, {{"family", "GEMM"}})),
                   100);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_family_kernel_launches", With(kRun1, {{"family", "NCCL"}})),
                   10);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds",
                         With(kRun1, {{"family", "GEMM"}, {"kernel", "Cijk_Alik_Bljk_gemm"}})),
                   0.15);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_total_kernel_seconds", kRun1), 0.3);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_gpu_busy_seconds", kRun1), 0.25);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_gpu_idle_seconds", kRun1), 0.075);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_overlap_seconds", kRun1), 0.05);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_exposed_comm_seconds", kRun1), 0.03);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_step_seconds", With(kRun1, {{"source", "log"}})), 0.4);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_step_minus_kernel_seconds", kRun1), 0.1);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_step_minus_kernel_ratio", kRun1), 0.25);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_step_source_missing", kRun1), 0);
  // Raw sums: seconds over all GPUs and steps.
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_window_raw_family_kernel_seconds", With(kRun1, {{"family", "GEMM"}})),
      1.2);
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_window_raw_family_kernel_launches", With(kRun1, {{"family", "NCCL"}})),
      60);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_kernel_seconds", kRun1), 1.8);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_gpu_busy_seconds", kRun1), 1.5);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_gpu_span_seconds", kRun1), 1.95);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_exposed_comm_seconds", kRun1), 0.18);
  // Diagnosis: per GPU per step like the families; compute busy per step.
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_family_exclusive_seconds", With(kRun1, {{"family", "GEMM"}})), 0.05);
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_family_idle_before_seconds", With(kRun1, {{"family", "NCCL"}})), 0.01);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_straggler_ratio", kRun1), 0.69 / 0.66);
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_region_kernel_seconds", With(kRun1, {{"region", "decoder/layers/mlp"}})),
      0.15);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_region_kernel_seconds", With(kRun1, {{"region", "other"}})),
                   0.01);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_straggler_info",
                         With(kRun1, {{"host", "host0"}, {"device", "/device:GPU:0"}})),
                   1);
  const prometheus::ClientMetric::Summary* busy = nullptr;
  for (const auto& fam : f) {
    if (fam.name != "profwatch_gpu_compute_busy_seconds") continue;
    for (const auto& m : fam.metric) {
      if (LabelsOf(m) == kRun1) busy = &m.summary;
    }
  }
  ASSERT_NE(busy, nullptr);
  ASSERT_EQ(busy->quantile.size(), 3u);
  EXPECT_DOUBLE_EQ(busy->quantile[0].quantile, 0);
  EXPECT_DOUBLE_EQ(busy->quantile[0].value, 0.21);
  EXPECT_DOUBLE_EQ(busy->quantile[1].quantile, 0.5);
  EXPECT_DOUBLE_EQ(busy->quantile[1].value, 0.22);
  EXPECT_DOUBLE_EQ(busy->quantile[2].value, 0.23);
  EXPECT_DOUBLE_EQ(busy->sample_sum, 0.44);
  EXPECT_EQ(busy->sample_count, 2u);
  // Window shape.
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_gpus", kRun1), 2);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_expected_gpus", kRun1), 2);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_trace_files", kRun1), 1);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_timestamp_dirs", kRun1), 2);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_profile_steps", kRun1), 3);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_events", kRun1), 123456);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_truncated", kRun1), 0);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_incomplete", kRun1), 0);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_analyzed_timestamp_seconds", kRun1), 1795000000.5);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_info",
                         With(kRun1, {{"launcher_mode", "1-node/proc"}, {"format", "json"}})),
                   1);
  // Which window: a value (2026-11-22 01:00:00 UTC), never a label (issue #49).
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_start_timestamp_seconds", kRun1), 1795309200);
  for (const auto& fam : f) {
    for (const auto& m : fam.metric) EXPECT_EQ(LabelsOf(m).count("window"), 0u) << fam.name;
  }
  // run-2 expects nothing yet (its first window): its own GPU count is shown.
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_expected_gpus", kRun2), 1);
  // job-a/run-2: 1 GPU x 1 step.
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_total_kernel_seconds", kRun2), 0.7);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_gpu_idle_seconds", kRun2), 0.1);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_overlap_seconds", kRun2), 0);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_truncated", kRun2), 1);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_incomplete", kRun2), 1);
  // Training and self-metrics.
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_training_mfu_ratio", kRun1), 0.48);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_training_step", kRun1), 1200);
  // Pending windows per run: 0 for a run with none.
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_pending_windows", kRun2), 2);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_pending_windows", kRun1), 0);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_last_scan_timestamp_seconds", {}), 1795003700);
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_build_info", {{"version", "0.0.0-test"}, {"revision", "golden"}}), 1);
}

// The diagnosis through the metrics: run-1's serial collective is 5% of its
// 0.4 s step (no blocker series) and its 0.045 s host stall is exported;
// run-2's all-to-all, 25% of its kernel span, is a blocker; each family's
// kind is labelled.
// Issue #49: by default no detail metric and no series of a family that ran
// no kernel ("Other kernels" of the sample run: 0 launches); with
// --metrics-detail both, the empty family at 0.
TEST(SnapshotCollectableTest, DefaultLeavesOutDetailAndFamiliesThatRanNoKernel) {
  snapshot::Snapshot s = testing::SampleSnapshot();
  s.metrics_detail = false;
  const Families plain = RenderPublished(s, kTestBuild);
  for (const auto& fam : plain) {
    const MetricSpec* spec = FindMetric(fam.name);
    ASSERT_NE(spec, nullptr) << fam.name;
    EXPECT_FALSE(IsDetail(spec->id)) << fam.name;
    for (const auto& m : fam.metric) {
      EXPECT_NE(LabelsOf(m)["family"], "Other kernels") << fam.name;
    }
  }
  const std::set<std::string> names = NamesForRun(plain, "1234-llama", "run-1");
  for (const char* kept : {"profwatch_family_kernel_seconds", "profwatch_family_info",
                           "profwatch_window_raw_family_kernel_seconds",
                           "profwatch_region_coverage_ratio", "profwatch_total_kernel_seconds"}) {
    EXPECT_TRUE(names.count(kept)) << kept;
  }
  EXPECT_DOUBLE_EQ(
      Value(plain, "profwatch_family_kernel_seconds", With(kRun1, {{"family", "GEMM"}})), 0.2);
  s.metrics_detail = true;
  const Families detail = RenderPublished(s, kTestBuild);
  for (Metric m : kDetailMetrics) {
    EXPECT_TRUE(NamesForRun(detail, "1234-llama", "run-1").count(std::string(Spec(m).name)))
        << Spec(m).name;
  }
  EXPECT_DOUBLE_EQ(Value(detail, "profwatch_family_info",
                         With(kRun1, {{"family", "Other kernels"}, {"kind", "compute"}})),
                   1);
}

TEST(SnapshotCollectableTest, DiagnosisMetricsFollowTheDiagnosis) {
  const Families f = RenderPublished(testing::SampleSnapshot(), kTestBuild);
  EXPECT_FALSE(NamesForRun(f, "1234-llama", "run-1").count("profwatch_blocker_seconds"));
  // Both GPUs: 0.09 s over their two boundaries, over the 3 steps.
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_host_stall_seconds", kRun1), 0.03);
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_blocker_seconds",
            With(kRun2, {{"family", "comm_other"}, {"kernel", "ragged_all_to_all_kernel"}})),
      0.2);
  // One profiled step: no boundary between steps, no host stall figure.
  EXPECT_FALSE(NamesForRun(f, "1234-llama", "run-2").count("profwatch_host_stall_seconds"));
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_family_info", With(kRun1, {{"family", "GEMM"}, {"kind", "math"}})), 1);
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_family_info", With(kRun1, {{"family", "NCCL"}, {"kind", "comm"}})), 1);
  // A shorter step makes run-1's collective a blocker: 0.02 s of 0.1 s.
  snapshot::Snapshot snap = testing::SampleSnapshot();
  snap.runs.begin()->second.step_seconds = 0.1;
  const Families g = RenderPublished(snap, kTestBuild);
  EXPECT_DOUBLE_EQ(
      Value(g, "profwatch_blocker_seconds",
            With(kRun1, {{"family", "NCCL"}, {"kernel", "ncclDevKernel_AllReduce_Sum_bf16"}})),
      0.02);
}

// Absent is absent (issue #38): FLOP figures that could not be computed are
// not exported, never 0. The sample run counts 7.2e14 FLOP in 1.2 s of
// kernels; without shapes (operators of counted kinds only, all unknown) or
// with an impossible count (issue #37: Input Dims claiming 1e6^3 matmuls) no
// FLOP metric is there, the rest of the run is.
// Issue #63: a window that lists its GPU agents (rocprofv3) exports those
// that dispatched nothing; a window of another format has no such series
// (absent, not 0).
TEST(SnapshotCollectableTest, IdleGpuAgentsAreExportedOnlyWhereTheWindowListsAgents) {
  snapshot::Snapshot snap = testing::SampleSnapshot();
  snap.runs.begin()->second.MutableStats().idle_gpu_agents.reset();
  EXPECT_FALSE(NamesForRun(RenderPublished(snap, kTestBuild), "1234-llama", "run-1")
                   .count("profwatch_window_idle_gpu_agents"));
  snap.runs.begin()->second.MutableStats().idle_gpu_agents = 7;
  const std::string text = RenderText(snap, kTestBuild);
  EXPECT_NE(
      text.find("\n# TYPE profwatch_window_idle_gpu_agents gauge\n"
                "profwatch_window_idle_gpu_agents{training_job=\"1234-llama\",run=\"run-1\"} 7\n"
                "# HELP profwatch_window_expected_gpus "),
      std::string::npos)
      << text.substr(0, 2000);
}

TEST(SnapshotCollectableTest, FlopFiguresThatCouldNotBeComputedAreNotExported) {
  const std::set<std::string> kFlopMetrics = {
      "profwatch_window_flops_per_gpu_step", "profwatch_achieved_flops_per_second",
      "profwatch_model_flops_per_second", "profwatch_mfu_ratio"};
  {
    const std::set<std::string> names =
        NamesForRun(RenderPublished(testing::SampleSnapshot(), kTestBuild), "1234-llama", "run-1");
    for (const auto& m : kFlopMetrics) EXPECT_TRUE(names.count(m)) << m;
  }
  auto without = [&](const std::function<void(aggregate::FlopStats&)>& edit) {
    snapshot::Snapshot snap = testing::SampleSnapshot();
    edit(snap.runs.begin()->second.MutableStats().flops);
    const std::set<std::string> names =
        NamesForRun(RenderPublished(snap, kTestBuild), "1234-llama", "run-1");
    for (const auto& m : kFlopMetrics) EXPECT_FALSE(names.count(m)) << m;
    EXPECT_TRUE(names.count("profwatch_step_seconds"));
  };
  {
    SCOPED_TRACE("no shapes");
    without([](aggregate::FlopStats& f) {
      f.flops = {0, 0, 0};
      f.kernel_ps = {0, 0, 0};
      f.families.clear();
      f.unknown_ops = 177;
    });
  }
  {
    SCOPED_TRACE("impossible shapes");
    without([](aggregate::FlopStats& f) {
      f.flops = {2e18 * 100, 0, 0};  // 100 claimed 1e6 x 1e6 x 1e6 matmuls
      f.families = {{"GEMM", 2e18 * 100, 1'000'000'000'000}};
    });
  }
  {
    SCOPED_TRACE("one impossible family in a plausible total");
    without([](aggregate::FlopStats& f) {
      f.families.push_back({"elementwise", 1e12, 1'000'000});  // 1e12 FLOP in 1 us
      f.flops[0] += 1e12;
    });
  }
}

// Collective figures: per GPU per step over the divisor (2 GPUs x 3 steps),
// bandwidths over the window, raw sums as they are. Without sizes no bytes
// and no bandwidth series (never 0); time and calls stay.
TEST(SnapshotCollectableTest, CollectiveFiguresPerKindAndAbsentWithoutSizes) {
  const LabelMap ar{{"collective", "all_reduce"}};
  {
    const Families f = RenderPublished(testing::SampleSnapshot(), kTestBuild);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_collective_seconds", With(kRun1, ar)), 0.1);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_collective_exposed_seconds", With(kRun1, ar)), 0.025);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_collective_calls", With(kRun1, ar)), 10);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_collective_bytes", With(kRun1, ar)), 1e9);
    EXPECT_DOUBLE_EQ(
        Value(f, "profwatch_collective_algorithm_bandwidth_bytes_per_second", With(kRun1, ar)),
        1e10);
    EXPECT_DOUBLE_EQ(
        Value(f, "profwatch_collective_bus_bandwidth_bytes_per_second", With(kRun1, ar)), 1.5e10);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_collective_seconds", With(kRun1, ar)), 0.6);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_collective_exposed_seconds", With(kRun1, ar)),
                     0.15);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_collective_sized_bytes", With(kRun1, ar)), 6e9);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_collective_bus_bytes", With(kRun1, ar)), 9e9);
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_collective_bus_seconds", With(kRun1, ar)), 0.6);
    // Only kinds that ran have series.
    for (const auto& fam : f) {
      if (fam.name != "profwatch_collective_seconds") continue;
      EXPECT_EQ(fam.metric.size(), 1u);
    }
  }
  snapshot::Snapshot snap = testing::SampleSnapshot();
  aggregate::CollectiveSums& s =
      snap.runs.begin()->second.MutableStats().collectives[aggregate::CollectiveKind::kAllReduce];
  s.sized_calls = 0;
  s.sized_ps = s.bus_ps = 0;
  s.bytes = s.bus_bytes = 0;
  const std::set<std::string> names =
      NamesForRun(RenderPublished(snap, kTestBuild), "1234-llama", "run-1");
  for (const char* m :
       {"profwatch_collective_bytes", "profwatch_collective_algorithm_bandwidth_bytes_per_second",
        "profwatch_collective_bus_bandwidth_bytes_per_second",
        "profwatch_window_raw_collective_sized_bytes",
        "profwatch_window_raw_collective_sized_seconds",
        "profwatch_window_raw_collective_bus_bytes",
        "profwatch_window_raw_collective_bus_seconds"}) {
    EXPECT_FALSE(names.count(m)) << m;
  }
  EXPECT_TRUE(names.count("profwatch_collective_seconds"));
  EXPECT_TRUE(names.count("profwatch_collective_exposed_seconds"));
}

TEST(SnapshotCollectableTest, WindowWithoutStepTimeFlagsSourceMissingAndHasNoGap) {
  const Families f = RenderPublished(testing::SampleSnapshot(), kTestBuild);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_step_source_missing", kRun2), 1);
  const std::set<std::string> names = NamesForRun(f, "1234-llama", "run-2");
  EXPECT_FALSE(names.count("profwatch_step_seconds"));
  EXPECT_FALSE(names.count("profwatch_step_minus_kernel_seconds"));
  EXPECT_FALSE(names.count("profwatch_step_minus_kernel_ratio"));
  // Nothing expected yet: its own GPUs, from the first window on (issue #49).
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_expected_gpus", kRun2), 1);
  EXPECT_FALSE(names.count("profwatch_training_step"));
}

TEST(SnapshotCollectableTest, RunWithoutWindowExportsOnlyStepAndTrainingMetrics) {
  const Families f = RenderPublished(testing::SampleSnapshot(), kTestBuild);
  EXPECT_EQ(NamesForRun(f, "5678-mixtral", "run-1"),
            (std::set<std::string>{"profwatch_step_seconds", "profwatch_training_step",
                                   "profwatch_training_step_seconds", "profwatch_training_loss",
                                   "profwatch_run_activity_timestamp_seconds",
                                   "profwatch_pending_windows"}));
  // Liveness comes from the data's write time, for log-only runs too.
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_run_activity_timestamp_seconds",
                         {{"training_job", "5678-mixtral"}, {"run", "run-1"}}),
                   1795000100);
  EXPECT_DOUBLE_EQ(
      Value(f, "profwatch_step_seconds",
            {{"training_job", "5678-mixtral"}, {"run", "run-1"}, {"source", "config"}}),
      1.5);
}

TEST(SnapshotCollectableTest, EmptyStepSourceIsLabelledUnknown) {
  snapshot::Snapshot s;
  snapshot::RunState r = testing::RunWithEverything();
  r.step_source.clear();
  s.runs.emplace(r.key, r);
  const Families f = RenderPublished(s, kTestBuild);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_step_seconds", With(kRun1, {{"source", "unknown"}})), 0.4);
}

TEST(SnapshotCollectableTest, WindowWithoutGpusHasZeroPerGpuValuesAndNoGap) {
  snapshot::Snapshot s;
  snapshot::RunState r = testing::RunWithEverything();
  r.MutableStats().devices.clear();  // divisor 0
  s.runs.emplace(r.key, r);
  const Families f = RenderPublished(s, kTestBuild);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_total_kernel_seconds", kRun1), 0);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_gpu_steps", kRun1), 0);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_raw_kernel_seconds", kRun1), 1.8);
  const std::set<std::string> names = NamesForRun(f, "1234-llama", "run-1");
  EXPECT_FALSE(names.count("profwatch_step_minus_kernel_seconds"));
  EXPECT_TRUE(names.count("profwatch_step_seconds"));
}

TEST(SnapshotCollectableTest, RemovedRunVanishesFromNextCollect) {
  auto store = StoreWith(testing::SampleSnapshot());
  SnapshotCollectable c(store, kTestBuild);
  ASSERT_FALSE(NamesForRun(c.Collect(), "1234-llama", "run-2").empty());

  snapshot::Snapshot next = testing::SampleSnapshot();
  next.runs.erase(snapshot::RunKey{"1234-llama", "run-2"});
  next.pending_by_run.erase(snapshot::RunKey{"1234-llama", "run-2"});
  store->Publish(std::make_shared<const snapshot::Snapshot>(std::move(next)));
  const Families after = c.Collect();
  EXPECT_TRUE(NamesForRun(after, "1234-llama", "run-2").empty());
  EXPECT_FALSE(NamesForRun(after, "1234-llama", "run-1").empty());
  EXPECT_EQ(Render(after).find("run=\"run-2\""), std::string::npos);
  // No family is left behind as an empty shell.
  for (const auto& fam : after) EXPECT_FALSE(fam.metric.empty()) << fam.name;
}

TEST(SnapshotCollectableTest, EmptySnapshotExportsOnlySelfMetrics) {
  SnapshotCollectable c(std::make_shared<snapshot::SnapshotStore>(), kTestBuild);
  std::vector<std::string> names;
  for (const auto& f : c.Collect()) names.push_back(f.name);
  // No last scan yet: no 1970 timestamp.
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "profwatch_build_info", "profwatch_workers_busy", "profwatch_workers_stuck",
                "profwatch_oldest_waiting_window_seconds", "profwatch_label_values_rewritten"}));
}

// A 100,000-byte run name (a runaway directory name) is cut to the label
// bound on a UTF-8 boundary, and the cut is counted.
TEST(SnapshotCollectableTest, LongLabelValuesAreCutAndCounted) {
  snapshot::Snapshot s;
  snapshot::RunState rs;
  rs.key = {"job", std::string(99'999, 'r') + "\xC3\xA9"};
  rs.training.last_step = 7;
  s.runs.emplace(rs.key, rs);
  const Families f = RenderPublished(s, kTestBuild);
  bool found = false;
  for (const auto& fam : f) {
    if (fam.name != "profwatch_training_step") continue;
    for (const auto& m : fam.metric) {
      for (const auto& l : m.label) {
        if (l.name != "run") continue;
        found = true;
        EXPECT_LE(l.value.size(), kMaxLabelValueBytes);
        EXPECT_EQ(l.value, std::string(kMaxLabelValueBytes, 'r'));
      }
    }
  }
  EXPECT_TRUE(found);
  EXPECT_GE(Value(f, "profwatch_label_values_rewritten", {{"reason", "too_long"}}), 1);
  EXPECT_EQ(Value(f, "profwatch_label_values_rewritten", {{"reason", "invalid_utf8"}}), 0);
}

// The /metrics body is written as text directly (RenderSnapshotText); it must
// be byte for byte what prometheus-cpp's serializer writes for the families:
// escaping, repaired and repeated series, odd values.
TEST(SnapshotCollectableTest, TextRenderingIsTheSerializersBytes) {
  std::vector<snapshot::Snapshot> cases;
  cases.push_back(testing::SampleSnapshot());
  cases.push_back(snapshot::Snapshot{});
  {
    snapshot::Snapshot s = testing::SampleSnapshot();
    snapshot::RunState r = testing::RunWithEverything();
    r.key = {"job \"quoted\"\\back", "run\nnewline-\xff"};
    aggregate::WindowStats& st = r.MutableStats();
    st.families[0].top_kernels[0].name = "k\xff";  // written k\xff and k\xfe:
    st.families[0].top_kernels[1].name = "k\xfe";  // two series
    r.step_seconds = std::numeric_limits<double>::quiet_NaN();
    r.training.loss = std::numeric_limits<double>::infinity();
    r.training.tflops_per_device = -std::numeric_limits<double>::infinity();
    r.training.tokens_per_second_per_device = 1.0e300;
    r.training.mfu_ratio = 1.0 / 3.0;
    r.training.last_step_seconds = 5e-324;
    s.runs.emplace(r.key, r);
    snapshot::RunState long_name;
    long_name.key = {"job", std::string(99'999, 'r') + "\xC3\xA9"};
    long_name.training.last_step = 7;
    s.runs.emplace(long_name.key, long_name);
    s.watch_roots["/data/\"odd\"\\root"] = false;
    cases.push_back(s);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(RenderText(cases[i], kTestBuild), Render(RenderPublished(cases[i], kTestBuild)));
  }
}

TEST(SnapshotCollectableTest, DefaultBuildInfoComesFromTheBuild) {
  EXPECT_EQ(DefaultBuildInfo().version, PROFWATCH_VERSION);
  EXPECT_EQ(DefaultBuildInfo().revision, BuildRevision());
  EXPECT_FALSE(DefaultBuildInfo().version.empty());
}

// Label values are the reversible form of the names (core/text.h): a byte
// that is not UTF-8 reads \xHH, as in the --state file and the logs.
TEST(SnapshotCollectableTest, InvalidUtf8InLabelValuesIsWrittenReversibly) {
  snapshot::Snapshot s;
  s.metrics_detail = true;  // the kernel series are detail
  snapshot::RunState r = testing::RunWithEverything();
  r.key.run = "run-\xff";
  r.MutableStats().families[0].top_kernels[0].name = "k\xc3";  // truncated 2-byte sequence
  s.runs.emplace(r.key, r);
  const Families f = RenderPublished(s, kTestBuild);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds",
                         {{"run", "run-\\xff"}, {"family", "GEMM"}, {"kernel", "k\\xc3"}}),
                   0.15);
  EXPECT_GE(Value(f, "profwatch_label_values_rewritten", {{"reason", "invalid_utf8"}}), 2);
}

// The sample run with its two largest GEMM kernels renamed.
Families RenderWithTopKernelNames(const std::string& first, const std::string& second) {
  snapshot::Snapshot s;
  s.metrics_detail = true;  // the kernel series are detail
  snapshot::RunState r = testing::RunWithEverything();
  aggregate::WindowStats& st = r.MutableStats();
  st.families[0].top_kernels[0].name = first;
  st.families[0].top_kernels[1].name = second;
  s.runs.emplace(r.key, r);
  return RenderPublished(s, kTestBuild);
}

TEST(SnapshotCollectableTest, KernelLabelIsTheShortFormAndEqualShortFormsAreSummed) {
  // 0.15 and 0.05 s per GPU per step: two instantiations of one template.
  const Families f = RenderWithTopKernelNames("void ns::gemm<128, float>(float*, int)",
                                              "void ns::gemm<64, half>(half*, int)");
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "ns::gemm"}}), 0.2);
  for (const auto& fam : f) {
    for (const auto& m : fam.metric) {
      for (const auto& l : m.label) {
        if (l.name == "kernel") {
          EXPECT_LE(l.value.size(), figures::kMaxKernelLabelBytes) << l.value;
        }
      }
    }
  }
}

TEST(SnapshotCollectableTest, KernelLabelsKeepTheLargestFirstAfterSumming) {
  // The two renamed kernels shorten to distinct labels and keep their values.
  const Families f = RenderWithTopKernelNames("void b<1>()", "a(int)");
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "b"}}), 0.15);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "a"}}), 0.05);
}

// Before issue 60 both became k U+FFFD and the second series was dropped.
TEST(SnapshotCollectableTest, KernelNamesDifferingInInvalidBytesStayTwoSeries) {
  const Families f = RenderWithTopKernelNames("k\xff", "k\xfe");
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "k\\xff"}}), 0.15);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "k\\xfe"}}), 0.05);
  // The rewrites are counted, not silent.
  EXPECT_GE(Value(f, "profwatch_label_values_rewritten", {{"reason", "invalid_utf8"}}), 2);
}

// A name holding the escape text literally, a literal U+FFFD and the byte
// itself: three names, three series.
TEST(SnapshotCollectableTest, NamesHoldingTheEscapeTextNeverMeetTheEscapedByte) {
  Families f = RenderWithTopKernelNames("k\xEF\xBF\xBD", "k\xff");  // a literal U+FFFD first
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "k\xEF\xBF\xBD"}}), 0.15);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "k\\xff"}}), 0.05);
  f = RenderWithTopKernelNames("k\\xff", "k\xff");  // the text `k\xff`, then the byte
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "k\\\\xff"}}), 0.15);
  EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds", {{"kernel", "k\\xff"}}), 0.05);
}

// Two runs whose names differ only in bytes that are not UTF-8: two series
// (before issue 60: one, the second run dropped from the scrape).
TEST(SnapshotCollectableTest, RunsDifferingInInvalidBytesExportASeriesEach) {
  snapshot::Snapshot s;
  s.metrics_detail = true;  // the kernel series are detail
  snapshot::RunState a = testing::RunWithEverything();
  a.key.run = "run-\xff";
  snapshot::RunState b = a;
  b.key.run = "run-\xfe";
  s.runs.emplace(a.key, a);
  s.runs.emplace(b.key, b);
  const Families f = RenderPublished(s, kTestBuild);
  // Value() fails unless exactly one sample matches.
  for (const char* run : {"run-\\xff", "run-\\xfe"}) {
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_window_gpus", {{"run", run}}),
                     static_cast<double>(a.stats->gpus()))
        << run;
    EXPECT_DOUBLE_EQ(Value(f, "profwatch_kernel_seconds",
                           {{"run", run}, {"kernel", a.stats->families[0].top_kernels[0].name}}),
                     0.15)
        << run;
  }
  // The exposition text (the /metrics body) says the same.
  const std::string text = RenderText(s, kTestBuild);
  EXPECT_NE(text.find(R"(run="run-\\xff")"), std::string::npos);
  EXPECT_NE(text.find(R"(run="run-\\xfe")"), std::string::npos);
}

TEST(SnapshotCollectableTest, ValidUtf8IntoTellsWhetherItReplaced) {
  std::string out;
  EXPECT_FALSE(ValidUtf8Into("ascii_kernel", out));
  EXPECT_EQ(out, "ascii_kernel");
  EXPECT_FALSE(ValidUtf8Into("caf\xC3\xA9", out));  // well-formed two-byte sequence
  EXPECT_EQ(out, "caf\xC3\xA9");
  EXPECT_TRUE(ValidUtf8Into("a\xff\xC3", out));  // stray byte, then a truncated sequence
  EXPECT_EQ(out, "a\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(ValidUtf8Into("\xED\xA0\x80", out));  // a surrogate: each byte replaced
  EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_FALSE(ValidUtf8Into("", out));
  EXPECT_EQ(out, "");
}

// End to end through prometheus-cpp's HTTP exposer, as the daemon wires it.
TEST(SnapshotCollectableTest, ExposerServesSnapshotOverHttp) {
  if (!std::filesystem::exists("/usr/bin/curl")) GTEST_SKIP() << "curl not installed";
  auto store = StoreWith(testing::SampleSnapshot());
  prometheus::Exposer exposer("127.0.0.1:0", 1);
  auto collectable = std::make_shared<SnapshotCollectable>(store, kTestBuild);
  exposer.RegisterCollectable(collectable);
  ASSERT_EQ(exposer.GetListeningPorts().size(), 1u);
  const std::string url =
      "http://127.0.0.1:" + std::to_string(exposer.GetListeningPorts()[0]) + "/metrics";
  auto r = RunCommand("/usr/bin/curl -sS --max-time 10 " + url);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr(
                         "profwatch_window_gpus{training_job=\"1234-llama\",run=\"run-2\"} 1\n"));
  // The whole scrape (prometheus-cpp adds its own exposer_* families) lints clean.
  if (std::filesystem::exists("/usr/bin/promtool")) {
    TempDir dir;
    WriteFile(dir.Sub("scrape.txt"), r.out);
    auto lint = RunCommand("/usr/bin/promtool check metrics < '" + dir.Sub("scrape.txt") + "'");
    EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
    EXPECT_EQ(lint.out + lint.err, "");
  }
  // The next scrape after a publish without run-2 no longer has it.
  snapshot::Snapshot next = testing::SampleSnapshot();
  next.runs.erase(snapshot::RunKey{"1234-llama", "run-2"});
  next.pending_by_run.erase(snapshot::RunKey{"1234-llama", "run-2"});
  store->Publish(std::make_shared<const snapshot::Snapshot>(std::move(next)));
  r = RunCommand("/usr/bin/curl -sS --max-time 10 " + url);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("run=\"run-1\""));
  EXPECT_EQ(r.out.find("run=\"run-2\""), std::string::npos);
}

TEST(ValidUtf8Test, KeepsWellFormedAndReplacesEachBadByte) {
  EXPECT_EQ(ValidUtf8("plain"), "plain");
  EXPECT_EQ(ValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"),
            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), r + r);                  // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), r + r + r);          // UTF-16 surrogate
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(ValidUtf8("a\xE2\x82"), "a" + r + r);           // cut sequence
  EXPECT_EQ(ValidUtf8(std::string_view("\0x", 2)), std::string("\0x", 2));
}

}  // namespace
}  // namespace profwatch::expose
