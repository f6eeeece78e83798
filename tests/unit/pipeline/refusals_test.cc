// A scan's refusals through the ledger on values: each counted once by
// owner and reason while it stays, one log line per change, the per-owner
// caps going over and back under.
#include "pipeline/refusals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace profwatch::pipeline {
namespace refusals_test {

using ::testing::HasSubstr;

constexpr watch::Owner kAlice = 1001;
constexpr watch::Owner kBob = 1002;

RefusalLimits Limits() { return {200, 100000, 1024, ""}; }

std::vector<std::string> Texts(const std::vector<LogEvent>& logs) {
  std::vector<std::string> out;
  for (const LogEvent& e : logs) out.push_back(e.Text());
  return out;
}

TEST(RefusalsTest, EachRefusalIsCountedByOwnerOnceAndSaidOnce) {
  ledger::Ledger l;
  watch::ScanResult scan;
  scan.capped_dirs.push_back({"/jobs/a/r/ts", 201, 200, false, kAlice});
  scan.outside_root_files = {{"/jobs/b/r/ts/h1.trace.json.gz", kBob},
                             {"/jobs/b/r/ts/h2.trace.json.gz", kBob}};
  scan.ignored.push_back(
      {"/jobs/a/r/tensorboard/2024_01_01_00_00_00", watch::kIgnoredTsOutsideProfile, 2, kAlice});
  window::Assembler::ScanNotes notes;
  notes.capped.push_back({{"b", "r"}, "2024_01_01_00_00_00", "/jobs/b/r/x", 300, kBob});
  ObserveScanRefusals(l, scan, notes, {}, Limits());
  ledger::Changes c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<ledger::RefusedKey, int64_t>{{{"dir_file_cap", kAlice}, 1},
                                                              {{"outside_root", kBob}, 2},
                                                              {{"ts_outside_profile", kAlice}, 1},
                                                              {{"window_file_cap", kBob}, 1}}));
  const std::vector<std::string> lines = Texts(RefusalEvents(c, Limits()));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], HasSubstr("directory holds too many trace files, not analysed "
                                  "path=/jobs/a/r/ts files_more_than=200 cap=200 stage=watch"));
  EXPECT_THAT(lines[1], HasSubstr("trace file links out of the watch root not read count=2 "
                                  "paths=/jobs/b/r/ts/h1.trace.json.gz,/jobs/b/r/ts/h2"));
  EXPECT_THAT(lines[2], HasSubstr("<ts> directory with traces outside plugins/profile, not "
                                  "analysed count=1"));
  EXPECT_THAT(lines[3], HasSubstr("window holds too many trace files, not analysed "
                                  "training_job=b run=r window=2024_01_01_00_00_00 files=300 "
                                  "cap=200"));
  // The next scan sees the same (the assembler reports a window once):
  // nothing counted, nothing said.
  notes.capped.clear();
  ObserveScanRefusals(l, scan, notes, {}, Limits());
  c = l.TakeChanges();
  EXPECT_TRUE(c.empty());
  // The capped directory is gone: said once, not counted.
  scan.capped_dirs.clear();
  ObserveScanRefusals(l, scan, notes, {}, Limits());
  c = l.TakeChanges();
  EXPECT_TRUE(c.refused.empty());
  EXPECT_EQ(Texts(RefusalEvents(c, Limits())),
            std::vector<std::string>{"directory back under its file cap path=/jobs/a/r/ts"});
}

// Directory links into a root (issue 60): counted by the link's owner once
// while they stay, said in one line naming them.
TEST(RefusalsTest, DirectoryLinksAreCountedByTheirOwnerAndSaidOnce) {
  ledger::Ledger l;
  watch::ScanResult scan;
  scan.ignored = {{"/jobs/0alias", watch::kIgnoredDirLink, 0, kBob},
                  {"/jobs/evil/r1", watch::kIgnoredDirLink, 0, kBob}};
  ObserveScanRefusals(l, scan, {}, {}, Limits());
  ledger::Changes c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<ledger::RefusedKey, int64_t>{{{"symlink", kBob}, 2}}));
  const std::vector<std::string> lines = Texts(RefusalEvents(c, Limits()));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("directory links into a watch root not followed count=2 "
                                  "paths=/jobs/0alias,/jobs/evil/r1 reason=symlink"));
  ObserveScanRefusals(l, scan, {}, {}, Limits());
  EXPECT_TRUE(l.TakeChanges().empty());
}

