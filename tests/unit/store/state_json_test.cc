#include "store/state_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/text.h"
#include "figures/byte_figures.h"
#include "figures/flop_figures.h"
#include "testing/sample_snapshot.h"

namespace profwatch::store {
namespace {

using ::testing::HasSubstr;

// Field-by-field equality (the structs have no operator==). NaN equals NaN
// here: the round trip must preserve it.
bool SameDouble(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}
bool SameOpt(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || SameDouble(*a, *b));
}

void ExpectSameStats(const aggregate::WindowStats& a, const aggregate::WindowStats& b) {
  ASSERT_EQ(a.files.size(), b.files.size());
  for (size_t i = 0; i < a.files.size(); ++i) {
    const auto &x = a.files[i], &y = b.files[i];
    EXPECT_EQ(x.path, y.path);
    EXPECT_EQ(x.schema, y.schema);
    EXPECT_EQ(x.events, y.events);
    EXPECT_EQ(x.suspected_truncated, y.suspected_truncated);
    EXPECT_EQ(x.partial, y.partial);
    EXPECT_EQ(x.drops, y.drops);
    EXPECT_EQ(x.gpus, y.gpus);
  }
  EXPECT_EQ(a.timestamp_dirs, b.timestamp_dirs);
  EXPECT_EQ(a.idle_gpu_agents, b.idle_gpu_agents);
  EXPECT_EQ(a.idle_gpu_agent_names, b.idle_gpu_agent_names);
  EXPECT_EQ(a.rule_set, b.rule_set);
  EXPECT_EQ(a.profile_steps, b.profile_steps);
  EXPECT_EQ(a.launcher_mode, b.launcher_mode);
  EXPECT_TRUE(SameDouble(a.gpus_per_file, b.gpus_per_file));
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.truncated, b.truncated);
  ASSERT_EQ(a.families.size(), b.families.size());
  for (size_t i = 0; i < a.families.size(); ++i) {
    const auto &x = a.families[i], &y = b.families[i];
    EXPECT_EQ(x.family, y.family);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.launches, y.launches);
    EXPECT_EQ(x.total_ps, y.total_ps);
    EXPECT_EQ(x.distinct_kernels, y.distinct_kernels);
    EXPECT_EQ(x.exclusive_ps, y.exclusive_ps);
    EXPECT_EQ(x.idle_before_ps, y.idle_before_ps);
    ASSERT_EQ(x.top_kernels.size(), y.top_kernels.size());
    for (size_t k = 0; k < x.top_kernels.size(); ++k) {
      EXPECT_EQ(x.top_kernels[k].name, y.top_kernels[k].name);
      EXPECT_EQ(x.top_kernels[k].launches, y.top_kernels[k].launches);
      EXPECT_EQ(x.top_kernels[k].total_ps, y.top_kernels[k].total_ps);
      EXPECT_EQ(x.top_kernels[k].exclusive_ps, y.top_kernels[k].exclusive_ps);
      EXPECT_EQ(x.top_kernels[k].idle_before_ps, y.top_kernels[k].idle_before_ps);
    }
  }
  EXPECT_EQ(a.total_kernel_ps, b.total_kernel_ps);
  EXPECT_EQ(a.total_launches, b.total_launches);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const auto &x = a.devices[i], &y = b.devices[i];
    EXPECT_EQ(x.file, y.file);
    EXPECT_EQ(x.device, y.device);
    EXPECT_EQ(x.kernels, y.kernels);
    EXPECT_EQ(x.kernel_ps, y.kernel_ps);
    EXPECT_EQ(x.busy_ps, y.busy_ps);
    EXPECT_EQ(x.span_ps, y.span_ps);
    EXPECT_EQ(x.streams, y.streams);
    EXPECT_EQ(x.comm_ps, y.comm_ps);
    EXPECT_EQ(x.exposed_comm_ps, y.exposed_comm_ps);
    EXPECT_EQ(x.memops, y.memops);
    EXPECT_EQ(x.memop_ps, y.memop_ps);
    EXPECT_EQ(x.pid, y.pid);
    EXPECT_EQ(x.device_id, y.device_id);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.compute_busy_ps, y.compute_busy_ps);
    EXPECT_EQ(x.exclusive_ps, y.exclusive_ps);
    EXPECT_EQ(x.largest_gaps_ps, y.largest_gaps_ps);
  }
  // The blocker candidates (issue #29).
  ASSERT_EQ(a.serial_kernels.size(), b.serial_kernels.size());
  for (size_t i = 0; i < a.serial_kernels.size(); ++i) {
    EXPECT_EQ(a.serial_kernels[i].name, b.serial_kernels[i].name);
    EXPECT_EQ(a.serial_kernels[i].family, b.serial_kernels[i].family);
    EXPECT_EQ(a.serial_kernels[i].launches, b.serial_kernels[i].launches);
    EXPECT_EQ(a.serial_kernels[i].total_ps, b.serial_kernels[i].total_ps);
    EXPECT_EQ(a.serial_kernels[i].exclusive_ps, b.serial_kernels[i].exclusive_ps);
  }
  // The diagnosis lists (issue #22).
  auto same_ranked = [](const std::vector<aggregate::RankedKernel>& x,
                        const std::vector<aggregate::RankedKernel>& y) {
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].name, y[i].name);
      EXPECT_EQ(x[i].family, y[i].family);
      EXPECT_EQ(x[i].ps, y[i].ps);
    }
  };
  same_ranked(a.top_exclusive, b.top_exclusive);
  same_ranked(a.top_idle_before, b.top_idle_before);
  EXPECT_EQ(a.has_regions, b.has_regions);
  EXPECT_EQ(a.regions_other_ps, b.regions_other_ps);
  ASSERT_EQ(a.regions.size(), b.regions.size());
  for (size_t i = 0; i < a.regions.size(); ++i) {
    EXPECT_EQ(a.regions[i].region, b.regions[i].region);
    EXPECT_EQ(a.regions[i].kernel_ps, b.regions[i].kernel_ps);
  }
  ASSERT_EQ(a.trace_steps.size(), b.trace_steps.size());
  for (size_t i = 0; i < a.trace_steps.size(); ++i) {
    EXPECT_EQ(a.trace_steps[i].file, b.trace_steps[i].file);
    EXPECT_EQ(a.trace_steps[i].step, b.trace_steps[i].step);
    EXPECT_EQ(a.trace_steps[i].dur_ps, b.trace_steps[i].dur_ps);
  }
  for (size_t k = 0; k < aggregate::kCollectiveKinds; ++k) {
    const aggregate::CollectiveSums& x = a.collectives.kinds[k];
    const aggregate::CollectiveSums& y = b.collectives.kinds[k];
    EXPECT_EQ(x.calls, y.calls) << k;
    EXPECT_EQ(x.kernel_ps, y.kernel_ps) << k;
    EXPECT_EQ(x.exposed_ps, y.exposed_ps) << k;
    EXPECT_EQ(x.sized_calls, y.sized_calls) << k;
    EXPECT_EQ(x.oversized_calls, y.oversized_calls) << k;
    EXPECT_EQ(x.sized_ps, y.sized_ps) << k;
    EXPECT_EQ(x.bytes, y.bytes) << k;
    EXPECT_EQ(x.bus_ps, y.bus_ps) << k;
    EXPECT_EQ(x.bus_bytes, y.bus_bytes) << k;
    EXPECT_EQ(x.group_sizes, y.group_sizes) << k;
    EXPECT_EQ(x.more_group_sizes, y.more_group_sizes) << k;
    EXPECT_EQ(x.process_groups, y.process_groups) << k;
    EXPECT_EQ(x.more_process_groups, y.more_process_groups) << k;
  }
}

