#include "steplog/log_tailer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/clock.h"
#include "steplog/step_time_source.h"
#include "testing/test_util.h"

namespace profwatch::steplog {
namespace {

using ::profwatch::testing::TempDir;
using ::profwatch::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
namespace fs = std::filesystem;

void Append(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::vector<std::string> PollOk(LogTailer& t) {
  Result<std::vector<std::string>> r = t.Poll();
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().ToString());
  return r ? *r : std::vector<std::string>{};
}

TEST(LogTailerTest, ReturnsCompleteLinesAndHoldsTornLastLine) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "completed step: 1, seconds: 2.0\ncompleted step: 2, sec");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("completed step: 1, seconds: 2.0"));
  EXPECT_TRUE(t.at_eof());
  EXPECT_THAT(PollOk(t), IsEmpty());
  Append(log, "onds: 2.5\n");
  EXPECT_THAT(PollOk(t), ElementsAre("completed step: 2, seconds: 2.5"));
  EXPECT_EQ(t.counters().lines, 2u);
  EXPECT_EQ(t.state().offset, fs::file_size(log));
}

// The modification time, read after the lines: how old a log read from its
// start is. Nothing read, no time.
TEST(LogTailerTest, LastWriteTimeIsTheFilesModificationTime) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "completed step: 1, seconds: 2.0\n");
  const auto month_ago = fs::file_time_type::clock::now() - std::chrono::hours(24 * 30);
  fs::last_write_time(log, month_ago);
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  const TimePoint mtime = TimePoint{} + std::chrono::duration_cast<TimePoint::duration>(
                                            std::chrono::seconds(st.st_mtim.tv_sec) +
                                            std::chrono::nanoseconds(st.st_mtim.tv_nsec));
  LogTailer t(log);
  EXPECT_FALSE(t.last_write_time().has_value());
  EXPECT_THAT(PollOk(t), ElementsAre("completed step: 1, seconds: 2.0"));
  EXPECT_EQ(t.last_write_time(), mtime);
  EXPECT_LT(t.last_write_time(), std::chrono::system_clock::now() - std::chrono::hours(24 * 29));
  EXPECT_THAT(PollOk(t), IsEmpty());
  EXPECT_FALSE(t.last_write_time().has_value());
}

TEST(LogTailerTest, MissingFileYieldsNothingUntilItAppears) {
  TempDir dir;
  const std::string log = dir.Sub("late.log");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), IsEmpty());
  EXPECT_FALSE(t.present());
  WriteFile(log, "a\nb\n");
  EXPECT_THAT(PollOk(t), ElementsAre("a", "b"));
  EXPECT_TRUE(t.present());
}

TEST(LogTailerTest, RotationDrainsOldFileThenReadsNewFromStart) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "1\n2\n");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("1", "2"));
  Append(log, "3\nunterminated");
  fs::rename(log, dir.Sub("job.log.1"));
  WriteFile(log, "4\n5");
  EXPECT_THAT(PollOk(t), ElementsAre("3", "unterminated", "4"));
  EXPECT_EQ(t.counters().rotations, 1u);
  Append(log, "\n");
  EXPECT_THAT(PollOk(t), ElementsAre("5"));
}

// A path that goes away is closed (issue 47): what the renamed file holds
// is drained once, later writes to it are not read; the next file at the
// path is read from its start.
TEST(LogTailerTest, RenamedAwayFileIsDrainedOnceAndClosed) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  const std::string old = dir.Sub("job.log.1");
  WriteFile(log, "a\n");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("a"));
  fs::rename(log, old);
  Append(old, "b\n");  // the writer still holds the renamed file
  EXPECT_THAT(PollOk(t), ElementsAre("b"));
  EXPECT_FALSE(t.present());
  Append(old, "c\n");
  EXPECT_THAT(PollOk(t), IsEmpty());
  WriteFile(log, "d\n");
  EXPECT_THAT(PollOk(t), ElementsAre("d"));
  EXPECT_TRUE(t.present());
}

