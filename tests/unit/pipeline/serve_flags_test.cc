#include "cli/serve_flags.h"

#include <gtest/gtest.h>

#include "aggregate/profile_steps.h"
#include "cli/cli_util.h"
#include "testing/test_util.h"

namespace profwatch::cli {
namespace {

using profwatch::testing::TempDir;
using profwatch::testing::WriteFile;
using std::chrono::milliseconds;

TEST(ServeFlagsTest, ParsesDurations) {
  EXPECT_EQ(*ParseDuration("15s"), milliseconds(15000));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("10m"), milliseconds(600000));
  EXPECT_EQ(*ParseDuration("24h"), milliseconds(86400000));
  EXPECT_EQ(*ParseDuration("2d"), milliseconds(172800000));
  EXPECT_EQ(*ParseDuration("7"), milliseconds(7000));
  EXPECT_FALSE(ParseDuration("").has_value());
  EXPECT_FALSE(ParseDuration("ten").has_value());
  EXPECT_FALSE(ParseDuration("5 parsecs").has_value());
  // Past a century a deadline would overflow the clock (and llround of 1e303
  // ms is undefined): refused, with the limit in the message.
  EXPECT_EQ(*ParseDuration("36500d"), milliseconds(int64_t{36500} * 86400000));
  auto huge = ParseDuration("1e300s");
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().context.find("at most 36500d"), std::string::npos);
  EXPECT_FALSE(ParseDuration("36501d").has_value());
  EXPECT_FALSE(ParseDuration("infs").has_value());
  EXPECT_FALSE(ParseDuration("nan").has_value());
  EXPECT_FALSE(ParseDuration("-1s").has_value());
  EXPECT_EQ(ParseDuration("3w").error().code, ErrorCode::kConfig);
}

TEST(ServeFlagsTest, SpillDirIsAFlagPassedDownToTheAnalysis) {
  ParsedServeFlags p = ParseServeFlags({"--spill-dir", "/var/tmp/pw"});
  ASSERT_TRUE(p.flags.has_value());
  EXPECT_EQ(p.flags->spill_dir, "/var/tmp/pw");
  auto options = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(options.has_value());
  EXPECT_EQ(options->analyze.spill_dir, "/var/tmp/pw");
}

TEST(ServeFlagsTest, DefaultsMatchTheContract) {
  ParsedServeFlags p = ParseServeFlags({});
  ASSERT_TRUE(p.flags.has_value());
  EXPECT_EQ(p.flags->listen, "0.0.0.0:19474");
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  EXPECT_EQ(o->poll_interval, milliseconds(15000));
  EXPECT_EQ(o->assembler.skew, std::chrono::seconds(120));
  EXPECT_EQ(o->assembler.settle, milliseconds(10000));
  EXPECT_EQ(o->assembler.window_timeout, milliseconds(600000));
  EXPECT_EQ(o->assembler.retention, milliseconds(86400000));
  EXPECT_EQ(o->assembler.max_retries, 5);
  EXPECT_EQ(o->workers, 2);       // one slow window never holds every run
  EXPECT_EQ(o->worker_nice, 10);  // analysis goes after training and scrapes
  EXPECT_EQ(o->analyze.limits.max_bytes, uint64_t{8} << 30);
  EXPECT_EQ(o->analyze.limits.max_time, std::chrono::minutes(10));
  EXPECT_TRUE(o->use_inotify);
  // Not given: the window's markers, the log or the default decide.
  EXPECT_FALSE(o->analyze.aggregate.profile_steps_flag.has_value());
  EXPECT_EQ(o->analyze.aggregate.top_kernels, 5u);
}

// serve --help states --profile-steps' default as what an absent flag
// means (issue #65: it said 3, CLI11's capture of the variable's initial
// value): not set, the window's own count, else the code's fallback. The
// parsed default is that: no flag, and with nothing in the window the
// choice is that fallback, from the default source.
TEST(ServeFlagsTest, HelpStatesTheRealProfileStepsDefault) {
  ::testing::internal::CaptureStdout();
  ParsedServeFlags help = ParseServeFlags({"--help"});
  const std::string text = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(help.exit_code, 0);
  const size_t at = text.find("--profile-steps");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  // The option's column: its type and check, no captured default value.
  std::string column = line.substr(0, line.find("Profiled"));
  column.erase(column.find_last_not_of(' ') + 1);
  EXPECT_EQ(column, "--profile-steps INT:>= 1") << line;
  const std::string stated = ProfileStepsDefaultHelp();
  EXPECT_NE(line.find("(" + stated + ")"), std::string::npos) << line;
  EXPECT_NE(stated.find("default: not set"), std::string::npos) << stated;
  EXPECT_TRUE(stated.ends_with("else " + std::to_string(aggregate::kDefaultProfileSteps)))
      << stated;

  ParsedServeFlags p = ParseServeFlags({});
  ASSERT_TRUE(p.flags.has_value());
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  EXPECT_FALSE(o->analyze.aggregate.profile_steps_flag.has_value());
  const aggregate::ProfileStepsChoice none =
      aggregate::ChooseProfileSteps(o->analyze.aggregate.profile_steps_flag, std::nullopt, {}, {});
  EXPECT_EQ(none.steps, aggregate::kDefaultProfileSteps);
  EXPECT_EQ(none.source, aggregate::ProfileStepsSource::kDefault);
}