void ExpectSameRun(const snapshot::RunState& a, const snapshot::RunState& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.window_id, b.window_id);
  EXPECT_EQ(a.window_start, b.window_start);
  ExpectSameStats(*a.stats, *b.stats);
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.expected_gpus, b.expected_gpus);
  EXPECT_EQ(a.incomplete, b.incomplete);
  EXPECT_EQ(a.window_failure, b.window_failure);
  EXPECT_TRUE(SameDouble(a.analyzed_unix, b.analyzed_unix));
  EXPECT_TRUE(SameOpt(a.step_seconds, b.step_seconds));
  EXPECT_EQ(a.step_source, b.step_source);
  EXPECT_EQ(a.training.last_step, b.training.last_step);
  EXPECT_TRUE(SameOpt(a.training.last_step_seconds, b.training.last_step_seconds));
  EXPECT_TRUE(SameOpt(a.training.steady_step_seconds, b.training.steady_step_seconds));
  EXPECT_TRUE(
      SameOpt(a.training.tokens_per_second_per_device, b.training.tokens_per_second_per_device));
  EXPECT_TRUE(SameOpt(a.training.tflops_per_device, b.training.tflops_per_device));
  EXPECT_TRUE(SameOpt(a.training.mfu_ratio, b.training.mfu_ratio));
  EXPECT_TRUE(SameOpt(a.training.loss, b.training.loss));
  EXPECT_TRUE(SameOpt(a.training.last_step_unix, b.training.last_step_unix));
  EXPECT_TRUE(SameDouble(a.last_activity_unix, b.last_activity_unix));
  EXPECT_EQ(a.has_window, b.has_window);
  EXPECT_EQ(a.window_log, b.window_log);
}

snapshot::Snapshot Tricky() {
  snapshot::Snapshot s = testing::SampleSnapshot();
  snapshot::RunState r = s.runs.begin()->second;
  r.training.loss = std::numeric_limits<double>::quiet_NaN();
  r.training.mfu_ratio = std::numeric_limits<double>::infinity();
  r.training.tflops_per_device = -std::numeric_limits<double>::infinity();
  r.training.tokens_per_second_per_device = -0.0;
  r.training.last_step = std::numeric_limits<int64_t>::min();
  r.analyzed_unix = 0.1 + 0.2;  // not representable in short decimal
  aggregate::WindowStats& st = r.MutableStats();
  st.devices[0].kernel_ps = std::numeric_limits<int64_t>::max();
  st.families[0].total_ps = -5;
  st.events = std::numeric_limits<uint64_t>::max();
  st.launcher_mode = aggregate::LauncherMode::kMixed;
  st.families[1].kind = classify::FamilyKind::kMemory;
  st.files[0].schema = parse::TraceSchema::kNsys;
  st.devices[0].pid = 4012;  // an nsys device: process, CUDA device, rank
  st.devices[0].device_id = 3;
  st.devices[0].rank = 11;
  r.key.run = "run \"1\"\n\\ é";
  s.runs.emplace(r.key, r);
  return s;
}