// A huge file that stops being the log (unlinked, or its path now names
// another file) costs at most one poll's budget more, then is closed,
// however much of it is left (before: drained to its end).
TEST(LogTailerTest, UnlinkedOrReplacedHugeFileCostsOneBudgetThenCloses) {
  for (const bool replace : {false, true}) {
    SCOPED_TRACE(replace ? "replaced" : "unlinked");
    TempDir dir;
    const std::string log = dir.Sub("job.log");
    WriteFile(log, "1\n");
    fs::resize_file(log, uint64_t{1} << 30);  // sparse: a NUL "line" of 1 GiB
    TailerOptions opt;
    opt.max_bytes_per_poll = 1 << 20;
    LogTailer t(log, opt);
    EXPECT_THAT(PollOk(t), ElementsAre("1"));
    EXPECT_EQ(t.counters().bytes_read, 1u << 20);
    EXPECT_FALSE(t.at_eof());
    fs::remove(log);
    if (replace) WriteFile(log, "fresh\n");
    // A spent budget (0 bytes) still notices: the old file is closed
    // without another byte read; a new file at the path is opened.
    Result<std::vector<std::string>> none = t.Poll(nullptr, 0);
    ASSERT_TRUE(none) << none.error().ToString();
    EXPECT_THAT(*none, IsEmpty());
    EXPECT_EQ(t.counters().bytes_read, 1u << 20);
    EXPECT_EQ(t.counters().rotations, replace ? 1u : 0u);
    EXPECT_EQ(t.present(), replace);
    EXPECT_EQ(PollOk(t), replace ? std::vector<std::string>{"fresh"} : std::vector<std::string>{});
    EXPECT_EQ(t.counters().bytes_read, (1u << 20) + (replace ? 6u : 0u));
  }
}

// The same with budget left: one poll's budget drains the old file.
TEST(LogTailerTest, UnlinkedHugeFileIsDrainedWithinOnePoll) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "1\n");
  fs::resize_file(log, uint64_t{1} << 30);
  TailerOptions opt;
  opt.max_bytes_per_poll = 1 << 20;
  LogTailer t(log, opt);
  EXPECT_THAT(PollOk(t), ElementsAre("1"));
  fs::remove(log);
  EXPECT_THAT(PollOk(t), IsEmpty());
  EXPECT_FALSE(t.present());
  EXPECT_EQ(t.counters().bytes_read, 2u << 20);
  EXPECT_THAT(PollOk(t), IsEmpty());
  EXPECT_EQ(t.counters().bytes_read, 2u << 20);
}

// Poll's own limit bounds a poll below max_bytes_per_poll (the daemon's
// per-scan budget), and line_numbers() names each line's line in its file.
TEST(LogTailerTest, PollLimitAndLineNumbers) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "one\n\ntwo\r\nthree\rthree-b\n");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("one", "two", "three", "three-b"));
  EXPECT_THAT(t.line_numbers(), ElementsAre(1u, 3u, 4u, 4u));
  Append(log, std::string(300 << 10, 'x') + "\nfive\n");
  Result<std::vector<std::string>> r = t.Poll(nullptr, 100 << 10);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_THAT(*r, IsEmpty());  // 100 KiB of the overlong line skipped
  EXPECT_EQ(t.counters().bytes_read, 24u + (100u << 10));
  r = t.Poll(nullptr, 0);  // no budget: nothing read
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_THAT(*r, IsEmpty());
  EXPECT_EQ(t.counters().bytes_read, 24u + (100u << 10));
  EXPECT_TRUE(t.present());
  EXPECT_THAT(PollOk(t), ElementsAre("five"));  // dropped as overlong, then "five"
  EXPECT_THAT(t.line_numbers(), ElementsAre(6u));
  const TailerState saved = t.state();
  EXPECT_EQ(saved.newlines, 6u);
  Result<TailerState> parsed = TailerState::Parse(saved.Serialize());
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(*parsed, saved);
}

