// Option parsing as a user types it: every repeatable option takes exactly one
// value per occurrence, before, between or after the positional arguments.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/serve_flags.h"
#include "testing/test_util.h"

namespace profwatch::cli {
namespace {

using testing::RunCommand;
using testing::TempDir;

// Two small generated trace files (one 2-GPU window each) in `tmp`.
std::vector<std::string> TwoTraces(const TempDir& tmp) {
  std::vector<std::string> paths;
  for (int i = 0; i < 2; ++i) {
    const std::string p = tmp.Sub("v" + std::to_string(i) + ".trace.json.gz");
    const auto r = RunCommand("'" + testing::BinaryPath("profwatch-tracegen") + "' file --out '" +
                              p + "' --events 200 --gpus 2 --seed " + std::to_string(3 + i));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    paths.push_back(p);
  }
  return paths;
}

// `profwatch compare ARGS --format json`: the variant labels, in order.
std::vector<std::string> CompareLabels(const std::string& args, int* exit_code) {
  const auto r =
      RunCommand("'" + testing::BinaryPath("profwatch") + "' compare --format json " + args);
  *exit_code = r.exit_code;
  std::vector<std::string> labels;
  if (r.exit_code != 0) return labels;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& v : j.at("variants")) labels.push_back(v.at("label").get<std::string>());
  return labels;
}

TEST(CliOptionsTest, CompareLabelsInEveryOrderAUserTypes) {
  TempDir tmp;
  const std::vector<std::string> p = TwoTraces(tmp);
  const std::string a = "'" + p[0] + "'", b = "'" + p[1] + "'";
  const std::vector<std::string> want = {"base", "new"};
  for (const std::string& args :
       {"--label base --label new " + a + " " + b, a + " " + b + " --label base --label new",
        "--label base " + a + " --label new " + b, "--label=base --label=new " + a + " " + b}) {
    int code = -1;
    EXPECT_EQ(CompareLabels(args, &code), want) << args;
    EXPECT_EQ(code, 0) << args;
  }
  // Without labels the paths name the columns.
  int code = -1;
  EXPECT_EQ(CompareLabels(a + " " + b, &code), p);
}

// compare shows each collective kind some variant ran: its exposed time per
// GPU per step (0 where the variant ran none) and bus bandwidth (null where
// no size is known), as analyze reports them.
TEST(CliOptionsTest, CompareHasRowsPerCollectiveKind) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(nccl, "real/kineto/a100x2_nccl_data.json.gz");
  PROFWATCH_REQUIRE_SHARED_FIXTURE(bert, "real/kineto/h100_bert_small.json.gz");
  const auto r =
      RunCommand("'" + testing::BinaryPath("profwatch") +
                 "' compare --format json --profile-steps 3 '" + nccl + "' '" + bert + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& a = j.at("variants").at(0);
  const auto& b = j.at("variants").at(1);
  EXPECT_NEAR(a.at("exposed all_reduce").get<double>(), 39'445'134'000e-12 / 3, 1e-15);
  EXPECT_NEAR(a.at("busbw GB/s all_reduce").get<double>(), 6.558388033366894, 1e-9);
  EXPECT_NEAR(a.at("exposed broadcast").get<double>(), 114'334'000e-12 / 3, 1e-15);
  // bert ran no all_reduce: not measured there, null (issue #65), never 0.
  EXPECT_TRUE(b.at("exposed all_reduce").is_null());
  EXPECT_TRUE(b.at("busbw GB/s all_reduce").is_null());
  EXPECT_FALSE(a.contains("exposed all_gather"));
}

TEST(CliOptionsTest, CompareStepTimesAreOnePerOccurrence) {
  TempDir tmp;
  const std::vector<std::string> p = TwoTraces(tmp);
  const auto r = RunCommand("'" + testing::BinaryPath("profwatch") +
                            "' compare --format json --step-time 1.5 --step-time 2.5 '" + p[0] +
                            "' '" + p[1] + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("variants").at(0).at("step"), 1.5);
  EXPECT_EQ(j.at("variants").at(1).at("step"), 2.5);
  EXPECT_EQ(j.at("variants").at(1).at("step_source"), "config");
}

TEST(CliOptionsTest, RepeatableOptionWithoutValueIsAClearError) {
  const auto r = RunCommand("'" + testing::BinaryPath("profwatch") + "' compare a b --label");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--label"), std::string::npos) << r.err;
}

TEST(CliOptionsTest, AnalyzeOptionsBeforeAndAfterThePaths) {
  TempDir tmp;
  const std::vector<std::string> p = TwoTraces(tmp);
  const std::string bin = "'" + testing::BinaryPath("profwatch") + "' analyze ";
  const auto before = RunCommand(bin + "--format json --step-time 2 '" + p[0] + "'");
  const auto after = RunCommand(bin + "'" + p[0] + "' --format json --step-time 2");
  ASSERT_EQ(before.exit_code, 0) << before.err;
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(before.out, after.out);
  EXPECT_EQ(nlohmann::json::parse(before.out).at("step").at("seconds"), 2.0);
}

TEST(CliOptionsTest, ServeRepeatableOptionsTakeOneValueEach) {
  ParsedServeFlags p = ParseServeFlags({"--watch", "/a", "--log", "j/r=/l.log", "--watch", "/b",
                                        "--log-glob", "{jobs_root}/x", "--log-glob", "y"});
  ASSERT_TRUE(p.flags.has_value());
  EXPECT_EQ(p.flags->watch, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(p.flags->log, (std::vector<std::string>{"j/r=/l.log"}));
  EXPECT_EQ(p.flags->log_glob, (std::vector<std::string>{"{jobs_root}/x", "y"}));
  // A second value after one --watch is not a watch root: serve takes no
  // positional arguments, so it is an error rather than a silent extra root.
  ParsedServeFlags extra = ParseServeFlags({"--watch", "/a", "/b"});
  EXPECT_FALSE(extra.flags.has_value());
  EXPECT_EQ(extra.exit_code, 2);
  ParsedServeFlags missing = ParseServeFlags({"--watch"});
  EXPECT_FALSE(missing.flags.has_value());
  EXPECT_EQ(missing.exit_code, 2);
}

TEST(CliOptionsTest, ServeShardTakesIndexOrPodNameOverCount) {
  ParsedServeFlags p = ParseServeFlags({"--watch", "/a", "--shard", "profwatch-2/3"});
  ASSERT_TRUE(p.flags.has_value());
  Result<pipeline::DaemonOptions> o = ToDaemonOptions(*p.flags);
  ASSERT_TRUE(o) << o.error().context;
  EXPECT_EQ(o->shard, (watch::Shard{2, 3}));
  ParsedServeFlags none = ParseServeFlags({"--watch", "/a"});
  ASSERT_TRUE(none.flags.has_value());
  EXPECT_FALSE(ToDaemonOptions(*none.flags)->shard.enabled());
  ParsedServeFlags bad = ParseServeFlags({"--watch", "/a", "--shard", "3/3"});
  ASSERT_TRUE(bad.flags.has_value());
  Result<pipeline::DaemonOptions> rejected = ToDaemonOptions(*bad.flags);
  ASSERT_FALSE(rejected);
  EXPECT_NE(rejected.error().context.find("--shard 3/3"), std::string::npos);
}

// The numeric flags of `verb` as its --help lists them (CLI11 names the
// value's type INT, UINT or FLOAT), with their aliases dropped.
std::vector<std::string> NumericFlags(const std::string& verb) {
  const auto r = RunCommand("'" + testing::BinaryPath("profwatch") + "' " + verb + " --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> flags;
  std::istringstream lines(r.out);
  const std::regex numeric(R"(^\s+(--[a-z][\w.-]*)(,--?[\w.-]+)*\s+(INT|UINT|FLOAT)\b)");
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, numeric)) flags.push_back(m[1]);
  }
  return flags;
}

// Issue #65: a --state or --history the daemon could never write fails the
// start (exit 1, naming the flag and the path), before it listens; a
// writable one starts as before (the serve tests).
TEST(CliOptionsTest, ServeWithAStateHistoryOrSpillDirItCannotWriteFailsNamingThePath) {
  testing::TempDir tmp;
  for (const auto& [flag, path] : std::vector<std::pair<std::string, std::string>>{
           {"--state", "/nonexistent-dir/state.json"},
           {"--history", "/nonexistent-dir/state.json"},
           {"--spill-dir", "/nonexistent-dir"}}) {
    SCOPED_TRACE(flag);
    const auto r = RunCommand("timeout 10 '" + testing::BinaryPath("profwatch") +
                              "' serve --listen 127.0.0.1:0 --watch '" + tmp.path().string() +
                              "' " + flag + " " + path);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("cannot write the file of a flag flag=" + flag + " path=" + path),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("listening"), std::string::npos) << r.err;
  }
}