TEST(ServeFlagsTest, FileBudgetFlagsReachTheAnalysis) {
  ParsedServeFlags p =
      ParseServeFlags({"--file-max-bytes", "1048576", "--file-max-seconds", "2.5"});
  ASSERT_TRUE(p.flags.has_value());
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  EXPECT_EQ(o->analyze.limits.max_bytes, 1048576u);
  EXPECT_EQ(o->analyze.limits.max_time, milliseconds(2500));
  EXPECT_EQ(ParseServeFlags({"--file-max-seconds", "-1"}).exit_code, 2);
}

// The demo's files are as old as the build: kept whatever their age, unless
// the user chose a retention.
TEST(ServeFlagsTest, BundledDemoIsServedWithoutRetentionUnlessOneIsGiven) {
  ParsedServeFlags p = ParseServeFlags({});
  ASSERT_TRUE(p.flags.has_value());
  auto o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  UseBundledDemo("/opt/demo", *p.flags, *o);
  EXPECT_EQ(o->roots, std::vector<std::string>{"/opt/demo"});
  EXPECT_EQ(o->assembler.retention, std::chrono::hours(24 * 36500));

  p = ParseServeFlags({"--retention", "2h"});
  ASSERT_TRUE(p.flags.has_value());
  o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  UseBundledDemo("/opt/demo", *p.flags, *o);
  EXPECT_EQ(o->assembler.retention, std::chrono::hours(2));
}

TEST(ServeFlagsTest, DottedListenAliasAndBadValues) {
  ParsedServeFlags p = ParseServeFlags({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(p.flags.has_value());
  EXPECT_EQ(p.flags->listen, "127.0.0.1:0");
  EXPECT_EQ(ParseServeFlags({"--workers", "0"}).exit_code, 2);
  EXPECT_EQ(ParseServeFlags({"--no-such-flag"}).exit_code, 2);
  ParsedServeFlags bad = ParseServeFlags({"--settle", "soon"});
  ASSERT_TRUE(bad.flags.has_value());
  auto o = ToDaemonOptions(*bad.flags);
  ASSERT_FALSE(o.has_value());
  EXPECT_NE(o.error().context.find("--settle"), std::string::npos);
}

TEST(ServeFlagsTest, ConfigFileHoldsFlagsAndCommandLineWins) {
  TempDir tmp;
  const std::string cfg = tmp.Sub("profwatch.yaml");
  WriteFile(cfg,
            "watch: [/a, /b]\n"
            "settle: 3s\n"
            "workers: 2\n"
            "no-inotify: true\n"
            "web.listen-address: 127.0.0.1:9999\n");
  ParsedServeFlags p = ParseServeFlags({"--config", cfg, "--workers", "4"});
  ASSERT_TRUE(p.flags.has_value());
  EXPECT_EQ(p.flags->watch, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(p.flags->settle, "3s");
  EXPECT_EQ(p.flags->workers, 4);
  EXPECT_TRUE(p.flags->no_inotify);
  EXPECT_EQ(p.flags->listen, "127.0.0.1:9999");
  // A repeatable flag on the command line replaces the file's list.
  ParsedServeFlags q = ParseServeFlags({"--config", cfg, "--watch", "/c"});
  ASSERT_TRUE(q.flags.has_value());
  EXPECT_EQ(q.flags->watch, (std::vector<std::string>{"/c"}));
}

TEST(ServeFlagsTest, JsonConfigAndUnknownKey) {
  TempDir tmp;
  const std::string json = tmp.Sub("c.json");
  WriteFile(json, R"({"poll-interval": "2s", "expected-gpus": 16})");
  ParsedServeFlags p = ParseServeFlags({"--config", json});
  ASSERT_TRUE(p.flags.has_value());
  EXPECT_EQ(p.flags->poll_interval, "2s");
  EXPECT_EQ(p.flags->expected_gpus, 16);
  const std::string bad = tmp.Sub("bad.yaml");
  WriteFile(bad, "colour: blue\n");
  EXPECT_EQ(ParseServeFlags({"--config", bad}).exit_code, 2);
  WriteFile(bad, "[not, a, map]\n");
  EXPECT_EQ(ParseServeFlags({"--config", bad}).exit_code, 2);
  EXPECT_EQ(ParseServeFlags({"--config", tmp.Sub("missing.yaml")}).exit_code, 2);
}

// Config errors are one line naming the file and the problem (a reload logs
// it as one warning), never raw parser output.
TEST(ServeFlagsTest, ConfigErrorsAreOneLineNamingFileAndProblem) {
  TempDir tmp;
  const std::string cfg = tmp.Sub("c.yaml");
  struct Case {
    std::string text;
    std::string error;
  };
  for (const Case& c : {
           Case{"watch: [/a\nsettle: 1s\n",
                "config file " + cfg + ": line 2, column 7: end of sequence flow not found"},
           Case{"colour: blue\n", "config file " + cfg + ": unknown flag 'colour'"},
           Case{"workers: many\n",
                "config file " + cfg +
                    ": --workers: must be a whole number of at least 1, not 'many'"},
       }) {
    WriteFile(cfg, c.text);
    ParsedServeFlags p = ParseServeFlags({"--config", cfg});
    EXPECT_FALSE(p.flags.has_value()) << c.text;
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_EQ(p.config_error.rfind(c.error, 0), 0u) << p.config_error;
    EXPECT_EQ(p.config_error.find('\n'), std::string::npos) << p.config_error;
  }
  EXPECT_EQ(ParseServeFlags({"--config", tmp.Sub("missing.yaml")}).config_error,
            "config file " + tmp.Sub("missing.yaml") + ": cannot be read");
}

}  // namespace
}  // namespace profwatch::cli
