// The per-window FLOP figures (flop_figures.h): per GPU per step, achieved
// and model FLOP/s, MFU, and every figure that cannot be computed absent
// with the reason.
#include "figures/flop_figures.h"

#include <gtest/gtest.h>

#include <string>

namespace profwatch::figures {
namespace {

using aggregate::WindowStats;

// A step time from the training log.
StepTime Log(double seconds) { return {seconds, "log"}; }

TEST(FlopFiguresTest, WindowFiguresAndWhyMfuIsMissing) {
  WindowStats s;
  s.profile_steps = 2;
  s.devices.resize(1);  // one GPU: divisor 2
  {
    const FlopFigures none = ComputeFlopFigures(s, Log(0.5));  // nothing counted
    EXPECT_FALSE(none.total_per_gpu_step.has_value());
    EXPECT_FALSE(none.attempted);
    EXPECT_FALSE(none.note.empty());
  }
  s.flops.flops = {4e12, 2e12, 0};
  s.flops.kernel_ps = {2'000'000'000'000, 1'000'000'000'000, 0};  // 3 s
  s.flops.families = {{"gemm", 4e12, 2'000'000'000'000}, {"attention", 2e12, 1'000'000'000'000}};
  s.flops.device_name = "Some GPU";
  const FlopFigures f = ComputeFlopFigures(s, Log(0.5));
  ASSERT_TRUE(f.per_gpu_step[0] && f.total_per_gpu_step);
  EXPECT_DOUBLE_EQ(*f.per_gpu_step[0], 2e12);
  EXPECT_DOUBLE_EQ(*f.total_per_gpu_step, 3e12);
  EXPECT_TRUE(f.note.empty());
  EXPECT_DOUBLE_EQ(*f.achieved_per_second, 2e12);
  EXPECT_DOUBLE_EQ(*f.model_per_second, 6e12);
  ASSERT_EQ(f.families.size(), 2u);
  EXPECT_DOUBLE_EQ(f.families[0].per_gpu_step + f.families[1].per_gpu_step, 3e12);
  EXPECT_DOUBLE_EQ(*f.families[0].achieved_per_second, 2e12);
  EXPECT_FALSE(f.mfu.has_value());
  EXPECT_NE(f.mfu_note.find("no known peak for device 'Some GPU'"), std::string::npos);
  s.flops.peak_per_second = 12e12;
  EXPECT_DOUBLE_EQ(*ComputeFlopFigures(s, Log(0.5)).mfu, 0.5);
  EXPECT_TRUE(ComputeFlopFigures(s, Log(0.5)).mfu_note.empty());
  const FlopFigures no_step = ComputeFlopFigures(s, {});
  EXPECT_FALSE(no_step.model_per_second.has_value());
  EXPECT_NE(no_step.mfu_note.find("no step time"), std::string::npos);
  s.flops.device_name.clear();
  s.flops.peak_per_second = 0;
  EXPECT_NE(ComputeFlopFigures(s, Log(0.5)).mfu_note.find("names its device"), std::string::npos);
}

// Issue #38: operators of counted kinds whose shapes were not recorded
// (PyTorch without record_shapes) count nothing: every figure is unset with
// the reason and the remedy, never 0 FLOP, 0 FLOP/s or 0% MFU.
TEST(FlopFiguresTest, NothingCountedIsAbsentNotZero) {
  WindowStats s;
  s.profile_steps = 3;
  s.devices.resize(1);
  s.files.push_back({});
  s.files[0].schema = parse::TraceSchema::kKineto;
  s.flops.unknown_ops = 177;
  s.flops.unknown_kernel_ps = 38'000'000'000;
  s.flops.device_name = "NVIDIA H200";
  s.flops.peak_per_second = 989.4e12;
  const FlopFigures f = ComputeFlopFigures(s, Log(0.081));
  EXPECT_TRUE(f.attempted);
  for (const auto& kind : f.per_gpu_step) EXPECT_FALSE(kind.has_value());
  EXPECT_FALSE(f.total_per_gpu_step.has_value());
  EXPECT_FALSE(f.achieved_per_second.has_value());
  EXPECT_FALSE(f.model_per_second.has_value());
  EXPECT_FALSE(f.mfu.has_value());
  EXPECT_TRUE(f.families.empty());
  EXPECT_NE(f.note.find("record_shapes=True"), std::string::npos) << f.note;
  EXPECT_NE(f.mfu_note.find("no counted FLOPs"), std::string::npos) << f.mfu_note;
  // A JAX window: the HLO modules are where its FLOPs come from.
  s.files[0].schema = parse::TraceSchema::kJaxTraceEvents;
  s.flops.unknown_ops = 0;
  EXPECT_NE(ComputeFlopFigures(s, Log(0.081)).note.find(".xplane.pb"), std::string::npos);
}

// Issue #37: a count no kernel could have done is unknown. Shapes claiming
// 1e6 x 1e6 x 1e6 matmuls (2e18 FLOP each) in microsecond kernels imply
// rates far above the device's peak (or, without a peak, above
// kNoPeakFlopsBound): no figure at all; the same holds for one family whose
// rate is impossible inside a plausible total, and for counted FLOPs in no
// kernel time.
// Issue #61: a kind with no counted FLOP is 0 only when no kernel of its
// family ran; attention kernels that ran uncounted make the attention kind
// unset with the reason (never 0.0), and a family whose FLOPs were counted
// as another kind keeps its kind's zero.
TEST(FlopFiguresTest, KindWhoseKernelsRanUncountedIsAbsentNotZero) {
  WindowStats s;
  s.profile_steps = 2;
  s.devices.resize(1);  // divisor 2
  s.families = {{"gemm", classify::FamilyKind::kMath, 1, 2'000'000'000'000, 1, 0, 0, {}},
                {"attention", classify::FamilyKind::kMath, 1, 3'000'000'000'000, 1, 0, 0, {}}};
  s.flops.flops = {4e12, 0, 0};
  s.flops.kernel_ps = {2'000'000'000'000, 0, 0};
  s.flops.families = {{"gemm", 4e12, 2'000'000'000'000}};
  const FlopFigures f = ComputeFlopFigures(s, Log(0.5));
  ASSERT_TRUE(f.total_per_gpu_step);
  ASSERT_TRUE(f.per_gpu_step[0]);
  EXPECT_DOUBLE_EQ(*f.per_gpu_step[0], 2e12);
  EXPECT_FALSE(f.per_gpu_step[1]);
  EXPECT_EQ(f.kind_notes[1],
            "attention kernels ran (1.5 s per GPU step) and none of their FLOPs were "
            "counted: their operators have no FLOP formula or no usable shapes (see uncounted)");
  ASSERT_TRUE(f.per_gpu_step[2]);  // no conv kernel ran: a true zero
  EXPECT_EQ(*f.per_gpu_step[2], 0.0);
  EXPECT_TRUE(f.kind_notes[0].empty() && f.kind_notes[2].empty());
  // The attention kernels' FLOPs counted as matmul (a math attention's
  // GEMMs): no attention-kind FLOP, and nothing uncounted.
  s.flops.flops[0] = 5e12;
  s.flops.kernel_ps[0] = 5'000'000'000'000;
  s.flops.families.push_back({"attention", 1e12, 3'000'000'000'000});
  const FlopFigures g = ComputeFlopFigures(s, Log(0.5));
  ASSERT_TRUE(g.per_gpu_step[1]);
  EXPECT_EQ(*g.per_gpu_step[1], 0.0);
  EXPECT_TRUE(g.kind_notes[1].empty());
}

TEST(FlopFiguresTest, ImpossibleCountIsUnknown) {
  const double huge = 2e18;  // aten::mm of [1e6, 1e6] x [1e6, 1e6] (flops_test.cc)
  WindowStats s;
  s.profile_steps = 3;
  s.devices.resize(1);
  s.flops.flops = {huge, 0, 0};
  s.flops.kernel_ps = {10'000'000, 0, 0};  // 10 us
  s.flops.families = {{"gemm", huge, 10'000'000}};
  for (double peak : {989.4e12, 0.0}) {
    SCOPED_TRACE(peak);
    s.flops.peak_per_second = peak;
    const FlopFigures f = ComputeFlopFigures(s, Log(0.081));
    EXPECT_FALSE(f.total_per_gpu_step.has_value());
    EXPECT_FALSE(f.model_per_second.has_value());
    EXPECT_FALSE(f.mfu.has_value());
    EXPECT_TRUE(f.families.empty());
    EXPECT_NE(f.note.find("impossible count"), std::string::npos) << f.note;
  }
  // A real GEMM (780 TFLOP/s) beside an impossible elementwise family.
  s.flops.peak_per_second = 989.4e12;
  s.flops.flops = {780e12 + 1e12, 0, 0};
  s.flops.kernel_ps = {1'000'000'000'000 + 1'000'000, 0, 0};
  s.flops.families = {{"gemm", 780e12, 1'000'000'000'000}, {"elementwise", 1e12, 1'000'000}};
  EXPECT_NE(ComputeFlopFigures(s, Log(1.0)).note.find("the elementwise kernels"),
            std::string::npos);
  // FLOPs in no kernel time.
  s.flops.families = {{"gemm", 780e12, 1'000'000'000'000}, {"other", 1e9, 0}};
  s.flops.flops = {780e12 + 1e9, 0, 0};
  s.flops.kernel_ps = {1'000'000'000'000, 0, 0};
  EXPECT_FALSE(ComputeFlopFigures(s, Log(1.0)).total_per_gpu_step.has_value());
  // Plausible: 780 TFLOP/s on an H200, MFU under 1.
  s.flops.families = {{"gemm", 780e12, 1'000'000'000'000}};
  s.flops.flops = {780e12, 0, 0};
  const FlopFigures ok = ComputeFlopFigures(s, Log(3.0));
  ASSERT_TRUE(ok.mfu.has_value()) << ok.note << ok.mfu_note;
  EXPECT_DOUBLE_EQ(*ok.mfu, 780e12 / 3 / 3.0 / 989.4e12);
  // A step shorter than the counted work: model FLOP/s above the peak.
  const FlopFigures short_step = ComputeFlopFigures(s, Log(0.1));
  EXPECT_TRUE(short_step.total_per_gpu_step.has_value());
  EXPECT_FALSE(short_step.model_per_second.has_value());
  EXPECT_FALSE(short_step.mfu.has_value());
  EXPECT_NE(short_step.mfu_note.find("above the 989.4 TFLOP/s peak"), std::string::npos)
      << short_step.mfu_note;
}

}  // namespace
}  // namespace profwatch::figures
