// Issue 65: the daemon serves its own runbook at /runbook, the page every
// rule's runbook_url links by default. The alerts are read from
// rules/profwatch.rules.yml here, so an alert added without a runbook entry
// (a heading of docs/alerts-and-dashboards.md's "Alerts runbook") fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "testing/serve_harness.h"
#include "testing/test_util.h"

namespace profwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::Serve;
using testing::TempDir;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Every `- alert: Name` of the rules file.
std::set<std::string> AlertNames(const std::string& rules) {
  std::set<std::string> names;
  const std::regex alert(R"(^\s*-\s*alert:\s*([A-Za-z0-9_]+)\s*$)");
  std::smatch m;
  size_t start = 0;
  while (start < rules.size()) {
    size_t end = rules.find('\n', start);
    if (end == std::string::npos) end = rules.size();
    const std::string line = rules.substr(start, end - start);
    if (std::regex_match(line, m, alert)) names.insert(m[1]);
    start = end + 1;
  }
  return names;
}

// The anchors the rules' runbook_url links name: ...{{ end }}#a (the
// template's branches end before the anchor), .../runbook#a, FILE.md#a.
std::set<std::string> RunbookAnchors(const std::string& rules) {
  std::set<std::string> anchors;
  const std::regex link(R"((?:\}\}|/runbook|\.md)#([a-z0-9_-]+))");
  for (auto it = std::sregex_iterator(rules.begin(), rules.end(), link);
       it != std::sregex_iterator(); ++it) {
    anchors.insert((*it)[1]);
  }
  return anchors;
}

TEST(ServeRunbookTest, RunbookNamesEveryAlertOfTheRulesWithItsAnchor) {
  const std::string rules =
      ReadFile(std::string(PROFWATCH_SOURCE_DIR) + "/rules/profwatch.rules.yml");
  const std::set<std::string> alerts = AlertNames(rules);
  ASSERT_GE(alerts.size(), 10u) << "alerts not found in the rules file";
  const std::set<std::string> anchors = RunbookAnchors(rules);
  ASSERT_GE(anchors.size(), alerts.size());

  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  fs::create_directories(jobs);
  Serve serve(tmp, {"--watch", jobs, "--poll-interval", "1s"});
  ASSERT_GT(serve.port(), 0) << serve.Log();
  // Served from the start (it depends on no scan), behind the same door.
  const std::string url = "http://127.0.0.1:" + std::to_string(serve.port()) + "/runbook";
  auto got = testing::RunCommand("curl -sS -D '" + tmp.Sub("headers") + "' -o '" +
                                 tmp.Sub("runbook.html") + "' -w '%{http_code}' " + url);
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(got.out, "200");
  const std::string headers = ReadFile(tmp.Sub("headers"));
  EXPECT_NE(headers.find("Content-Type: text/html; charset=utf-8"), std::string::npos) << headers;
  EXPECT_NE(headers.find("Cache-Control: max-age=3600"), std::string::npos) << headers;
  const std::string page = ReadFile(tmp.Sub("runbook.html"));
  for (const std::string& alert : alerts) {
    // The heading of the alert's entry, with the id its links name.
    const std::string heading = "<h3 id=\"" + Lower(alert) + "\">" + alert + "</h3>";
    EXPECT_NE(page.find(heading), std::string::npos) << "no runbook entry " << heading;
  }
  for (const std::string& anchor : anchors) {
    EXPECT_NE(page.find(" id=\"" + anchor + "\""), std::string::npos)
        << "a runbook_url links #" << anchor << ", which the page does not have";
  }
  // The same page where an operator's base names a daemon's /runbook.
  EXPECT_EQ(testing::HttpGet(serve.port(), "/runbook/alerts-and-dashboards.md"), page);
  EXPECT_NE(testing::HttpGet(serve.port(), "/").value_or("").find("href=\"/runbook\""),
            std::string::npos);
  EXPECT_EQ(serve.Stop(), 0);
}

}  // namespace
}  // namespace profwatch
