// The issue-4 serve flags: repeatable --log bindings, --log-glob,
// --history/--history-max-bytes, and --profile-steps counted as explicit only
// when given (command line or --config).
#include <gtest/gtest.h>

#include "cli/serve_flags.h"
#include "testing/test_util.h"

namespace profwatch::cli {
namespace {

TEST(ServeStepsFlagsTest, LogBindingsGlobsAndHistoryReachTheDaemonOptions) {
  ParsedServeFlags p =
      ParseServeFlags({"--log", "jobA/run1=/l/a.log", "--log", "/l/only.log", "--log-glob",
                       "{jobs_root}/{job}.txt", "--log-glob", "{jobs_root}/logs/{run}*",
                       "--history", "/h/h.jsonl", "--history-max-bytes", "4096"});
  ASSERT_TRUE(p.flags.has_value());
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  ASSERT_EQ(o->training_logs.bindings.size(), 2u);
  EXPECT_EQ(o->training_logs.bindings[0], (pipeline::LogBinding{"jobA", "run1", "/l/a.log"}));
  EXPECT_EQ(o->training_logs.bindings[1], (pipeline::LogBinding{"", "", "/l/only.log"}));
  EXPECT_EQ(o->training_logs.globs,
            (std::vector<std::string>{"{jobs_root}/{job}.txt", "{jobs_root}/logs/{run}*"}));
  EXPECT_EQ(o->history_file, "/h/h.jsonl");
  EXPECT_EQ(o->history_max_bytes, 4096u);
  EXPECT_FALSE(o->analyze.aggregate.profile_steps_flag.has_value());
  EXPECT_FALSE(o->training_logs.step_time.overrides.profiler_steps.has_value());
}

TEST(ServeStepsFlagsTest, DefaultsAreTheLayoutGlobsAnd64MiBHistory) {
  ParsedServeFlags p = ParseServeFlags({});
  ASSERT_TRUE(p.flags.has_value());
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->training_logs.globs, pipeline::kDefaultLogGlobs);
  EXPECT_TRUE(o->training_logs.bindings.empty());
  EXPECT_EQ(o->history_file, "");
  EXPECT_EQ(o->history_max_bytes, 64u << 20);
}

TEST(ServeStepsFlagsTest, ExplicitProfileStepsOverridesTheLog) {
  ParsedServeFlags p = ParseServeFlags({"--profile-steps", "3"});  // same as the default
  ASSERT_TRUE(p.flags.has_value());
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->analyze.aggregate.profile_steps_flag, 3);
  EXPECT_EQ(o->training_logs.step_time.overrides.profiler_steps, 3);
}

TEST(ServeStepsFlagsTest, ProfileStepsFromTheConfigFileCountsAsExplicit) {
  testing::TempDir tmp;
  testing::WriteFile(tmp.Sub("c.yaml"), "profile-steps: 4\nlog:\n  - run1=/l/r1.log\n");
  ParsedServeFlags p = ParseServeFlags({"--config", tmp.Sub("c.yaml")});
  ASSERT_TRUE(p.flags.has_value());
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  EXPECT_EQ(o->analyze.aggregate.profile_steps_flag, 4);
  ASSERT_EQ(o->training_logs.bindings.size(), 1u);
  EXPECT_EQ(o->training_logs.bindings[0].run, "run1");
}

TEST(ServeStepsFlagsTest, MalformedLogBindingIsAConfigError) {
  ParsedServeFlags p = ParseServeFlags({"--log", "jobA/=x.log"});
  ASSERT_TRUE(p.flags.has_value());
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_FALSE(o.has_value());
  EXPECT_EQ(o.error().code, ErrorCode::kConfig);
  EXPECT_NE(o.error().context.find("--log"), std::string::npos);
}

}  // namespace
}  // namespace profwatch::cli