// With a confinement, the opened file's real path must lie under one of its
// directories: a link leading out is refused (kPermission, naming the
// path), a file inside is read, whatever the link's own place.
TEST(LogTailerTest, ConfinedPollRefusesALinkLeadingOut) {
  TempDir dir;
  const std::string root = dir.Sub("root");
  const std::string secret = dir.Sub("secret.log");
  WriteFile(secret, "completed step: 1, seconds: 9.0\n");
  WriteFile(root + "/inside.log", "inside\n");
  fs::create_symlink(secret, root + "/log.txt");
  fs::create_symlink(root + "/inside.log", root + "/link-in.txt");
  const read::Confinement roots = {fs::canonical(root).string()};
  LogTailer out(root + "/log.txt");
  Result<std::vector<std::string>> r = out.Poll(&roots);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermission);
  EXPECT_NE(r.error().ToString().find("outside the watched roots"), std::string::npos)
      << r.error().ToString();
  EXPECT_EQ(r.error().ToString().find("completed step"), std::string::npos);
  EXPECT_FALSE(out.present());
  EXPECT_EQ(out.counters().bytes_read, 0u);
  LogTailer in(root + "/link-in.txt");
  r = in.Poll(&roots);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_THAT(*r, ElementsAre("inside"));
  LogTailer anywhere(root + "/log.txt");  // no confinement (--follow-symlinks)
  r = anywhere.Poll();
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->size(), 1u);
}

TEST(LogTailerTest, DeletedFileIsDrainedAndClosed) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "a\n");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("a"));
  Append(log, "b\n");
  fs::remove(log);
  EXPECT_THAT(PollOk(t), ElementsAre("b"));
  EXPECT_FALSE(t.present());
  WriteFile(log, "c\n");
  EXPECT_THAT(PollOk(t), ElementsAre("c"));
}

TEST(LogTailerTest, CopyTruncateRestartsAtZero) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "old line 1\nold line 2\n");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("old line 1", "old line 2"));
  const uint64_t inode = t.state().inode;
  WriteFile(log, "new\n");  // O_TRUNC on the same inode, shorter than the offset
  EXPECT_THAT(PollOk(t), ElementsAre("new"));
  EXPECT_EQ(t.state().inode, inode);
  EXPECT_EQ(t.counters().truncations, 1u);
  EXPECT_EQ(t.counters().rotations, 0u);
}

TEST(LogTailerTest, TruncateAndRegrowPastOffsetIsCaughtByFingerprint) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "aaaa\n");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("aaaa"));
  WriteFile(log, "bbbbbbbbbbbb\ncc\n");  // rewritten, already longer than the old offset
  EXPECT_THAT(PollOk(t), ElementsAre("bbbbbbbbbbbb", "cc"));
  EXPECT_EQ(t.counters().truncations, 1u);
}

TEST(LogTailerTest, IdenticalPrefixRewriteResumesAtOffset) {
  // A rewrite whose bytes before the offset are unchanged is indistinguishable
  // from an append; the lines after the offset are still read exactly once.
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "cfg\n");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("cfg"));
  WriteFile(log, "cfg\nstep\n");
  EXPECT_THAT(PollOk(t), ElementsAre("step"));
  EXPECT_EQ(t.counters().truncations, 0u);
}

TEST(LogTailerTest, DropsOverlongLineAndCountsIt) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  TailerOptions opt;
  opt.max_line_bytes = 64 * 1024;
  WriteFile(log, "before\n" + std::string(200 * 1024, 'x') + "\nafter\n");
  LogTailer t(log, opt);
  EXPECT_THAT(PollOk(t), ElementsAre("before", "after"));
  EXPECT_EQ(t.counters().overlong_lines, 1u);
}

