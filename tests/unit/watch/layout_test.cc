#include "watch/layout.h"

#include <gtest/gtest.h>

namespace profwatch::watch {
namespace {

TEST(ParseTimestampDirNameTest, ParsesUtcSecondsSinceEpoch) {
  EXPECT_EQ(ParseTimestampDirName("1970_01_01_00_00_00"), 0);
  EXPECT_EQ(ParseTimestampDirName("2024_03_01_12_30_05"), 1709296205);
  EXPECT_EQ(
      *ParseTimestampDirName("2024_03_01_12_30_05") - *ParseTimestampDirName("2024_02_29_12_30_05"),
      86400);
}

TEST(ParseTimestampDirNameTest, RejectsOtherNames) {
  EXPECT_FALSE(ParseTimestampDirName(""));
  EXPECT_FALSE(ParseTimestampDirName("2024_03_01_12_30"));
  EXPECT_FALSE(ParseTimestampDirName("2024-03-01_12_30_05"));
  EXPECT_FALSE(ParseTimestampDirName("2024_13_01_12_30_05"));
  EXPECT_FALSE(ParseTimestampDirName("2024_03_01_24_30_05"));
  EXPECT_FALSE(ParseTimestampDirName("2024_03_01_12_30_0x"));
  EXPECT_FALSE(ParseTimestampDirName("2024_03_01_12_30_055"));
}

TEST(TraceFileNameTest, RecognisesTraceSuffixes) {
  EXPECT_TRUE(IsTraceFileName("h0.trace.json.gz"));
  EXPECT_TRUE(IsTraceFileName("h0.trace.json"));
  EXPECT_TRUE(IsTraceFileName("w0.123.1700000000000.pt.trace.json"));
  EXPECT_TRUE(IsTraceFileName("w0.123.1700000000000.pt.trace.json.gz"));
  EXPECT_TRUE(IsTraceFileName("data.json.gz"));
  EXPECT_TRUE(IsTraceFileName("h0.xplane.pb"));
  EXPECT_FALSE(IsTraceFileName("h0.trace.json.gz.tmp"));
  EXPECT_FALSE(IsTraceFileName(".h0.trace.json.gz"));
  EXPECT_FALSE(IsTraceFileName("events.out.tfevents.123"));
  EXPECT_FALSE(IsTraceFileName(".json.gz"));
  EXPECT_FALSE(IsTraceFileName(""));
}

// The one rule for a rocprof dir: rocprofv3's own names, every one a trace
// file name (so the window grouping never drops what the scanner took).
TEST(TraceFileNameTest, RocprofOutputsAreRocprofv3NamesAndTraceFileNames) {
  for (const char* name :
       {"908_results.json", "908_results.json.gz", "node1_908_results.db", "any.json.gz"}) {
    EXPECT_TRUE(IsRocprofOutputName(name)) << name;
    EXPECT_TRUE(IsTraceFileName(name)) << name;
  }
  for (const char* name : {"merged.db", ".908_results.db", "_results.db", "908_results.db-wal",
                           "908_results.db-journal", "908.sqlite", "notes.json", "x.csv"}) {
    EXPECT_FALSE(IsRocprofOutputName(name)) << name;
  }
}

TEST(TraceFileNameTest, HostAndProcessKey) {
  EXPECT_EQ(HostOfTraceFile("h0.proc3.trace.json.gz"), "h0");
  EXPECT_EQ(HostOfTraceFile("node-7.trace.json.gz"), "node-7");
  EXPECT_EQ(HostOfTraceFile("34.83.195.179_6003.xplane.pb"), "34.83.195.179_6003");
  EXPECT_EQ(HostOfTraceFile("worker0.1234.1623143089861.pt.trace.json.gz"), "worker0");
  EXPECT_EQ(ProcessKeyOfTraceFile("h0.proc3.trace.json.gz"), "h0.proc3");
  EXPECT_EQ(ProcessKeyOfTraceFile("h0.xplane.pb"), ProcessKeyOfTraceFile("h0.trace.json.gz"));
  EXPECT_EQ(ProcessKeyOfTraceFile("worker0.1234.1623143089861.pt.trace.json"), "worker0.1234");
}

// torch names its traces <host>_<pid>.<capture ns>.pt.trace.json[.gz]: the
// host is what comes before the pid, underscores and digits of the host kept.
TEST(TraceFileNameTest, KinetoHostLeavesThePidOut) {
  EXPECT_EQ(HostOfTraceFile("vm_1481.1795652969892807939.pt.trace.json.gz"), "vm");
  EXPECT_EQ(HostOfTraceFile("vm_1481.1795652969892807939.pt.trace.json"), "vm");
  EXPECT_EQ(HostOfTraceFile("node_12_3456.123.pt.trace.json"), "node_12");
  EXPECT_EQ(HostOfTraceFile("gpu-node7_42.1700000000000000000.pt.trace.json.gz"), "gpu-node7");
  EXPECT_EQ(HostOfTraceFile("10.0.0.5_1481.1795652969892807939.pt.trace.json.gz"), "10.0.0.5");
  // A custom worker name without a pid, and the older <worker>.<pid>.<ts>.
  EXPECT_EQ(HostOfTraceFile("worker0.1623143089861.pt.trace.json.gz"), "worker0");
  EXPECT_EQ(HostOfTraceFile("rank_3.1234.1623143089861.pt.trace.json"), "rank_3");
  // Not Kineto: underscores and digits are the host's own.
  EXPECT_EQ(HostOfTraceFile("node_12.trace.json.gz"), "node_12");
  EXPECT_EQ(HostOfTraceFile("vm_1481.xplane.pb"), "vm_1481");
  EXPECT_TRUE(IsKinetoTraceFileName("vm_1481.1.pt.trace.json.gz"));
  EXPECT_FALSE(IsKinetoTraceFileName("vm.trace.json.gz"));
  // One process across capture cycles: the key keeps the pid.
  EXPECT_EQ(ProcessKeyOfTraceFile("vm_1481.1795652969892807939.pt.trace.json.gz"), "vm_1481");
}

TEST(KinetoCaptureTest, ReadsTheTimeInAnyUnitTorchWrites) {
  auto ns = KinetoCaptureOf("vm_1481.1795652969892807939.pt.trace.json.gz");
  ASSERT_TRUE(ns.has_value());
  EXPECT_EQ(ns->id, "1795652969892807939");
  EXPECT_EQ(ns->unix_ns, 1795652969892807939);
  auto ms = KinetoCaptureOf("w0.11.1709294400000.pt.trace.json");
  ASSERT_TRUE(ms.has_value());
  EXPECT_EQ(ms->unix_ns, 1709294400000'000'000);
  auto us = KinetoCaptureOf("w0.11.1709294400000123.pt.trace.json");
  ASSERT_TRUE(us.has_value());
  EXPECT_EQ(us->unix_ns, 1709294400000123'000);
  EXPECT_FALSE(KinetoCaptureOf("h0.trace.json.gz").has_value());
  EXPECT_FALSE(KinetoCaptureOf("worker.pt.trace.json").has_value());
  EXPECT_FALSE(KinetoCaptureOf("w.99999999999999999999.pt.trace.json").has_value());
}

}  // namespace
}  // namespace profwatch::watch
