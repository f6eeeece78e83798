// Runs every command of shared/fixtures/drill/expected_outputs.txt (the exact
// output profile_drill.py printed under Python 3.11) through
// `profwatch analyze --format drill` and demands the same bytes and exit code.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace profwatch {
namespace {

struct DrillCase {
  std::string args;      // arguments after "profile_drill.py"
  std::string expected;  // stdout + stderr as printed
  int exit_code = 0;
};

std::vector<DrillCase> ParseExpected(const std::string& text) {
  std::vector<DrillCase> cases;
  std::istringstream in(text);
  std::string line;
  DrillCase* cur = nullptr;
  const std::string prefix = "$ python3 profile_drill.py ";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      cases.push_back({line.substr(prefix.size()), "", 0});
      cur = &cases.back();
    } else if (cur && line.rfind("[exit=", 0) == 0) {
      cur->exit_code = std::stoi(line.substr(6));
      cur = nullptr;
    } else if (cur) {
      cur->expected += line + "\n";
    }
  }
  return cases;
}

TEST(DrillCompatTest, EveryFixtureCommandIsByteIdentical) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(expected_path, "drill/expected_outputs.txt");
  const std::string dir = expected_path.substr(0, expected_path.rfind('/'));
  auto cases = ParseExpected(testing::ReadFile(expected_path));
  ASSERT_EQ(cases.size(), 8u) << "expected_outputs.txt lists 8 commands";
  const std::string bin = testing::BinaryPath("profwatch");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    auto r = testing::RunCommand("'" + bin + "' analyze --format drill " + c.args, dir);
    EXPECT_EQ(r.exit_code, c.exit_code);
    if (c.exit_code == 0) {
      EXPECT_EQ(r.out, c.expected);
      EXPECT_EQ(r.err, "");
    } else {
      // The script prints its one-line verdict on stderr and nothing on stdout.
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(r.err, c.expected);
    }
  }
}

TEST(DrillCompatTest, MissingFileIsExitThreeNamingTheFile) {
  auto r = testing::RunCommand("'" + testing::BinaryPath("profwatch") +
                               "' analyze --format drill /nonexistent/host0.trace.json.gz");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("/nonexistent/host0.trace.json.gz"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace profwatch
