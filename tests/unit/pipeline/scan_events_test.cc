// The log lines of a scan (pipeline/scan_events.h) on values: each note in
// order, counts said when they change, roots said when their condition
// changes and forgotten when no longer configured.
#include "pipeline/scan_events.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

namespace profwatch::pipeline {
namespace scan_events_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Texts(const std::vector<LogEvent>& logs) {
  std::vector<std::string> out;
  for (const LogEvent& e : logs) out.push_back(e.Text());
  return out;
}

TEST(ScanEventsTest, NotesInOrderFutureBacklogClash) {
  window::Assembler::ScanNotes notes;
  notes.future_dirs = {"/r/job/run/2999"};
  notes.backlog.push_back({{"job", "run"}, 3, "w7"});
  notes.clashes.push_back({{"job", "run"}, "/a/job/run", "/b/job/run"});
  const std::vector<LogEvent> logs = ScanNoteEvents(notes, 4);
  ASSERT_EQ(logs.size(), 3u);
  EXPECT_EQ(logs[0].level, LogLevel::kWarn);
  EXPECT_THAT(logs[0].Text(), HasSubstr("profile dir dated in the future skipped"));
  EXPECT_THAT(logs[0].Text(), HasSubstr("path=/r/job/run/2999"));
  EXPECT_EQ(logs[1].level, LogLevel::kInfo);
  EXPECT_THAT(logs[1].Text(), HasSubstr("windows=3"));
  EXPECT_THAT(logs[1].Text(), HasSubstr("oldest_considered=w7"));
  EXPECT_THAT(logs[1].Text(), HasSubstr("windows_at_first_sight=4"));
  EXPECT_EQ(logs[2].level, LogLevel::kError);
  EXPECT_THAT(logs[2].Text(), HasSubstr("kept=/a/job/run"));
  EXPECT_THAT(logs[2].Text(), HasSubstr("path=/b/job/run"));
  EXPECT_THAT(ScanNoteEvents({}, 4), IsEmpty());
}

TEST(ScanEventsTest, SkippedSaidWhenTheCountChanges) {
  watch::ScanResult scan;
  scan.permission_errors = 2;
  scan.permission_error_paths = {"/r/a", "/r/b"};
  int64_t errors = 0;
  int64_t links = 0;
  std::vector<LogEvent> logs = SkippedEvents(scan, errors, links);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_THAT(logs[0].Text(), HasSubstr("count=2"));
  EXPECT_THAT(logs[0].Text(), HasSubstr("paths=/r/a,/r/b"));
  EXPECT_EQ(errors, 2);
  // The same count again: silent. Back to none: silent, and remembered.
  EXPECT_THAT(SkippedEvents(scan, errors, links), IsEmpty());
  scan.permission_errors = 0;
  scan.symlinks_skipped = 1;
  logs = SkippedEvents(scan, errors, links);
  EXPECT_THAT(Texts(logs),
              ElementsAre(HasSubstr("scan skipped directory links out of the watch root")));
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(links, 1);
}

TEST(ScanEventsTest, RootsSaidWhenTheirConditionChanges) {
  std::map<std::string, watch::RootCondition> conditions;
  std::map<std::string, bool> readable;
  watch::ScanResult scan;
  scan.roots = {{"/ok", watch::RootCondition::kOk, 0},
                {"/gone", watch::RootCondition::kMissing, ENOENT}};
  // A healthy root is silent at the start; a missing one is a warning.
  std::vector<LogEvent> logs = RootEvents(scan, conditions, readable);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0].level, LogLevel::kWarn);
  EXPECT_THAT(logs[0].Text(), HasSubstr("path=/gone"));
  EXPECT_EQ(readable, (std::map<std::string, bool>{{"/gone", false}, {"/ok", true}}));
  EXPECT_THAT(RootEvents(scan, conditions, readable), IsEmpty());
  // The missing root recovers; the healthy one is no longer configured.
  scan.roots = {{"/gone", watch::RootCondition::kOk, 0}};
  logs = RootEvents(scan, conditions, readable);
  EXPECT_THAT(Texts(logs), ElementsAre(HasSubstr("watch root readable")));
  EXPECT_EQ(readable, (std::map<std::string, bool>{{"/gone", true}}));
  EXPECT_EQ(conditions.size(), 1u);
}

}  // namespace scan_events_test
}  // namespace profwatch::pipeline