TEST(StateJsonTest, SnapshotRoundTripsLosslessly) {
  {
    const snapshot::Snapshot in = Tricky();
    const std::string text = SerializeState(in);
    auto out = ParseState(text);
    ASSERT_TRUE(out) << out.error().ToString();
    EXPECT_DOUBLE_EQ(out->last_scan_unix, in.last_scan_unix);
    EXPECT_EQ(out->pending_windows, in.pending_windows);
    ASSERT_EQ(out->runs.size(), in.runs.size());
    for (const auto& [key, rs] : in.runs) {
      ASSERT_TRUE(out->runs.count(key)) << key.training_job << "/" << key.run;
      SCOPED_TRACE(key.run);
      ExpectSameRun(rs, out->runs.at(key));
    }
    // Serialization is deterministic and stable across a round trip.
    EXPECT_EQ(SerializeState(*out), text);
    // Written run by run, it is byte for byte the whole document's dump.
    EXPECT_EQ(
        nlohmann::json::parse(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
        text);
  }
}

TEST(StateJsonTest, RunStateRoundTrips) {
  for (const snapshot::RunState& in :
       {testing::RunWithEverything(), testing::RunWithoutStepTime(), testing::RunWithLogOnly()}) {
    auto out = ParseRunState(SerializeRunState(in));
    ASSERT_TRUE(out) << out.error().ToString();
    ExpectSameRun(in, *out);
  }
}

// Issue #38: a window whose FLOPs could not be counted (operators of
// counted kinds without shapes) or whose count is impossible stays so after
// a restart: the figures recomputed from the loaded state are absent with
// the same note, never 0; a counted window keeps its figures.
TEST(StateJsonTest, AbsentFlopFiguresStayAbsentAcrossARoundTrip) {
  auto figures_after_round_trip = [](const snapshot::RunState& in) {
    auto out = ParseRunState(SerializeRunState(in));
    EXPECT_TRUE(out) << out.error().ToString();
    const auto before = figures::ComputeFlopFigures(*in.stats, in.step());
    const auto after = figures::ComputeFlopFigures(*out->stats, out->step());
    EXPECT_EQ(before.total_per_gpu_step, after.total_per_gpu_step);
    EXPECT_EQ(before.model_per_second, after.model_per_second);
    EXPECT_EQ(before.mfu, after.mfu);
    EXPECT_EQ(before.note, after.note);
    EXPECT_EQ(before.mfu_note, after.mfu_note);
    return after;
  };
  snapshot::RunState counted = testing::RunWithEverything();
  counted.step_seconds = 0.4;
  EXPECT_TRUE(figures_after_round_trip(counted).mfu.has_value());

  snapshot::RunState unshaped = counted;
  aggregate::WindowStats& u = unshaped.MutableStats();
  u.files[0].schema = parse::TraceSchema::kKineto;
  u.flops.flops = {0, 0, 0};
  u.flops.kernel_ps = {0, 0, 0};
  u.flops.families.clear();
  u.flops.unknown_ops = 177;
  const figures::FlopFigures f = figures_after_round_trip(unshaped);
  EXPECT_FALSE(f.total_per_gpu_step.has_value());
  EXPECT_FALSE(f.mfu.has_value());
  EXPECT_NE(f.note.find("record_shapes=True"), std::string::npos) << f.note;

  snapshot::RunState impossible = counted;
  impossible.MutableStats().flops.flops[0] = 2e20;
  impossible.MutableStats().flops.families = {{"GEMM", 2e20, 1'000'000'000'000}};
  const figures::FlopFigures g = figures_after_round_trip(impossible);
  EXPECT_FALSE(g.total_per_gpu_step.has_value());
  EXPECT_NE(g.note.find("impossible count"), std::string::npos) << g.note;
}

// Collectives survive a restart from the state file (the sample's 60
// all-reduces, 4 ranks, with sizes); a file written before them has none,
// and an unknown kind is an error naming the field.
TEST(StateJsonTest, CollectivesRoundTripAndOlderFilesHaveNone) {
  snapshot::RunState in = testing::RunWithEverything();
  in.MutableStats().collectives[aggregate::CollectiveKind::kAllReduce].calls = 60;
  in.MutableStats().collectives[aggregate::CollectiveKind::kAllReduce].bytes = 6e9;
  in.MutableStats().collectives[aggregate::CollectiveKind::kAllReduce].group_sizes = {4, 8};
  in.MutableStats().collectives[aggregate::CollectiveKind::kAllReduce].process_groups = {
      {"fsdp", "[0, 1, 2, 3]"}, {"tp", "[0, 1]"}};
  in.MutableStats().collectives[aggregate::CollectiveKind::kAllReduce].more_process_groups = true;
  in.MutableStats().collectives[aggregate::CollectiveKind::kAllReduce].oversized_calls = 3;
  nlohmann::json j = nlohmann::json::parse(SerializeRunState(in));
  ASSERT_EQ(j.at("stats").at("collectives").size(), 1u) << j.at("stats").dump();
  EXPECT_EQ(j["stats"]["collectives"][0]["oversized_calls"], 3);
  auto out = ParseRunState(j.dump());
  ASSERT_TRUE(out) << out.error().ToString();
  const aggregate::CollectiveSums& ar =
      out->stats->collectives[aggregate::CollectiveKind::kAllReduce];
  EXPECT_EQ(ar.calls, 60);
  EXPECT_EQ(ar.oversized_calls, 3);
  EXPECT_EQ(ar.bytes, 6e9);
  EXPECT_EQ(ar.group_sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(ar.process_groups,
            (std::vector<aggregate::ProcessGroup>{{"fsdp", "[0, 1, 2, 3]"}, {"tp", "[0, 1]"}}));
  EXPECT_TRUE(ar.more_process_groups);
  // A file written before process groups has none; text read back is kept
  // as the analysis keeps it (printable, bounded).
  nlohmann::json& entry = j["stats"]["collectives"][0];
  entry["process_groups"][0]["description"] = std::string("fs\ndp") + std::string(100, 'x');
  auto cut = ParseRunState(j.dump());
  ASSERT_TRUE(cut) << cut.error().ToString();
  const aggregate::ProcessGroup& first =
      cut->stats->collectives[aggregate::CollectiveKind::kAllReduce].process_groups.at(0);
  EXPECT_EQ(first.description.size(), aggregate::kMaxProcessGroupText);
  EXPECT_EQ(first.description.substr(0, 5), "fsdpx");
  entry.erase("process_groups");
  entry.erase("more_process_groups");
  entry.erase("oversized_calls");  // written only when some call had one (issue 47)
  auto before = ParseRunState(j.dump());
  ASSERT_TRUE(before) << before.error().ToString();
  EXPECT_EQ(before->stats->collectives[aggregate::CollectiveKind::kAllReduce].oversized_calls, 0);
  EXPECT_TRUE(
      before->stats->collectives[aggregate::CollectiveKind::kAllReduce].process_groups.empty());
  j["stats"].erase("collectives");
  auto old = ParseRunState(j.dump());
  ASSERT_TRUE(old) << old.error().ToString();
  EXPECT_FALSE(old->stats->collectives.Any());
  j["stats"]["collectives"] = nlohmann::json::array({{{"collective", "all_scream"}}});
  auto bad = ParseRunState(j.dump());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().context.find("collectives"), std::string::npos) << bad.error().context;
}

// Issue #63: a rocprofv3 window's idle GPU agents survive a restart (count
// and names); a window of another format, or a file written before them,
// has none (absent, not 0); names past the window's list cap are not kept.
TEST(StateJsonTest, IdleGpuAgentsRoundTripAndOtherWindowsHaveNone) {
  snapshot::RunState in = testing::RunWithEverything();
  in.MutableStats().idle_gpu_agents.reset();
  in.MutableStats().idle_gpu_agent_names.clear();
  nlohmann::json plain = nlohmann::json::parse(SerializeRunState(in));
  EXPECT_FALSE(plain.at("stats").contains("idle_gpu_agents"));
  auto none = ParseRunState(plain.dump());
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_FALSE(none->stats->idle_gpu_agents.has_value());
  in.MutableStats().idle_gpu_agents = 7;
  in.MutableStats().idle_gpu_agent_names = {"pid 908 GPU 1 (AMD Instinct MI350X)",
                                            "pid 908 GPU 2 (AMD Instinct MI350X)"};
  nlohmann::json j = nlohmann::json::parse(SerializeRunState(in));
  EXPECT_EQ(j["stats"]["idle_gpu_agents"], 7);
  auto out = ParseRunState(j.dump());
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->stats->idle_gpu_agents, 7);
  EXPECT_EQ(out->stats->idle_gpu_agent_names, in.stats->idle_gpu_agent_names);
  j["stats"]["idle_gpu_agent_names"] =
      std::vector<std::string>(aggregate::kIdleGpuAgentNamesListed + 5, "pid 1 GPU 0");
  auto capped = ParseRunState(j.dump());
  ASSERT_TRUE(capped) << capped.error().ToString();
  EXPECT_EQ(capped->stats->idle_gpu_agent_names.size(), aggregate::kIdleGpuAgentNamesListed);
  j["stats"]["idle_gpu_agents"] = "seven";
  EXPECT_FALSE(ParseRunState(j.dump()));
}