// A usage error a person can read: exit 2, one line naming the verb, the
// flag, the range in words and the value given, then where to look; never
// CLI11's own range with the largest double written out in 300 digits.
void ExpectReadableUsageError(const std::string& verb, const std::string& flag,
                              const std::string& value) {
  // serve would start if the value were taken: `timeout` bounds that case.
  const std::string tail = verb == "serve" ? "" : verb == "compare" ? " a b" : " x";
  const auto r = RunCommand("timeout 20 '" + testing::BinaryPath("profwatch") + "' " + verb + " " +
                            flag + " '" + value + "'" + tail);
  EXPECT_EQ(r.exit_code, 2) << verb << " " << flag << " " << value << ": " << r.err;
  const std::string head = "profwatch " + verb + ": " + flag + ": must be a ";
  EXPECT_EQ(r.err.rfind(head, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("not '" + value + "'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::regex_search(r.err, std::regex("[0-9]{21}"))) << r.err;
  EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
}

// Every numeric flag of every verb refuses a negative number and a word in
// the same readable way.
TEST(CliNumericFlagsTest, EveryNumericFlagGivesAReadableUsageError) {
  for (const std::string verb : {"analyze", "compare", "serve"}) {
    const std::vector<std::string> flags = NumericFlags(verb);
    EXPECT_GE(flags.size(), verb == "serve" ? 14u : 5u) << verb;
    for (const std::string& flag : flags) {
      ExpectReadableUsageError(verb, flag, "-5");
      ExpectReadableUsageError(verb, flag, "lots");
    }
  }
}

// The cases a user hit, word for word: the range as a person says it.
TEST(CliNumericFlagsTest, RangesInWords) {
  struct Case {
    std::string verb, flag, value, want;
  };
  const std::vector<Case> cases = {
      {"analyze", "--threads", "0", "must be a whole number of at least 1, not '0'"},
      {"analyze", "--threads", "99999999999",
       "must be a whole number from 1 to 2147483647, not '99999999999'"},
      {"analyze", "--peak-flops", "0", "must be a number above 0, not '0'"},
      {"analyze", "--step-time", "-1", "must be a number above 0, not '-1'"},
      {"compare", "--threads", "0", "must be a whole number of at least 1, not '0'"},
      {"serve", "--profile-steps", "0", "must be a whole number of at least 1, not '0'"},
      {"serve", "--step-time", "-1", "must be a number of at least 0 (0: none), not '-1'"},
      {"serve", "--workers", "0", "must be a whole number of at least 1, not '0'"},
      {"serve", "--worker-nice", "20", "must be a whole number from 0 to 19, not '20'"},
      {"serve", "--file-max-bytes", "-1", "must be a whole number of at least 0, not '-1'"},
  };
  for (const Case& c : cases) {
    const std::string tail = c.verb == "serve" ? "" : c.verb == "compare" ? " a b" : " x";
    const auto r = RunCommand("timeout 20 '" + testing::BinaryPath("profwatch") + "' " + c.verb +
                              " " + c.flag + " " + c.value + tail);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "profwatch " + c.verb + ": " + c.flag + ": " + c.want + "\nRun 'profwatch " +
                         c.verb + " --help' for every flag.\n");
  }
}

// --retention 0 would drop every run from /metrics as soon as it is
// exported: refused, from the command line and from a --config file alike.
// Its help says what the README says: counted from the run's last activity.
TEST(CliNumericFlagsTest, RetentionZeroIsRefused) {
  ParsedServeFlags p = ParseServeFlags({"--watch", "/a", "--retention", "0"});
  ASSERT_TRUE(p.flags.has_value());
  Result<pipeline::DaemonOptions> o = ToDaemonOptions(*p.flags);
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().context,
            "--retention: must be more than 0 (0 would remove every run from /metrics as soon "
            "as its window is analysed)");
  ParsedServeFlags ms = ParseServeFlags({"--watch", "/a", "--retention", "0ms"});
  ASSERT_TRUE(ms.flags.has_value());
  EXPECT_FALSE(ToDaemonOptions(*ms.flags));
  ParsedServeFlags one = ParseServeFlags({"--watch", "/a", "--retention", "1s"});
  ASSERT_TRUE(one.flags.has_value());
  EXPECT_TRUE(ToDaemonOptions(*one.flags));

  const auto r = RunCommand("timeout 20 '" + testing::BinaryPath("profwatch") +
                            "' serve --listen 127.0.0.1:0 --watch /nonexistent --retention 0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--retention: must be more than 0"), std::string::npos) << r.err;
  const auto help = RunCommand("'" + testing::BinaryPath("profwatch") + "' serve --help");
  EXPECT_NE(help.out.find("this long after its last activity"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace profwatch::cli