TEST(LogTailerTest, OverlongLineGrowingAcrossPollsStaysBounded) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  TailerOptions opt;
  opt.max_line_bytes = 1000;
  opt.chunk_bytes = 256;
  WriteFile(log, "ok\n");
  LogTailer t(log, opt);
  EXPECT_THAT(PollOk(t), ElementsAre("ok"));
  for (int i = 0; i < 50; ++i) {
    Append(log, std::string(300, 'y'));
    EXPECT_THAT(PollOk(t), IsEmpty());
  }
  // Once the line is known to be overlong the offset moves past its bytes, so
  // nothing is re-read and nothing is held.
  EXPECT_TRUE(t.state().in_overlong_line);
  EXPECT_EQ(t.state().offset, fs::file_size(log));
  Append(log, "tail of the long line\nnext\n");
  EXPECT_THAT(PollOk(t), ElementsAre("next"));
  EXPECT_EQ(t.counters().overlong_lines, 1u);
  EXPECT_FALSE(t.state().in_overlong_line);
}

TEST(LogTailerTest, LineOfExactlyMaxBytesIsKept) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  TailerOptions opt;
  opt.max_line_bytes = 10;
  opt.chunk_bytes = 3;
  WriteFile(log, "0123456789\n0123456789A\nz\n");
  LogTailer t(log, opt);
  EXPECT_THAT(PollOk(t), ElementsAre("0123456789", "z"));
  EXPECT_EQ(t.counters().overlong_lines, 1u);
}

TEST(LogTailerTest, CrLfCarriageReturnsAndEmptyLines) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "a\r\nb\n\n\n 50%|###\r 60%|####\rc\n");
  LogTailer t(log);
  EXPECT_THAT(PollOk(t), ElementsAre("a", "b", " 50%|###", " 60%|####", "c"));
}

TEST(LogTailerTest, BoundedPollsReturnEverythingInOrder) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  std::string data;
  std::vector<std::string> want;
  for (int i = 0; i < 5000; ++i) {
    want.push_back("completed step: " + std::to_string(i) + ", seconds: 1.0");
    data += want.back() + "\n";
  }
  WriteFile(log, data);
  TailerOptions opt;
  opt.max_line_bytes = 100;
  opt.chunk_bytes = 97;
  opt.max_bytes_per_poll = 4096;
  LogTailer t(log, opt);
  std::vector<std::string> got;
  int polls = 0;
  do {
    std::vector<std::string> lines = PollOk(t);
    got.insert(got.end(), lines.begin(), lines.end());
    ++polls;
  } while (!t.at_eof() && polls < 10000);
  EXPECT_EQ(got, want);
  EXPECT_GT(polls, 10);  // the budget really bounded each poll
}

TEST(LogTailerTest, StateRoundTripsAndResumesWithoutRereading) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "1\n2\npart");
  TailerState saved;
  {
    LogTailer t(log);
    EXPECT_THAT(PollOk(t), ElementsAre("1", "2"));
    saved = t.state();
  }
  EXPECT_EQ(saved.offset, 4u);  // the partial line is not consumed
  Result<TailerState> parsed = TailerState::Parse(saved.Serialize());
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(*parsed, saved);
  Append(log, "ial\n3\n");
  LogTailer resumed(log, *parsed);
  EXPECT_THAT(PollOk(resumed), ElementsAre("partial", "3"));
  EXPECT_EQ(resumed.counters().rotations, 0u);
  EXPECT_EQ(resumed.counters().truncations, 0u);
}

TEST(LogTailerTest, ResumeFromStateOfReplacedFileStartsOver) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "1\n2\n");
  TailerState saved;
  {
    LogTailer t(log);
    EXPECT_THAT(PollOk(t), ElementsAre("1", "2"));
    saved = t.state();
  }
  fs::rename(log, dir.Sub("job.log.1"));
  WriteFile(log, "new 1\n");
  LogTailer resumed(log, saved);
  EXPECT_THAT(PollOk(resumed), ElementsAre("new 1"));
  EXPECT_EQ(resumed.counters().rotations, 1u);
}

TEST(LogTailerTest, ResumeFromStateOfRewrittenFileStartsOver) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "first run line\n");
  TailerState saved;
  {
    LogTailer t(log);
    EXPECT_THAT(PollOk(t), ElementsAre("first run line"));
    saved = t.state();
  }
  WriteFile(log, "second run, longer line\n");  // same inode
  LogTailer resumed(log, saved);
  EXPECT_THAT(PollOk(resumed), ElementsAre("second run, longer line"));
  EXPECT_EQ(resumed.counters().truncations, 1u);
}