// Issue #51: a window's bytes survive a restart as they were counted, and
// a state file written before bytes reads as a window whose bytes are absent
// with the reason (never 0).
TEST(StateJsonTest, BytesRoundTripAndOlderFilesHaveNone) {
  snapshot::RunState in = testing::RunWithEverything();
  aggregate::ByteStats& b = in.MutableStats().bytes;
  b.families = {{"gemm", 1.78e10, 33'000'000'000},
                {"elementwise", 1.9e10, 7'000'000'000, 7'000'000'000}};
  b.unknown_ops = 2;
  b.memop_bytes = 131140;
  b.memop_ps = 5'000'000;
  b.memops = 3;
  b.peak_hbm_bytes_per_second = 4.8e12;
  b.peak_hbm_source = "datasheet";
  nlohmann::json j = nlohmann::json::parse(SerializeRunState(in));
  auto out = ParseRunState(j.dump());
  ASSERT_TRUE(out) << out.error().ToString();
  const aggregate::ByteStats& o = out->stats->bytes;
  ASSERT_EQ(o.families.size(), 2u);
  EXPECT_EQ(o.families[1].family, "elementwise");
  EXPECT_EQ(o.families[1].bytes, 1.9e10);
  EXPECT_EQ(o.families[0].kernel_ps, 33'000'000'000);
  EXPECT_EQ(o.families[0].memory_bound_ps, 0);
  EXPECT_EQ(o.families[1].memory_bound_ps, 7'000'000'000);
  EXPECT_EQ(o.unknown_ops, 2);
  EXPECT_EQ(o.memop_bytes, 131140);
  EXPECT_EQ(o.memop_ps, 5'000'000);
  EXPECT_EQ(o.memops, 3);
  EXPECT_EQ(o.peak_hbm_bytes_per_second, 4.8e12);
  EXPECT_EQ(o.peak_hbm_source, "datasheet");
  EXPECT_TRUE(o.absent.empty());
  // A state written before issue #61 has no memory-bound time: 0, so no
  // family is placed on the memory roof without FLOPs.
  nlohmann::json before61 = j;
  for (auto& fam : before61["stats"]["bytes"]["families"]) fam.erase("memory_bound_ps");
  auto kinds = ParseRunState(before61.dump());
  ASSERT_TRUE(kinds) << kinds.error().ToString();
  EXPECT_EQ(kinds->stats->bytes.families[1].memory_bound_ps, 0);
  EXPECT_EQ(kinds->stats->bytes.families[1].kernel_ps, 7'000'000'000);
  j["stats"].erase("bytes");
  auto old = ParseRunState(j.dump());
  ASSERT_TRUE(old) << old.error().ToString();
  EXPECT_TRUE(old->stats->bytes.families.empty());
  EXPECT_FALSE(old->stats->bytes.absent.empty());
  const figures::ByteFigures absent = figures::ComputeByteFigures(
      *old->stats, figures::ComputeFlopFigures(*old->stats, old->step()));
  EXPECT_FALSE(absent.bytes_per_gpu_step);
  EXPECT_EQ(absent.note, old->stats->bytes.absent);
}

// A state file written before window_start existed: the start comes from the
// window's first <ts> dir name, once, at load.
TEST(StateJsonTest, WindowStartMissingInAnOlderFileComesFromTheWindowName) {
  snapshot::RunState in = testing::RunWithEverything();
  nlohmann::json j = nlohmann::json::parse(SerializeRunState(in));
  ASSERT_EQ(j.at("window_start"), 1795309200);
  j.erase("window_start");
  auto out = ParseRunState(j.dump());
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->window_start, 1795309200);
  j["window_start"] = "soon";
  auto bad = ParseRunState(j.dump());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().context.find("window_start"), std::string::npos) << bad.error().context;
}

// A window placed in its training log keeps its place and step time.
TEST(StateJsonTest, WindowLogStepsRoundTrip) {
  snapshot::RunState in = testing::RunWithEverything();
  in.window_log = {.bound = true,
                   .located = true,
                   .first_step = 65,
                   .last_step = 67,
                   .period_first = 8,
                   .period_end = 125,
                   .segment = 2,
                   .seconds = 0.053,
                   .steps = 20,
                   .settled = true};
  auto out = ParseRunState(SerializeRunState(in));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->window_log, in.window_log);
  // An anchor with an unbounded period and no value yet.
  in.window_log = {};
  in.window_log.bound = true;
  in.window_log.first_step = 75;
  in.window_log.last_step = 75;
  out = ParseRunState(SerializeRunState(in));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->window_log, in.window_log);
}