// A job name under several roots is said once as it begins to clash and
// once as it ends.
TEST(RefusalsTest, JobNameClashesAreSaidOnceEach) {
  std::set<std::string> known;
  const std::vector<watch::JobClash> now = {{"victim", {"a:victim", "b:victim"}}};
  std::vector<std::string> lines = Texts(JobClashEvents(known, now));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("job name found under several watch roots, each copy labelled "
                                  "by its root job=victim training_job=a:victim,b:victim"));
  EXPECT_TRUE(JobClashEvents(known, now).empty());
  EXPECT_EQ(Texts(JobClashEvents(known, {})),
            std::vector<std::string>{"job name back under one watch root, labelled plainly "
                                     "job=victim"});
  EXPECT_TRUE(known.empty());
}

TEST(RefusalsTest, OwnersOverACapAreSaidOnceAndBackUnderOnce) {
  ledger::Ledger l;
  watch::ScanResult scan;
  scan.owner_dirs_capped = {{kBob, 50}};
  window::Assembler::ScanNotes notes;
  notes.owner_caps.push_back({kAlice, window::kOwnerRunCapReason, 2, 2, 3, "/jobs/a/old"});
  ObserveScanRefusals(l, scan, notes, {{kAlice, 7}}, Limits());
  ledger::Changes c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<ledger::RefusedKey, int64_t>{{{"owner_dir_cap", kBob}, 50},
                                                              {{"owner_run_cap", kAlice}, 2}}));
  const std::vector<std::string> lines = Texts(RefusalEvents(c, Limits()));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("owner over its run cap, the runs with the oldest writes not "
                                  "tracked owner=1001 runs_left_out=2 cap=3 example=/jobs/a/old"));
  EXPECT_THAT(lines[1], HasSubstr("owner over its directory cap, the rest of its tree not "
                                  "walked owner=1002 dirs_left_out=50 cap=100000"));
  EXPECT_THAT(lines[2], HasSubstr("owner over its inotify watch budget, the rest of its "
                                  "directories found by polling owner=1001 dirs_polled=7 "
                                  "budget=1024"));
  EXPECT_EQ(l.CappedNow().size(), 3u);
  // Bob's tree grows by 10 directories not walked: counted, not said.
  scan.owner_dirs_capped = {{kBob, 60}};
  notes.owner_caps[0].newly = 0;
  ObserveScanRefusals(l, scan, notes, {{kAlice, 7}}, Limits());
  c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<ledger::RefusedKey, int64_t>{{{"owner_dir_cap", kBob}, 10}}));
  EXPECT_TRUE(RefusalEvents(c, Limits()).empty());
  // Everyone back under.
  ObserveScanRefusals(l, watch::ScanResult{}, window::Assembler::ScanNotes{}, {}, Limits());
  c = l.TakeChanges();
  EXPECT_EQ(RefusalEvents(c, Limits()).size(), 3u);
  EXPECT_TRUE(l.CappedNow().empty());
}

// A run quiet past --retention is refused once (not when it is exported),
// keeps its newest activity, and is forgotten when kept no longer.
TEST(RefusalsTest, RunsSkippedForRetentionAreCountedOnceWithTheirNewestActivity) {
  ledger::Ledger l;
  ObserveExpired(l, {{"j", "r"}, "w1", 100, kAlice}, false);
  ObserveExpired(l, {{"j", "r"}, "w2", 300, kAlice}, false);
  ObserveExpired(l, {{"j", "x"}, "w1", 50, kAlice}, true);  // exported: it expires
  ledger::Changes c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<ledger::RefusedKey, int64_t>{{{"retention", kAlice}, 1}}));
  EXPECT_TRUE(RefusalEvents(c, Limits()).empty());  // the ready notes say it
  ASSERT_EQ(l.Refused(kRetentionReason).size(), 1u);
  const ledger::Refusal& r = l.Refused(kRetentionReason).at(LedgerRunKey("j", "r"));
  EXPECT_EQ(r.last_activity_unix, 300);
  EXPECT_EQ(r.run.training_job, "j");
  EXPECT_EQ(r.run.run, "r");
}

}  // namespace refusals_test
}  // namespace profwatch::pipeline
