#include "window/grouping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/test_util.h"
#include "watch/layout.h"

namespace profwatch::window {
namespace {

using ::testing::ElementsAre;

TimestampDir Dir(const std::string& name, std::vector<std::string> files) {
  TimestampDir d;
  d.path = "/run/plugins/profile/" + name;
  d.time = *watch::ParseTimestampDirName(name);
  d.files = std::move(files);
  return d;
}

TEST(GroupWindowsTest, MergesSplitOverThreeAdjacentDirs) {
  auto windows = GroupWindows({Dir("2024_03_01_12_30_07", {"h0.proc2.trace.json.gz"}),
                               Dir("2024_03_01_12_30_05", {"h0.proc0.trace.json.gz"}),
                               Dir("2024_03_01_12_30_06", {"h0.proc1.trace.json.gz"})},
                              120);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].id, "2024_03_01_12_30_05");
  EXPECT_EQ(windows[0].timestamp_dirs.size(), 3u);
  EXPECT_THAT(windows[0].files,
              ElementsAre("/run/plugins/profile/2024_03_01_12_30_05/h0.proc0.trace.json.gz",
                          "/run/plugins/profile/2024_03_01_12_30_06/h0.proc1.trace.json.gz",
                          "/run/plugins/profile/2024_03_01_12_30_07/h0.proc2.trace.json.gz"));
  EXPECT_EQ(windows[0].last_time - windows[0].first_time, 2);
}

TEST(GroupWindowsTest, ChainOfCloseDirsSpanningMinutesIsOneWindow) {
  std::vector<TimestampDir> dirs;
  // 40 processes, one dir every 9 s: 6 minutes in all, each gap within skew.
  for (int i = 0; i < 40; ++i) {
    TimestampDir d;
    d.path = "/p/d" + std::to_string(i);
    d.time = 1000 + 9 * i;
    d.files = {"h" + std::to_string(i) + ".trace.json.gz"};
    dirs.push_back(d);
  }
  auto windows = GroupWindows(dirs, 10);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].files.size(), 40u);
  EXPECT_EQ(windows[0].last_time - windows[0].first_time, 351);
}

TEST(GroupWindowsTest, StaleWindowTenMinutesOlderStaysSeparate) {
  auto windows = GroupWindows({Dir("2024_03_01_12_30_05", {"h0.trace.json.gz", "h1.trace.json.gz"}),
                               Dir("2024_03_01_12_20_05", {"h0.trace.json.gz"}),
                               Dir("2024_03_01_12_20_07", {"h1.trace.json.gz"})},
                              120);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].id, "2024_03_01_12_20_05");
  EXPECT_EQ(windows[0].files.size(), 2u);
  EXPECT_EQ(windows[1].id, "2024_03_01_12_30_05");
  EXPECT_EQ(windows[1].files.size(), 2u);
  EXPECT_EQ(windows[1].timestamp_dirs.size(), 1u);
}

TEST(GroupWindowsTest, RepeatedProcessKeyStartsNewWindow) {
  // Periodic profiling 30 s apart: within skew, but h0 writes once per window.
  auto windows = GroupWindows({Dir("2024_03_01_12_30_00", {"h0.trace.json.gz", "h0.xplane.pb"}),
                               Dir("2024_03_01_12_30_01", {"h1.trace.json.gz"}),
                               Dir("2024_03_01_12_30_30", {"h0.trace.json.gz"}),
                               Dir("2024_03_01_12_30_31", {"h1.trace.json.gz"})},
                              120);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].files.size(), 3u);  // json + xplane of h0 share a key
  EXPECT_EQ(windows[1].id, "2024_03_01_12_30_30");
  EXPECT_EQ(windows[1].files.size(), 2u);
}

TEST(GroupWindowsTest, HostsSpreadOverDirsAllBelong) {
  auto windows = GroupWindows({Dir("2024_03_01_12_30_05", {"a.trace.json.gz", "b.trace.json.gz"}),
                               Dir("2024_03_01_12_30_09", {"c.trace.json.gz"}),
                               Dir("2024_03_01_12_31_10", {"d.trace.json.gz", "e.trace.json.gz"})},
                              120);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].files.size(), 5u);
  EXPECT_EQ(windows[0].timestamp_dirs.size(), 3u);
}

TEST(GroupWindowsTest, IgnoresBadNamesAndEmptyDirs) {
  auto windows = GroupWindows(
      {Dir("2024_03_01_12_30_05", {"h0.trace.json.gz", "notes.txt", ".h1.trace.json.gz.swp"}),
       Dir("2024_03_01_12_40_05", {"README"})},
      120);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_THAT(windows[0].files,
              ElementsAre("/run/plugins/profile/2024_03_01_12_30_05/h0.trace.json.gz"));
  EXPECT_TRUE(GroupWindows({}, 120).empty());
}

TEST(ListTimestampDirsTest, ListsOnlyTimestampDirsAndTraceFiles) {
  testing::TempDir tmp;
  const std::string profile = tmp.Sub("run/tensorboard/plugins/profile");
  testing::WriteFile(profile + "/2024_03_01_12_30_06/h1.trace.json.gz", "x");
  testing::WriteFile(profile + "/2024_03_01_12_30_05/h0.trace.json.gz", "x");
  testing::WriteFile(profile + "/2024_03_01_12_30_05/h0.xplane.pb", "x");
  testing::WriteFile(profile + "/2024_03_01_12_30_05/notes.txt", "x");
  testing::WriteFile(profile + "/not_a_ts/h2.trace.json.gz", "x");
  testing::WriteFile(profile + "/stray.trace.json.gz", "x");
  auto dirs = ListTimestampDirs(profile);
  ASSERT_TRUE(dirs.has_value()) << dirs.error().ToString();
  ASSERT_EQ(dirs->size(), 2u);
  EXPECT_EQ((*dirs)[0].path, profile + "/2024_03_01_12_30_05");
  EXPECT_THAT((*dirs)[0].files, ElementsAre("h0.trace.json.gz", "h0.xplane.pb"));
  EXPECT_THAT((*dirs)[1].files, ElementsAre("h1.trace.json.gz"));
}

TEST(ListTimestampDirsTest, MissingDirIsNotFound) {
  auto dirs = ListTimestampDirs("/nonexistent/plugins/profile");
  ASSERT_FALSE(dirs.has_value());
  EXPECT_EQ(dirs.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace profwatch::window