// A file written before windows were placed in their log: a window with a
// log step time keeps it, settled (the log re-read after a restart is past
// the window's steps).
TEST(StateJsonTest, WindowLogMissingInAnOlderFileKeepsTheLogStepTime) {
  snapshot::RunState in = testing::RunWithEverything();
  ASSERT_EQ(in.step_source, "log");
  ASSERT_TRUE(in.step_seconds);
  nlohmann::json j = nlohmann::json::parse(SerializeRunState(in));
  ASSERT_TRUE(j.contains("window_log"));
  j.erase("window_log");
  auto out = ParseRunState(j.dump());
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_TRUE(out->window_log.bound);
  EXPECT_TRUE(out->window_log.settled);
  EXPECT_EQ(out->window_log.seconds, in.step_seconds);
}

TEST(StateJsonTest, EmptySnapshotRoundTrips) {
  auto out = ParseState(SerializeState(snapshot::Snapshot{}));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_TRUE(out->runs.empty());
}

TEST(StateJsonTest, DocumentCarriesSchemaAndNonFiniteAsStrings) {
  const std::string text = SerializeState(Tricky());
  EXPECT_THAT(text, HasSubstr(R"("schema":"profwatch.state.v2")"));
  EXPECT_THAT(text, HasSubstr(R"("loss":"NaN")"));
  EXPECT_THAT(text, HasSubstr(R"("mfu_ratio":"Infinity")"));
  EXPECT_THAT(text, HasSubstr(R"("tflops_per_device":"-Infinity")"));
  EXPECT_THAT(text, HasSubstr(R"("launcher_mode":"mixed")"));
}

