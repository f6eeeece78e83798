// The in-flight journal (store/inflight_journal.h): what a daemon that dies
// leaves behind and what the next one reads from it.
#include "store/inflight_journal.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "testing/test_util.h"

namespace profwatch::store {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

InflightRecord Record(const std::string& window, uint64_t digest, int deaths = 0) {
  InflightRecord r;
  r.key = InflightKey("/jobs/j/r", window);
  r.training_job = "j";
  r.run = "r";
  r.window = window;
  r.digest = digest;
  r.deaths = deaths;
  return r;
}

// A daemon killed mid-analysis leaves the window in flight; the next daemon
// reads it as one death more. An analysis that ends takes its record away.
TEST(InflightJournalTest, AWindowLeftInFlightIsOneDeathMoreAtTheNextLoad) {
  TempDir tmp;
  const std::string path = tmp.Sub("state.json.inflight");
  {
    InflightJournal j(path);
    std::optional<LogEvent> warning;
    ASSERT_TRUE(j.Load(&warning));
    EXPECT_TRUE(j.Records().empty()) << "no file: an empty journal";
    ASSERT_TRUE(j.Begin(Record("w1", 0xabc)));
    ASSERT_TRUE(j.Begin(Record("w2", 0xdef)));
    ASSERT_TRUE(j.End(InflightKey("/jobs/j/r", "w2"), /*finished=*/true));
    // Killed here: w1 is in flight on disk.
    const std::string text = ReadFile(path);
    EXPECT_NE(text.find("\"window\":\"w1\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"in_flight\":true"), std::string::npos) << text;
    EXPECT_EQ(text.find("w2"), std::string::npos) << text;
  }
  for (int death = 1; death <= 2; ++death) {
    InflightJournal j(path);
    std::optional<LogEvent> warning;
    ASSERT_TRUE(j.Load(&warning));
    EXPECT_FALSE(warning.has_value()) << warning->Text();
    auto r = j.Find(InflightKey("/jobs/j/r", "w1"));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->deaths, death);
    EXPECT_FALSE(r->in_flight);
    EXPECT_EQ(r->digest, 0xabcu);
    EXPECT_EQ(r->training_job, "j");
    // Analysed again (alone) and killed again.
    ASSERT_TRUE(j.Begin(*r));
  }
  InflightJournal j(path);
  std::optional<LogEvent> warning;
  ASSERT_TRUE(j.Load(&warning));
  EXPECT_EQ(j.Find(InflightKey("/jobs/j/r", "w1"))->deaths, 3);
  // A shutdown mid-way is no death and no result: the record stays.
  ASSERT_TRUE(j.Begin(Record("w1", 0xabc, 3)));
  ASSERT_TRUE(j.End(InflightKey("/jobs/j/r", "w1"), /*finished=*/false));
  InflightJournal again(path);
  ASSERT_TRUE(again.Load(&warning));
  EXPECT_EQ(again.Find(InflightKey("/jobs/j/r", "w1"))->deaths, 3);
}

TEST(InflightJournalTest, BadLinesAreSkippedAndTheRecordsKeptAreBounded) {
  TempDir tmp;
  const std::string path = tmp.Sub("s.inflight");
  WriteFile(path, "not json\n{\"key\":1}\n");
  InflightJournal j(path);
  std::optional<LogEvent> warning;
  ASSERT_TRUE(j.Load(&warning));
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->Text().find("lines=2"), std::string::npos) << warning->Text();
  for (size_t i = 0; i < kMaxKeptJournalRecords + 10; ++i) {
    InflightRecord r = Record("w" + std::to_string(i), i, 1);
    ASSERT_TRUE(j.Begin(r));
    ASSERT_TRUE(j.End(r.key, /*finished=*/false));
  }
  EXPECT_EQ(j.Records().size(), kMaxKeptJournalRecords);
  EXPECT_FALSE(j.Find(InflightKey("/jobs/j/r", "w0")).has_value()) << "the oldest went";
  EXPECT_TRUE(j.Find(InflightKey("/jobs/j/r", "w265")).has_value());
}

TEST(InflightJournalTest, TheDigestFollowsTheFilesIdentitySizeAndTime) {
  TempDir tmp;
  const std::string a = tmp.Sub("a.trace.json.gz"), b = tmp.Sub("b.trace.json.gz");
  WriteFile(a, "x");
  WriteFile(b, "y");
  const uint64_t d = FilesDigest({a, b});
  EXPECT_EQ(FilesDigest({a, b}), d);
  EXPECT_NE(FilesDigest({b, a}), d);
  WriteFile(b, "yy");
  EXPECT_NE(FilesDigest({a, b}), d) << "size";
  std::filesystem::remove(b);
  EXPECT_NE(FilesDigest({a, b}), d) << "gone";
}

TEST(InflightJournalTest, NoPathNoFile) {
  InflightJournal j("");
  std::optional<LogEvent> warning;
  EXPECT_TRUE(j.Load(&warning));
  EXPECT_TRUE(j.Begin(Record("w", 1)));
  EXPECT_TRUE(j.Records().empty());
}

// Windows of runs whose names differ only in bytes that are not UTF-8 are
// two records, read back with their exact bytes.
TEST(InflightJournalTest, NamesThatAreNotUtf8StayTwoRecords) {
  TempDir tmp;
  const std::string path = tmp.Sub("state.json.inflight");
  for (const char* job : {"x\xff", "x\xfe"}) {
    InflightJournal j(path);
    std::optional<LogEvent> warning;
    ASSERT_TRUE(j.Load(&warning));
    InflightRecord r = Record("w1", 0xabc);
    r.training_job = job;
    r.key = InflightKey(std::string("/jobs/") + job + "/r", "w1");
    ASSERT_TRUE(j.Begin(r));
  }
  InflightJournal j(path);
  std::optional<LogEvent> warning;
  ASSERT_TRUE(j.Load(&warning));
  EXPECT_FALSE(warning.has_value());
  ASSERT_EQ(j.Records().size(), 2u);
  for (const char* job : {"x\xff", "x\xfe"}) {
    auto r = j.Find(InflightKey(std::string("/jobs/") + job + "/r", "w1"));
    ASSERT_TRUE(r.has_value()) << job;
    EXPECT_EQ(r->training_job, job);
    EXPECT_EQ(r->deaths, 1);
  }
}

}  // namespace
}  // namespace profwatch::store