TEST(TailerStateTest, ParseRejectsGarbage) {
  for (std::string_view text :
       {"", "v2 dev=1 inode=2 offset=3 fp_len=0 fp=0 overlong=0",
        "v1 dev=1 inode=2 offset=3 fp_len=0 fp=0",
        "v1 dev=x inode=2 offset=3 fp_len=0 fp=0 overlong=0",
        "v1 dev=1 inode=2 offset=3 fp_len=4 fp=0 overlong=0",  // fp_len > offset
        "v1 dev=1 inode=2 offset=3 fp_len=0 fp=0 overlong=0 extra",
        "v1 dev=1 inode=2 offset=3 fp_len=0 fp=99999999999 overlong=0",
        "v1 dev=1 inode=2 offset=99999999999 fp_len=4000000000 fp=0 overlong=0", "\x01\x02\xff"}) {
    Result<TailerState> r = TailerState::Parse(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code, ErrorCode::kCorrupt);
  }
}

TEST(LogTailerTest, InconsistentResumeStateRereadsFromStart) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "1\n2\n");
  TailerState bogus;
  bogus.offset = 2;
  bogus.fingerprint_len = 100;  // more bytes than the offset: never written by the tailer
  LogTailer t(log, bogus);
  EXPECT_THAT(PollOk(t), ElementsAre("1", "2"));
}

TEST(LogTailerTest, DirectoryAtPathIsUnsupported) {
  TempDir dir;
  fs::create_directories(dir.Sub("job.log"));
  LogTailer t(dir.Sub("job.log"));
  Result<std::vector<std::string>> r = t.Poll();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
}

TEST(LogTailerTest, BinaryGarbageNeverBreaksIt) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  std::mt19937 rng(7);
  std::string junk(300000, '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  WriteFile(log, junk + "\nend\n");
  TailerOptions opt;
  opt.max_line_bytes = 4096;
  LogTailer t(log, opt);
  std::vector<std::string> got;
  do {
    std::vector<std::string> lines = PollOk(t);
    got.insert(got.end(), lines.begin(), lines.end());
  } while (!t.at_eof());
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), "end");
  for (const std::string& l : got) EXPECT_LE(l.size(), 4096u);
  EXPECT_EQ(t.state().offset, fs::file_size(log));
}

// A log is the run's (issue 60) when it lies in the run's directory, or
// when its owner is the run's and it is no link: a file of another owner
// outside the run (planted in a shared root), and a link leading out of
// the run (even to a file of the run's owner), are refused as untrusted.
TEST(LogTailerTest, OpenRunLogKeepsOnlyTheRunsFiles) {
  TempDir tmp;
  const std::string run = tmp.Sub("jobs/victim/r1");
  const std::string root_log = tmp.Sub("jobs/victim.r1.log");
  WriteFile(run + "/log.txt", "a\n");
  WriteFile(root_log, "b\n");
  WriteFile(tmp.Sub("jobs/victim/r2/log.txt"), "c\n");
  fs::create_symlink(run + "/log.txt", tmp.Sub("jobs/in.log"));
  fs::create_symlink(tmp.Sub("jobs/victim/r2/log.txt"), run + "/other.log");
  const uint32_t me = getuid();
  auto open_as = [&](const std::string& path, uint32_t owner, bool* untrusted) {
    LogTrust trust{owner, {fs::canonical(run).string()}};
    Result<int> fd = OpenRunLog(path, nullptr, &trust, untrusted);
    if (fd) ::close(*fd);
    return fd.has_value();
  };
  bool untrusted = true;
  EXPECT_TRUE(open_as(run + "/log.txt", me + 1, &untrusted));  // in the run: anyone's
  EXPECT_FALSE(untrusted);
  EXPECT_TRUE(open_as(root_log, me, &untrusted));       // the run owner's file
  EXPECT_FALSE(open_as(root_log, me + 1, &untrusted));  // another owner's file
  EXPECT_TRUE(untrusted);
  EXPECT_TRUE(open_as(tmp.Sub("jobs/in.log"), me + 1, &untrusted));  // a link into the run
  EXPECT_FALSE(open_as(run + "/other.log", me, &untrusted));         // a link out of it
  EXPECT_TRUE(untrusted);
  EXPECT_FALSE(open_as(tmp.Sub("jobs/gone.log"), me, &untrusted));
  EXPECT_FALSE(untrusted);  // missing: not a refusal

  // The tailer checks every open: a rotation to another owner's file is
  // refused, the run owner's next file read.
  LogTailer t(root_log);
  t.SetTrust(LogTrust{me, {}});
  EXPECT_THAT(PollOk(t), ElementsAre("b"));
  t.SetTrust(LogTrust{me + 1, {}});
  ASSERT_EQ(::unlink(root_log.c_str()), 0);
  WriteFile(root_log, "d\n");
  Result<std::vector<std::string>> r = t.Poll();
  EXPECT_FALSE(r.has_value());
  EXPECT_TRUE(t.untrusted());
  t.SetTrust(LogTrust{me, {}});
  EXPECT_THAT(PollOk(t), ElementsAre("d"));
  EXPECT_FALSE(t.untrusted());
}