TEST(StateJsonTest, InvalidUtf8IsKeptReversiblyInsteadOfFailing) {
  snapshot::Snapshot s;
  snapshot::RunState r = testing::RunWithLogOnly();
  r.key.run = "bad\xff";
  s.runs.emplace(r.key, r);
  auto out = ParseState(SerializeState(s));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->runs.begin()->first.run, "bad\xff");
}

TEST(StateJsonTest, TruncatedTextIsCorruptAtEveryCut) {
  const std::string text = SerializeState(testing::SampleSnapshot());
  for (size_t cut = 0; cut < text.size(); cut += 7) {
    auto out = ParseState(std::string_view(text).substr(0, cut));
    ASSERT_FALSE(out) << "cut " << cut;
    EXPECT_EQ(out.error().code, ErrorCode::kCorrupt) << out.error().ToString();
  }
}

TEST(StateJsonTest, GarbageIsCorruptWithMessage) {
  for (std::string_view garbage : {"", "\x1f\x8b\x08", "null", "[]", "42", "{\"schema\":1}", "{}",
                                   "{\"schema\":\"profwatch.state.v1\"}"}) {
    auto out = ParseState(garbage);
    ASSERT_FALSE(out) << garbage;
    EXPECT_EQ(out.error().code, ErrorCode::kCorrupt) << garbage;
    EXPECT_THAT(out.error().context, HasSubstr("state")) << garbage;
  }
}

TEST(StateJsonTest, OtherSchemaVersionIsUnsupported) {
  auto out = ParseState(R"({"schema":"profwatch.state.v3","runs":[]})");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, ErrorCode::kUnsupported);
  EXPECT_THAT(out.error().context, HasSubstr("profwatch.state.v3"));
}

// Replaces the first occurrence of `from` in the serialized sample.
std::string Mutate(std::string_view from, std::string_view to) {
  std::string text = SerializeState(testing::SampleSnapshot());
  const size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

TEST(StateJsonTest, WrongFieldsNameTheirPath) {
  struct Case {
    std::string text;
    std::string want;
  };
  const Case cases[] = {
      {Mutate(R"("busy_ps":750000000000,)", ""), "runs[0].stats.devices[0]: busy_ps: missing"},
      {Mutate(R"("busy_ps":750000000000)", R"("busy_ps":"x")"), "busy_ps: not an integer"},
      {Mutate(R"("busy_ps":750000000000)", R"("busy_ps":1e400)"), "not JSON"},
      {Mutate(R"("busy_ps":750000000000)", R"("busy_ps":1.5)"), "busy_ps: not an integer"},
      {Mutate(R"("busy_ps":750000000000)", R"("busy_ps":18446744073709551615)"),
       "busy_ps: out of range"},
      {Mutate(R"("profile_steps":3)", R"("profile_steps":4294967296)"),
       "profile_steps: out of range"},
      {Mutate(R"("events":123456)", R"("events":-1)"), "events: not an unsigned integer"},
      {Mutate(R"("launcher_mode":"one_node_per_process")", R"("launcher_mode":"1-node/proc")"),
       "launcher_mode: unknown value \"1-node/proc\""},
      {Mutate(R"("kind":"comm")", R"("kind":7)"), "families[1]: kind: not a string"},
      {Mutate(R"("loss":2.125)", R"("loss":"two")"), "training: loss: not a number"},
      {Mutate(R"("has_window":true)", R"("has_window":1)"), "has_window: not a boolean"},
      {Mutate(R"("runs":[)", R"("runs":[1,)"), "runs[0]: not an object"},
      {Mutate(R"("timestamp_dirs":[)", R"("timestamp_dirs":[null,)"),
       "stats.timestamp_dirs[0]: not a string"},
      {Mutate(R"("drops":{)", R"("drops":{"x":"y",)"), "drops: x: not an unsigned integer"},
      {Mutate(R"("run":"run-2")", R"("run":"run-1")"), "duplicate run 1234-llama/run-1"},
      {Mutate(R"("trace_steps":{"dur_ps":[400000000000,)", R"("trace_steps":{"dur_ps":[)"),
       "stats.trace_steps: not three arrays of one length"},
      {Mutate(R"("file":[0,0])", R"("file":[0,1])"), "trace_steps: file: index 1 out of range"},
  };
  for (const Case& c : cases) {
    auto out = ParseState(c.text);
    ASSERT_FALSE(out) << c.want;
    EXPECT_EQ(out.error().code, ErrorCode::kCorrupt) << c.want;
    EXPECT_THAT(out.error().context, HasSubstr(c.want));
  }
}

// A state file written before the diagnosis figures existed loads with
// them at 0 (and no diagnosis lists), not as an error.
TEST(StateJsonTest, StateWithoutDiagnosisFiguresLoadsThemAsZero) {
  snapshot::Snapshot s = testing::SampleSnapshot();
  nlohmann::json doc = nlohmann::json::parse(SerializeState(s));
  size_t removed = 0;
  std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& j) {
    if (j.is_object()) {
      for (const char* k :
           {"exclusive_ps", "idle_before_ps", "compute_busy_ps", "top_exclusive", "top_idle_before",
            "regions", "regions_other_ps", "has_regions", "serial_kernels", "largest_gaps_ps"}) {
        removed += j.erase(k);
      }
      for (auto& [k, v] : j.items()) strip(v);
    } else if (j.is_array()) {
      for (auto& v : j) strip(v);
    }
  };
  strip(doc);
  EXPECT_GT(removed, 10u);
  auto back = ParseState(doc.dump());
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  const auto& st = *back->runs.begin()->second.stats;
  ASSERT_FALSE(st.devices.empty());
  EXPECT_EQ(st.devices[0].compute_busy_ps, 0);
  EXPECT_EQ(st.families[0].exclusive_ps, 0);
  EXPECT_TRUE(st.top_exclusive.empty());
  EXPECT_FALSE(st.has_regions);
  EXPECT_TRUE(st.regions.empty());
  EXPECT_TRUE(st.serial_kernels.empty());
  EXPECT_TRUE(st.devices[0].largest_gaps_ps.empty());
  EXPECT_EQ(st.devices[0].busy_ps, s.runs.begin()->second.stats->devices[0].busy_ps);
}