TEST(LogTailerTest, UnreadableFileIsPermissionError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  WriteFile(log, "a\n");
  fs::permissions(log, fs::perms::none);
  LogTailer t(log);
  Result<std::vector<std::string>> r = t.Poll();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kPermission);
}

// The daemon's use in miniature: a multi-node log written a piece at a time,
// rotated mid-run, feeding a StepTimeSource.
TEST(LogTailerTest, GrowingRotatingLogFeedsStepTimeSource) {
  TempDir dir;
  const std::string log = dir.Sub("job.log");
  FakeClock clock;
  StepTimeSource source(clock);
  LogTailer tailer(log);
  auto pump = [&] {
    for (const std::string& line : PollOk(tailer)) source.AddLine(line);
  };
  pump();  // not there yet
  WriteFile(log,
            "Config param profiler: xplane\nConfig param skip_first_n_steps_for_profiler: 5\n"
            "Config param profiler_steps: 3\n");
  pump();
  for (int step = 0; step < 20; ++step) {
    // Steady steps take 2.0 s on node0 and 2.0 + step/100 s on node1.
    double base = step < 5 ? 30.0 : (step <= 8 ? 3.0 : 2.0);
    std::string l0 = "[node0] completed step: " + std::to_string(step) +
                     ", seconds: " + std::to_string(base) + ", loss: 5.0\n";
    std::string l1 = "[node1] completed step: " + std::to_string(step) +
                     ", seconds: " + std::to_string(base + step / 100.0) + ", loss: 5.0\n";
    // Torn writes: each line lands in two pieces with a poll in between.
    Append(log, l0.substr(0, 10));
    pump();
    Append(log, l0.substr(10) + l1.substr(0, 25));
    pump();
    Append(log, l1.substr(25));
    pump();
    if (step == 12) {
      fs::rename(log, dir.Sub("job.log.1"));
      WriteFile(log, "");
      pump();
    }
  }
  EXPECT_EQ(tailer.counters().rotations, 1u);
  EXPECT_EQ(source.parse_errors(), 0u);
  EXPECT_EQ(source.step_lines(), 40u);
  EXPECT_EQ(source.last_step(), 19);
  EXPECT_DOUBLE_EQ(*source.last_step_seconds(), 2.19);
  EXPECT_NEAR(*source.last_step_spread_seconds(), 0.19, 1e-9);
  // Steady steps 9..19: slowest node 2.09 .. 2.19, median 2.14.
  EXPECT_EQ(source.steady_step_count(), 11u);
  EXPECT_DOUBLE_EQ(*source.steady_step_seconds(), 2.14);
}

}  // namespace
}  // namespace profwatch::steplog