// profwatch.state.v1 kept one object per step marker, naming its file by
// path; such a document still loads, each marker in the file it named.
TEST(StateJsonTest, VersionOneStepsByPathLoad) {
  const snapshot::Snapshot s = testing::SampleSnapshot();
  nlohmann::json doc = nlohmann::json::parse(SerializeState(s));
  doc["schema"] = "profwatch.state.v1";
  size_t converted = 0;
  for (nlohmann::json& run : doc["runs"]) {
    nlohmann::json& st = run["stats"];
    const nlohmann::json columns = st["trace_steps"];
    nlohmann::json steps = nlohmann::json::array();
    for (size_t i = 0; i < columns["file"].size(); ++i) {
      steps.push_back({{"file", st["files"][columns["file"][i].get<size_t>()]["path"]},
                       {"step", columns["step"][i]},
                       {"dur_ps", columns["dur_ps"][i]}});
      ++converted;
    }
    st["trace_steps"] = std::move(steps);
  }
  ASSERT_GT(converted, 0u);
  auto back = ParseState(doc.dump());
  ASSERT_TRUE(back) << back.error().ToString();
  ASSERT_EQ(back->runs.size(), s.runs.size());
  for (const auto& [key, run] : s.runs) ExpectSameStats(*run.stats, *back->runs.at(key).stats);
  // A path that is none of the window's files is corrupt, not dropped.
  doc["runs"][0]["stats"]["trace_steps"][0]["file"] = "/elsewhere.json";
  auto bad = ParseState(doc.dump());
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().context,
              HasSubstr("trace_steps[0]: file: not one of the window's files"));
}

// The reader keeps each run as a RunState and drops its tree as the parser
// leaves it: what the parse returns holds no run, the snapshot every run.
TEST(StateJsonTest, StateRunReaderDropsEachRunsTree) {
  const snapshot::Snapshot s = testing::SampleSnapshot();
  const std::string inner = SerializeState(s);
  const std::string text = R"({"saved_unix":1,"snapshot":)" + inner + "}";
  StateRunReader reader({"snapshot"});
  nlohmann::json doc = nlohmann::json::parse(text, std::ref(reader));
  ASSERT_TRUE(doc["snapshot"]["runs"].is_array());
  EXPECT_TRUE(doc["snapshot"]["runs"].empty());
  auto snap = reader.Finish(doc["snapshot"]);
  ASSERT_TRUE(snap) << snap.error().ToString();
  ASSERT_EQ(snap->runs.size(), s.runs.size());
  for (const auto& [key, run] : s.runs) ExpectSameRun(run, snap->runs.at(key));
  // Read under another prefix, the same text's runs are not runs.
  StateRunReader elsewhere({"other"});
  doc = nlohmann::json::parse(text, std::ref(elsewhere));
  EXPECT_EQ(doc["snapshot"]["runs"].size(), s.runs.size());
}

// Only the elements of the state document's own "runs" are read as runs:
// a "runs" key anywhere else (an unknown field, inside a run) is left alone.
TEST(StateJsonTest, RunsAreReadOnlyFromTheDocumentsRunsArray) {
  auto out = ParseState(Mutate(R"("schema":)", R"("future":{"runs":[{"x":1}]},"schema":)"));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->runs.size(), 3u);
  out = ParseState(Mutate(R"("training_job":)", R"("extra":{"runs":[{"y":2}]},"training_job":)"));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->runs.size(), 3u);
}

TEST(StateJsonTest, UnknownKeysAreIgnored) {
  auto out = ParseState(Mutate(R"("schema":)", R"("future_field":{"a":[1]},"schema":)"));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->runs.size(), 3u);
}

TEST(StateJsonTest, ParseRunStateRejectsGarbage) {
  EXPECT_EQ(ParseRunState("{").error().code, ErrorCode::kCorrupt);
  EXPECT_EQ(ParseRunState("{}").error().code, ErrorCode::kCorrupt);
  EXPECT_THAT(ParseRunState(R"({"training_job":"a"})").error().context, HasSubstr("run: missing"));
}

// Names are kept reversibly (core/text.h ReversibleUtf8): two runs whose
// names differ only in bytes that are not UTF-8 stay two runs, and every
// string reads back to its exact bytes (issue 60; before, both became
// U+FFFD and the file held a duplicate run).
TEST(StateJsonTest, NamesThatAreNotUtf8RoundTripExactlyAndStayApart) {
  snapshot::Snapshot s;
  snapshot::RunState a = testing::RunWithEverything();
  a.key = {"x\xff", "run\\xfe"};  // the second: the escape text, literally
  a.window_id = "2024_03_01_12_00_00\xfe";
  a.window_failure = "open /jobs/x\xff: denied";
  a.MutableStats().files.at(0).path = "/jobs/x\xff/h0\\\xc3.trace.json.gz";
  snapshot::RunState b = a;
  b.key.training_job = "x\xfe";
  snapshot::RunState c = a;
  c.key.training_job = "x\\xff";  // the text `x\xff`, not the byte
  for (const auto* r : {&a, &b, &c}) s.runs.emplace(r->key, *r);
  const std::string text = SerializeState(s);
  EXPECT_EQ(ValidUtf8(text), text);
  EXPECT_THAT(text, HasSubstr(R"("training_job":"x\\xff")"));    // the byte
  EXPECT_THAT(text, HasSubstr(R"("training_job":"x\\\\xff")"));  // the text
  auto out = ParseState(text);
  ASSERT_TRUE(out) << out.error().ToString();
  ASSERT_EQ(out->runs.size(), 3u);
  for (const auto* r : {&a, &b, &c}) {
    auto it = out->runs.find(r->key);
    ASSERT_NE(it, out->runs.end()) << r->key.training_job;
    EXPECT_EQ(it->second.window_id, r->window_id);
    EXPECT_EQ(it->second.window_failure, r->window_failure);
    EXPECT_EQ(it->second.stats->files.at(0).path, r->stats->files.at(0).path);
  }
  EXPECT_EQ(SerializeState(*out), text);
}

// A file of an earlier version: names without `\\` or `\xHH` read as
// written, U+FFFD included.
TEST(StateJsonTest, NamesOfEarlierFilesWithoutTheEscapeReadAsBefore) {
  snapshot::Snapshot s;
  snapshot::RunState r = testing::RunWithLogOnly();
  r.key = {"job\xEF\xBF\xBD", "a\\b"};
  s.runs.emplace(r.key, r);
  auto out = ParseState(SerializeState(s));
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->runs.begin()->first.training_job, "job\xEF\xBF\xBD");
  EXPECT_EQ(out->runs.begin()->first.run, "a\\b");
}

// The daemon's reader drops a bad run alone (and says why); the strict
// ParseState still refuses the document.
TEST(StateJsonTest, AReaderDroppingBadRunsKeepsTheOthers) {
  snapshot::Snapshot s;
  for (const char* job : {"a", "b", "c"}) {
    snapshot::RunState r = testing::RunWithLogOnly();
    r.key.training_job = job;
    s.runs.emplace(r.key, r);
  }
  std::string text = SerializeState(s);
  // b becomes a second a; c loses a field; an element that is no run.
  text.replace(text.find(R"("training_job":"b")"), 18, R"("training_job":"a")");
  const size_t c = text.find(R"("training_job":"c")");
  const size_t has_window = text.rfind(R"("has_window":)", c);
  ASSERT_NE(has_window, std::string::npos);
  text.replace(has_window, 13, R"("has_windoz":)");
  text.replace(text.find(R"("runs":[)"), 8, R"("runs":[7,)");
  EXPECT_FALSE(ParseState(text));
  StateRunReader reader({}, /*drop_bad_runs=*/true);
  nlohmann::json doc = nlohmann::json::parse(text, std::ref(reader));
  auto out = reader.Finish(doc);
  ASSERT_TRUE(out) << out.error().ToString();
  ASSERT_EQ(out->runs.size(), 1u);
  EXPECT_EQ(out->runs.begin()->first.training_job, "a");
  std::multiset<std::string> reasons;
  for (const DroppedRun& d : reader.dropped()) reasons.insert(d.reason);
  EXPECT_EQ(reasons, (std::multiset<std::string>{"duplicate", "invalid", "invalid"}));
  std::string all;
  for (const DroppedRun& d : reader.dropped()) all += d.error.ToString() + "\n";
  EXPECT_THAT(all, HasSubstr("duplicate run a/"));
  EXPECT_THAT(all, HasSubstr("has_window: missing"));
}

}  // namespace
}  // namespace profwatch::store
