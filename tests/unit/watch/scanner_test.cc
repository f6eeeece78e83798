#include "watch/scanner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "testing/test_util.h"

namespace profwatch::watch {
namespace {

namespace fs = std::filesystem;
using profwatch::testing::TempDir;
using profwatch::testing::WriteFile;

ScanOptions Roots(const std::string& root) {
  ScanOptions o;
  o.roots = {root};
  return o;
}

const FileObservation* Find(const ScanResult& r, const std::string& suffix) {
  for (const auto& f : r.files) {
    if (f.path.ends_with(suffix)) return &f;
  }
  return nullptr;
}

TEST(ScannerTest, FindsMaxTextWindowsWithJobAndRunLabels) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteFile(
      jobs + "/123-llama/run_a/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz",
      "abc");
  WriteFile(jobs + "/123-llama/run_a/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.xplane.pb",
            "x");
  WriteFile(jobs + "/123-llama/run_a/tensorboard/plugins/profile/2024_03_01_12_00_00/notes.txt",
            "x");
  WriteFile(
      jobs +
          "/456-gpt/run_b/tensorboard/plugins/profile/2024_03_01_13_00_00/h1.proc0.trace.json.gz",
      "x");
  WriteFile(jobs + "/456-gpt/run_b/checkpoints/0/items", "x");
  ScanResult r = Scan(Roots(jobs));
  ASSERT_EQ(r.files.size(), 3u);
  const FileObservation* a = Find(r, "h0.trace.json.gz");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->labels.training_job, "123-llama");
  EXPECT_EQ(a->labels.run, "run_a");
  EXPECT_EQ(a->size, 3u);
  EXPECT_NE(a->ino, 0u);
  EXPECT_EQ(a->group_dir, a->dir);
  EXPECT_EQ(fs::path(a->dir).filename(), "2024_03_01_12_00_00");
  EXPECT_GT(a->mtime_ns, 0);
  const FileObservation* b = Find(r, "h1.proc0.trace.json.gz");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->labels.training_job, "456-gpt");
  EXPECT_EQ(b->labels.run, "run_b");
}

// Issue #49: no label is named after a directory above a watch root. A root
// of one job or one run is bound to its job name (--watch JOB=DIR); unbound,
// the root is a directory of jobs and a run at it carries the root's own
// name and run "-".
TEST(ScannerTest, LabelsForJobDirAndRunDirRoots) {
  TempDir tmp;
  const std::string job = tmp.Sub("jobs/123-llama");
  WriteFile(job + "/run_a/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", "x");
  ScanOptions bound = Roots(job);
  bound.root_jobs[job] = "llama";
  ScanResult as_job = Scan(bound);
  ASSERT_EQ(as_job.files.size(), 1u);
  EXPECT_EQ(as_job.files[0].labels.training_job, "llama");
  EXPECT_EQ(as_job.files[0].labels.run, "run_a");
  ScanOptions bound_run = Roots(job + "/run_a/");
  bound_run.root_jobs[job + "/run_a/"] = "123-llama";
  ScanResult as_run = Scan(bound_run);
  ASSERT_EQ(as_run.files.size(), 1u);
  EXPECT_EQ(as_run.files[0].labels.training_job, "123-llama");
  EXPECT_EQ(as_run.files[0].labels.run, "-");
  // Unbound, a run dir root is its own job: nothing is read from "jobs" or
  // "123-llama" above it.
  ScanResult unbound_run = Scan(Roots(job + "/run_a"));
  ASSERT_EQ(unbound_run.files.size(), 1u);
  EXPECT_EQ(unbound_run.files[0].labels.training_job, "run_a");
  EXPECT_EQ(unbound_run.files[0].labels.run, "-");
  // A root inside the run (the profile dir itself): the run dir lies above
  // the root, so the root's own name.
  ScanResult inside = Scan(Roots(job + "/run_a/tensorboard/plugins/profile"));
  ASSERT_EQ(inside.files.size(), 1u);
  EXPECT_EQ(inside.files[0].labels.training_job, "profile");
  EXPECT_EQ(inside.files[0].labels.run, "-");
}

// Issue #49: Kineto files directly in a job dir of a root of jobs are that
// job's (run "-"), not the root's; a trace at the root is the root's own.
TEST(ScannerTest, KinetoFilesInAJobDirAndATraceAtTheRootAreLabelledFromBelowTheRoot) {
  TempDir tmp;
  const std::string root = tmp.Sub("outputs");
  WriteFile(root + "/jobK/node1_77.1709294400000.pt.trace.json", "x");
  WriteFile(root + "/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", "x");
  ScanResult r = Scan(Roots(root));
  ASSERT_EQ(r.files.size(), 2u);
  const FileObservation* kineto = Find(r, "node1_77.1709294400000.pt.trace.json");
  ASSERT_NE(kineto, nullptr);
  EXPECT_EQ(kineto->labels.training_job, "jobK");
  EXPECT_EQ(kineto->labels.run, "-");
  EXPECT_EQ(kineto->run_dir, root + "/jobK");
  const FileObservation* at_root = Find(r, "h0.trace.json.gz");
  ASSERT_NE(at_root, nullptr);
  EXPECT_EQ(at_root->labels.training_job, "outputs");
  EXPECT_EQ(at_root->labels.run, "-");
}

TEST(ScannerTest, LabelRules) {
  EXPECT_EQ(LabelsForRunDir("/jobs", "/jobs/j1/r1").training_job, "j1");
  EXPECT_EQ(LabelsForRunDir("/jobs", "/jobs/j1/r1").run, "r1");
  EXPECT_EQ(LabelsForRunDir("/jobs", "/jobs/j1/sub/r1").run, "sub/r1");
  EXPECT_EQ(LabelsForRunDir("/jobs", "/jobs/j1").training_job, "j1");
  EXPECT_EQ(LabelsForRunDir("/jobs", "/jobs/j1").run, "-");
  EXPECT_EQ(LabelsForRunDir("/jobs", "/jobs").training_job, "jobs");
  EXPECT_EQ(LabelsForRunDir("/jobs", "/jobs").run, "-");
  EXPECT_EQ(LabelsForRunDir("/jobs/j1/r1/tb", "/jobs/j1/r1").training_job, "tb");
  EXPECT_EQ(LabelsForRunDir("/jobs/j1", "/jobs/j1/r1", "j1").training_job, "j1");
  EXPECT_EQ(LabelsForRunDir("/jobs/j1", "/jobs/j1/r1", "named").training_job, "named");
  EXPECT_EQ(LabelsForRunDir("/jobs/j1", "/jobs/j1/r1", "j1").run, "r1");
  EXPECT_EQ(LabelsForRunDir("/jobs/j1", "/jobs/j1/a/b", "j1").run, "a/b");
  EXPECT_EQ(LabelsForRunDir("/jobs/j1/r1", "/jobs/j1/r1", "j1").run, "-");
  EXPECT_EQ(LabelsForRunDir("/jobs/j1/r1/tb", "/jobs/j1/r1", "j1").run, "-");
}

TEST(ScannerTest, ParseWatchRootBindsAJobNameLikeLogBindings) {
  EXPECT_EQ(ParseWatchRoot("/data/jobs")->path, "/data/jobs");
  EXPECT_EQ(ParseWatchRoot("/data/jobs")->job, "");
  EXPECT_EQ(ParseWatchRoot("llama=/data/jobs/123-llama")->job, "llama");
  EXPECT_EQ(ParseWatchRoot("llama=/data/jobs/123-llama")->path, "/data/jobs/123-llama");
  // A path with '=' in it is a path.
  EXPECT_EQ(ParseWatchRoot("/data/a=b")->job, "");
  EXPECT_EQ(ParseWatchRoot("./a=b")->path, "./a=b");
  EXPECT_EQ(ParseWatchRoot("a/b=/x").error().code, ErrorCode::kConfig);
  EXPECT_EQ(ParseWatchRoot("llama=").error().code, ErrorCode::kConfig);
  EXPECT_EQ(ParseWatchRoot("").error().code, ErrorCode::kConfig);
  EXPECT_EQ(ParseWatchRoot(std::string(257, 'j') + "=/x").error().code, ErrorCode::kConfig);
  EXPECT_TRUE(ParseWatchRoot(std::string(256, 'j') + "=/x").has_value());
}

TEST(ScannerTest, GenericPluginsProfileAndKinetoDirs) {
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  WriteFile(root + "/jobX/exp1/plugins/profile/2024_03_01_12_00_00/host.trace.json", "x");
  WriteFile(root + "/jobY/torch1/traces/w0.11.1709294400000.pt.trace.json.gz", "x");
  WriteFile(root + "/jobY/torch1/traces/w1.12.1709294401000.pt.trace.json.gz", "x");
  ScanResult r = Scan(Roots(root));
  ASSERT_EQ(r.files.size(), 3u);
  const FileObservation* g = Find(r, "host.trace.json");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->labels.training_job, "jobX");
  EXPECT_EQ(g->labels.run, "exp1");
  const FileObservation* k = Find(r, "w1.12.1709294401000.pt.trace.json.gz");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->labels.training_job, "jobY");
  EXPECT_EQ(k->labels.run, "torch1");
  EXPECT_EQ(k->group_time, 1709294401);
  // One grouping dir per capture, named by the capture time as written.
  EXPECT_EQ(fs::path(k->group_dir).filename(), "1709294401000");
  EXPECT_EQ(k->dir, root + "/jobY/torch1/traces");
}

TEST(ScannerTest, KinetoNanosecondCapturesAreOneGroupEachNamedByTheirTime) {
  testing::TempDir tmp;
  const std::string root = tmp.path();
  // torch.profiler schedule(repeat=2): two cycles of one process, 0.7 s apart.
  WriteFile(root + "/job/run/profiler/vm_1481.1795652969892807939.pt.trace.json.gz", "x");
  WriteFile(root + "/job/run/profiler/vm_1481.1795652970610113897.pt.trace.json.gz", "x");
  ScanOptions opts;
  opts.roots = {root};
  ScanResult r = Scan(opts);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].group_time, 1795652969);
  EXPECT_EQ(fs::path(r.files[0].group_dir).filename(), "1795652969892807939");
  EXPECT_EQ(r.files[1].group_time, 1795652970);
  EXPECT_EQ(fs::path(r.files[1].group_dir).filename(), "1795652970610113897");
}

TEST(ScannerTest, NsysCaptureDirIsOneWindowDatedByItsOldestExport) {
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  const std::string capture = root + "/llm/run-3/capture-nsys-profile";
  WriteFile(capture + "/prof_node0.sqlite", "x");
  WriteFile(capture + "/prof_node1.sqlite", "x");
  WriteFile(capture + "/prof_node1.nsys-rep", "x");        // the report itself: not read
  WriteFile(capture + "/.prof_node2.sqlite", "x");         // hidden: a copy in progress
  WriteFile(root + "/llm/run-3/other/stray.sqlite", "x");  // outside a capture dir
  const auto set_mtime = [](const std::string& path, time_t t) {
    struct timespec times[2] = {{t, 0}, {t, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << errno;
  };
  set_mtime(capture + "/prof_node0.sqlite", 1709294405);  // 2024-03-01 12:00:05
  set_mtime(capture + "/prof_node1.sqlite", 1709294400);  // 2024-03-01 12:00:00
  ScanResult r = Scan(Roots(root));
  ASSERT_EQ(r.files.size(), 2u);
  for (const FileObservation& f : r.files) {
    EXPECT_EQ(f.labels.training_job, "llm") << f.path;
    EXPECT_EQ(f.labels.run, "run-3") << f.path;
    EXPECT_EQ(f.run_dir, root + "/llm/run-3") << f.path;
    EXPECT_EQ(f.dir, capture);
    EXPECT_EQ(f.group_time, 1709294400) << f.path;
    EXPECT_EQ(f.group_dir, capture + "/2024_03_01_12_00_00") << f.path;
  }
  EXPECT_NE(Find(r, "/prof_node0.sqlite"), nullptr);
  EXPECT_NE(Find(r, "/prof_node1.sqlite"), nullptr);
}

TEST(ScannerTest, SymlinkLoopTerminates) {
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  WriteFile(root + "/j/r/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", "x");
  fs::create_directory_symlink(root, root + "/j/loop");
  fs::create_directory_symlink(root + "/j", root + "/j/r/up");
  ScanResult r = Scan(Roots(root));
  EXPECT_EQ(r.files.size(), 1u);
}

// Directories are opened relative to their parent: a job that is a symlink
// to a directory elsewhere is walked under its link's path, files that are
// symlinks are reported with their target's size, and a dangling link is
// skipped without an error.
TEST(ScannerTest, SymlinkedJobDirAndFilesAreFollowedWithFollowSymlinks) {
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  const std::string elsewhere = tmp.Sub("elsewhere");
  const std::string ts = "/r/tensorboard/plugins/profile/2024_03_01_12_00_00";
  WriteFile(elsewhere + "/jobL" + ts + "/h0.trace.json.gz", "12345");
  fs::create_directories(root);
  fs::create_directory_symlink(elsewhere + "/jobL", root + "/jobL");
  WriteFile(elsewhere + "/data.gz", "123");
  WriteFile(root + "/jobM" + ts + "/h0.trace.json.gz", "x");
  fs::create_symlink(elsewhere + "/data.gz", root + "/jobM" + ts + "/h1.trace.json.gz");
  fs::create_symlink(elsewhere + "/gone", root + "/jobM" + ts + "/h2.trace.json.gz");
  ScanResult r = Scan(ScanOptions{
      .roots = {root}, .host_filter = "", .max_depth = 16, .follow_symlinks = true, .shard = {}});
  ASSERT_EQ(r.files.size(), 3u);
  EXPECT_EQ(r.symlinks_skipped, 0);
  const FileObservation* linked = Find(r, "/jobL" + ts + "/h0.trace.json.gz");
  ASSERT_NE(linked, nullptr);
  EXPECT_EQ(linked->path, root + "/jobL" + ts + "/h0.trace.json.gz");
  EXPECT_EQ(linked->labels.training_job, "jobL");
  EXPECT_EQ(linked->size, 5u);
  const FileObservation* file_link = Find(r, "/h1.trace.json.gz");
  ASSERT_NE(file_link, nullptr);
  EXPECT_EQ(file_link->size, 3u);
  EXPECT_EQ(r.permission_errors + r.other_errors, 0);
}

// By default a directory link out of the root is not walked (a link to /usr
// must not make every poll walk /usr); a link inside the root is refused
// (the real directory is walked under its own name).
TEST(ScannerTest, DirectoryLinksOutOfTheRootAreSkippedByDefault) {
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  const std::string ts = "/r/tensorboard/plugins/profile/2024_03_01_12_00_00";
  WriteFile(tmp.Sub("elsewhere/jobL") + ts + "/h0.trace.json.gz", "x");
  WriteFile(root + "/jobA" + ts + "/h0.trace.json.gz", "x");
  fs::create_directory_symlink(tmp.Sub("elsewhere/jobL"), root + "/jobL");
  fs::create_directory_symlink(root + "/jobA", root + "/jobAlias");  // inside the root
  fs::create_directory_symlink("/usr", root + "/usr");
  ScanResult r = Scan(Roots(root));
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].labels.training_job, "jobA");
  EXPECT_EQ(r.symlinks_skipped, 2);
  ASSERT_EQ(r.ignored.size(), 1u);
  EXPECT_EQ(r.ignored[0].path, root + "/jobAlias");
  EXPECT_EQ(r.ignored[0].reason, kIgnoredDirLink);
  for (const std::string& d : r.dirs) EXPECT_FALSE(d.starts_with(root + "/usr")) << d;
}

// Links into a root relabel nothing (issue 60): `0alias -> victim` sorts
// before the victim and `evil/r1 -> ../victim2/r1` lies in another job;
// neither is followed (reported with the link's owner), each run is found
// under its real name, once. A <ts> link inside a run and a link into
// another watched root are refused the same way, with --follow-symlinks
// too; a root given as a link is walked under its own path.
TEST(ScannerTest, DirectoryLinksIntoARootAreRefusedAndRunsKeepTheirNames) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  const std::string other = tmp.Sub("other");
  const std::string ts = "/r1/tensorboard/plugins/profile/2024_03_01_12_00_00";
  WriteFile(jobs + "/victim" + ts + "/h0.trace.json.gz", "x");
  WriteFile(jobs + "/victim2" + ts + "/h0.trace.json.gz", "x");
  WriteFile(other + "/theirs" + ts + "/h0.trace.json.gz", "x");
  fs::create_directories(jobs + "/evil/r2/tensorboard/plugins/profile");
  fs::create_directory_symlink("victim", jobs + "/0alias");
  fs::create_directory_symlink("../victim2/r1", jobs + "/evil/r1");
  fs::create_directory_symlink(jobs + "/victim" + ts,
                               jobs + "/evil/r2/tensorboard/plugins/profile/2024_03_01_13_00_00");
  fs::create_directory_symlink(other + "/theirs", jobs + "/1theirs");
  fs::create_directory_symlink(jobs, tmp.Sub("jobs-link"));
  for (bool follow : {false, true}) {
    ScanOptions o;
    o.roots = {tmp.Sub("jobs-link"), other};
    o.follow_symlinks = follow;
    ScanResult r = Scan(o);
    ASSERT_EQ(r.files.size(), 3u) << follow;
    EXPECT_EQ(r.files[0].labels.training_job, "victim");
    EXPECT_EQ(r.files[0].path, tmp.Sub("jobs-link") + "/victim" + ts + "/h0.trace.json.gz");
    EXPECT_EQ(r.files[1].labels.training_job, "victim2");
    EXPECT_EQ(r.files[2].labels.training_job, "theirs");
    std::vector<std::string> refused;
    for (const IgnoredDir& d : r.ignored) {
      EXPECT_EQ(d.reason, kIgnoredDirLink) << d.path;
      EXPECT_EQ(d.owner, getuid()) << d.path;
      refused.push_back(d.path.substr(tmp.Sub("jobs-link").size()));
    }
    EXPECT_EQ(refused, (std::vector<std::string>{
                           "/0alias", "/1theirs", "/evil/r1",
                           "/evil/r2/tensorboard/plugins/profile/2024_03_01_13_00_00"}));
    EXPECT_EQ(r.symlinks_skipped, 0);
  }
}

// The same job under two roots: each copy is its own run, its training_job
// qualified by its root's name (the whole root path where two roots share
// a name); a job under one root keeps its plain name.
TEST(ScannerTest, AJobUnderTwoRootsIsQualifiedByItsRoot) {
  TempDir tmp;
  const std::string ts = "/r1/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz";
  WriteFile(tmp.Sub("a-scratch/victim") + ts, "x");
  WriteFile(tmp.Sub("b-home/victim") + ts, "x");
  WriteFile(tmp.Sub("b-home/alone") + ts, "x");
  ScanOptions o;
  o.roots = {tmp.Sub("a-scratch"), tmp.Sub("b-home") + "/"};
  ScanResult r = Scan(o);
  ASSERT_EQ(r.files.size(), 3u);
  EXPECT_EQ(r.files[0].labels.training_job, "a-scratch:victim");
  EXPECT_EQ(r.files[1].labels.training_job, "alone");
  EXPECT_EQ(r.files[2].labels.training_job, "b-home:victim");
  EXPECT_EQ(r.job_clashes,
            (std::vector<JobClash>{{"victim", {"a-scratch:victim", "b-home:victim"}}}));
  // Two roots of the same name: their whole paths.
  WriteFile(tmp.Sub("x/jobs/victim") + ts, "x");
  WriteFile(tmp.Sub("y/jobs/victim") + ts, "x");
  o.roots = {tmp.Sub("x/jobs"), tmp.Sub("y/jobs")};
  r = Scan(o);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].labels.training_job, tmp.Sub("x/jobs") + ":victim");
  EXPECT_EQ(r.files[1].labels.training_job, tmp.Sub("y/jobs") + ":victim");
  // One root: no clash.
  o.roots = {tmp.Sub("x/jobs")};
  r = Scan(o);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].labels.training_job, "victim");
  EXPECT_TRUE(r.job_clashes.empty());
}

// A trace file linked from outside the root is not reported (the daemon
// reads only what lies under its roots); a link whose target is inside the
// root is read like the file itself.
TEST(ScannerTest, FileLinksOutOfTheRootAreSkippedByDefault) {
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  const std::string ts = root + "/j/r/tensorboard/plugins/profile/2024_03_01_12_00_00";
  WriteFile(tmp.Sub("elsewhere/secret.trace.json.gz"), "12345");
  WriteFile(root + "/j/r/data/h1.bin", "123");
  WriteFile(ts + "/h0.trace.json.gz", "x");
  fs::create_symlink(tmp.Sub("elsewhere/secret.trace.json.gz"), ts + "/h2.trace.json.gz");
  fs::create_symlink(root + "/j/r/data/h1.bin", ts + "/h1.trace.json.gz");
  fs::create_symlink(tmp.Sub("elsewhere/gone"), ts + "/h3.trace.json.gz");
  ScanResult r = Scan(Roots(root));
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].name, "h0.trace.json.gz");
  EXPECT_EQ(r.files[1].name, "h1.trace.json.gz");
  EXPECT_EQ(r.files[1].size, 3u);  // the target inside the root
  // Charged to the run it lies in: the run directory's owner (this user).
  EXPECT_EQ(r.outside_root_files, (std::vector<OutsideLink>{{ts + "/h2.trace.json.gz", getuid()}}));
  // --follow-symlinks reads it.
  ScanOptions follow = Roots(root);
  follow.follow_symlinks = true;
  ScanResult f = Scan(follow);
  EXPECT_EQ(f.files.size(), 3u);
  EXPECT_TRUE(f.outside_root_files.empty());
}

// 100,000 empty trace files in one <ts> dir: nothing of it is stat'ed or
// reported (the scanner stops reading it one entry past the cap), the
// directory is reported once per scan as capped, and the job beside it is
// found as before.
TEST(ScannerTest, TsDirOverTheWindowCapIsRefusedWhole) {
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  const std::string flood = root + "/evil/r/tensorboard/plugins/profile/2024_03_01_12_00_00";
  WriteFile(root + "/good/r/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", "x");
  fs::create_directories(flood);
  for (int i = 0; i < 100'000; ++i) {
    const std::string path = flood + "/h" + std::to_string(i) + ".trace.json.gz";
    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << path;
    close(fd);
  }
  ScanResult r = Scan(Roots(root));
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].labels.training_job, "good");
  ASSERT_EQ(r.capped_dirs.size(), 1u);
  EXPECT_EQ(r.capped_dirs[0].path, flood);
  EXPECT_EQ(r.capped_dirs[0].cap, caps::kFilesPerWindow.value);
  EXPECT_EQ(r.capped_dirs[0].files, caps::kFilesPerWindow.value + 1);
  EXPECT_FALSE(r.capped_dirs[0].counted_all);
  // Still watched: its files going away must be noticed.
  EXPECT_NE(std::find(r.dirs.begin(), r.dirs.end(), flood), r.dirs.end());
  EXPECT_EQ(r.permission_errors + r.other_errors, 0);
}

// The caps at their edge: a directory holding exactly its cap is read, one
// more file refuses it; a <ts> dir is held to the smaller of the two caps, a
// Kineto dir (every cycle of its processes) to the directory cap.
TEST(ScannerTest, FileCapsApplyPerDirectoryKind) {
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  const std::string ts = root + "/j/r/tensorboard/plugins/profile/2024_03_01_12_00_00";
  const std::string kineto = root + "/j/k/profiler";
  for (int i = 0; i < 3; ++i) {
    WriteFile(ts + "/h" + std::to_string(i) + ".trace.json.gz", "x");
    WriteFile(kineto + "/h_1." + std::to_string(1795652969892807939LL + i) + ".pt.trace.json.gz",
              "x");
  }
  ScanOptions o = Roots(root);
  o.max_files_per_window = 3;
  o.max_files_per_dir = 3;
  EXPECT_EQ(Scan(o).files.size(), 6u);
  EXPECT_TRUE(Scan(o).capped_dirs.empty());
  o.max_files_per_window = 2;  // the <ts> dir is one window; Kineto cycles are not
  ScanResult r = Scan(o);
  EXPECT_EQ(r.files.size(), 3u);
  ASSERT_EQ(r.capped_dirs.size(), 1u);
  EXPECT_EQ(r.capped_dirs[0].path, ts);
  EXPECT_EQ(r.capped_dirs[0].cap, 2);
  o.max_files_per_dir = 2;
  r = Scan(o);
  EXPECT_TRUE(r.files.empty());
  ASSERT_EQ(r.capped_dirs.size(), 2u);
  const CappedDir& k = r.capped_dirs[0].path == kineto ? r.capped_dirs[0] : r.capped_dirs[1];
  EXPECT_EQ(k.path, kineto);
  EXPECT_EQ(k.files, 3);
  EXPECT_TRUE(k.counted_all);
}

TEST(ScannerTest, UnreadableDirectoryIsCountedAndSkipped) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir tmp;
  const std::string root = tmp.Sub("root");
  WriteFile(root + "/j/r/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", "x");
  WriteFile(root + "/j/secret/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz",
            "x");
  chmod((root + "/j/secret").c_str(), 0);
  ScanResult r = Scan(Roots(root));
  EXPECT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.permission_errors, 1);
  EXPECT_EQ(r.permission_error_paths, std::vector<std::string>{root + "/j/secret"});
}

TEST(ScannerTest, EachRootReportsWhetherItCanBeWalked) {
  TempDir tmp;
  WriteFile(tmp.Sub("ok/j/r/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz"),
            "x");
  WriteFile(tmp.Sub("plain_file"), "x");
  ScanResult r =
      Scan(ScanOptions{.roots = {tmp.Sub("ok"), tmp.Sub("missing"), tmp.Sub("plain_file")},
                       .host_filter = "",
                       .max_depth = 16,
                       .follow_symlinks = false,
                       .shard = {}});
  ASSERT_EQ(r.roots.size(), 3u);
  EXPECT_EQ(r.roots[0].path, tmp.Sub("ok"));
  EXPECT_EQ(r.roots[0].condition, RootCondition::kOk);
  EXPECT_EQ(r.roots[0].error, 0);
  EXPECT_EQ(r.roots[1].path, tmp.Sub("missing"));
  EXPECT_EQ(r.roots[1].condition, RootCondition::kMissing);
  EXPECT_EQ(r.roots[1].error, ENOENT);
  EXPECT_EQ(r.roots[2].condition, RootCondition::kNotDirectory);
  EXPECT_EQ(RootConditionName(r.roots[2].condition), "not a directory");
  EXPECT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.permission_errors + r.other_errors, 0);
}

TEST(ScannerTest, HostFilterKeepsOnlyThisHostsFiles) {
  TempDir tmp;
  const std::string ts = tmp.Sub("j/r/tensorboard/plugins/profile/2024_03_01_12_00_00");
  WriteFile(ts + "/node1.trace.json.gz", "x");
  WriteFile(ts + "/node1.proc3.trace.json.gz", "x");
  WriteFile(ts + "/node10.trace.json.gz", "x");
  WriteFile(ts + "/node2.trace.json.gz", "x");
  ScanResult r = Scan(ScanOptions{.roots = {tmp.Sub("j")},
                                  .host_filter = "node1",
                                  .max_depth = 16,
                                  .follow_symlinks = false,
                                  .shard = {}});
  EXPECT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.filtered_files, 2);
  EXPECT_TRUE(MatchesHost("node1.trace.json.gz", "node1"));
  EXPECT_FALSE(MatchesHost("node10.trace.json.gz", "node1"));
  // Kineto files: the host before the pid, as the host label reads it.
  EXPECT_TRUE(MatchesHost("vm_1481.1795652969892807939.pt.trace.json.gz", "vm"));
  EXPECT_FALSE(MatchesHost("vm_1481.1795652969892807939.pt.trace.json.gz", "vm_1481"));
  EXPECT_TRUE(MatchesHost("node_12_3456.123.pt.trace.json", "node_12"));
  EXPECT_FALSE(MatchesHost("node_12_3456.123.pt.trace.json", "node"));
  EXPECT_TRUE(MatchesHost("node1.example.com_77.123.pt.trace.json", "node1"));
  EXPECT_FALSE(ShortHostName().empty());
  EXPECT_EQ(ShortHostName().find('.'), std::string::npos);
}

TEST(ScannerTest, MissingRootIsEmptyNotAnError) {
  ScanResult r = Scan(Roots("/nonexistent/profwatch/root"));
  EXPECT_TRUE(r.files.empty());
  EXPECT_EQ(r.permission_errors, 0);
}

}  // namespace
}  // namespace profwatch::watch

// --- owners, the per-owner directory cap and the stop flag (issue 46) ------

namespace profwatch::watch {
namespace {

std::string TsDir(const std::string& jobs, const std::string& job, const std::string& ts) {
  return jobs + "/" + job + "/run/tensorboard/plugins/profile/" + ts;
}

// Each file carries the uid of its run directory (who created the run: in
// b, another user's run); each walked directory the uid of the root's child
// it lies under, the root none.
TEST(ScannerOwnerTest, FilesCarryTheRunDirectorysOwnerAndDirectoriesTheJobDirectorys) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteFile(TsDir(jobs, "a", "2024_03_01_12_00_00") + "/h0.trace.json.gz", "x");
  WriteFile(TsDir(jobs, "b", "2024_03_01_12_00_00") + "/h0.trace.json.gz", "x");
  const bool root = geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown((jobs + "/b").c_str(), 4002, 4002), 0);
    ASSERT_EQ(::chown((jobs + "/b/run").c_str(), 4003, 4003), 0);
  }
  ScanResult r = Scan(Roots(jobs));
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(
      Find(r, "/a/run/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz")->owner,
      geteuid());
  EXPECT_EQ(
      Find(r, "/b/run/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz")->owner,
      root ? 4003u : geteuid());
  ASSERT_EQ(r.dirs.size(), r.dir_owners.size());
  for (size_t i = 0; i < r.dirs.size(); ++i) {
    if (r.dirs[i] == jobs) {
      EXPECT_EQ(r.dir_owners[i], kNoOwner);
    } else if (r.dirs[i].starts_with(jobs + "/b")) {
      EXPECT_EQ(r.dir_owners[i], root ? 4002u : geteuid()) << r.dirs[i];
    } else {
      EXPECT_EQ(r.dir_owners[i], geteuid()) << r.dirs[i];
    }
  }
}

// Past --max-dirs-per-owner the rest of the owner's tree is not walked;
// <ts> dirs are walked newest first, so what is left out is the oldest.
TEST(ScannerOwnerTest, AnOwnerOverItsDirectoryCapLosesItsOldestTsDirs) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  for (const char* ts : {"2024_03_01_12_00_00", "2024_03_01_12_10_00", "2024_03_01_12_20_00"}) {
    WriteFile(TsDir(jobs, "a", ts) + "/h0.trace.json.gz", "x");
  }
  ScanOptions o = Roots(jobs);
  // The job, run, tensorboard, plugins and profile dirs, then two <ts> dirs.
  o.max_dirs_per_owner = 7;
  ScanResult r = Scan(o);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(fs::path(r.files[0].dir).filename(), "2024_03_01_12_10_00");
  EXPECT_EQ(fs::path(r.files[1].dir).filename(), "2024_03_01_12_20_00");
  EXPECT_EQ(r.owner_dirs_capped, (std::map<Owner, int64_t>{{geteuid(), 1}}));
  o.max_dirs_per_owner = 0;  // no cap
  EXPECT_EQ(Scan(o).files.size(), 3u);
}

// The stop flag ends the walk; the result says it is partial.
TEST(ScannerOwnerTest, TheStopFlagEndsTheWalk) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteFile(TsDir(jobs, "a", "2024_03_01_12_00_00") + "/h0.trace.json.gz", "x");
  std::atomic<bool> stop{true};
  ScanOptions o = Roots(jobs);
  o.stop = &stop;
  ScanResult r = Scan(o);
  EXPECT_TRUE(r.stopped);
  EXPECT_TRUE(r.files.empty());
  stop = false;
  r = Scan(o);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.files.size(), 1u);
}

// Issue 49: what looks like profiler output but lies in no layout the
// scanner reads is reported, one entry per directory, with its reason; the
// layouts it reads are not.
TEST(ScannerTest, ReportsTraceLikeFilesOfNoLayoutByReason) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  WriteFile(jobs + "/good/r/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.trace.json.gz", "x");
  WriteFile(jobs + "/kineto/r/traces/vm_1.1795652969892807939.pt.trace.json.gz", "x");
  WriteFile(jobs + "/nsys/r/capture-nsys-profile/n0.sqlite", "x");
  const std::string bare = jobs + "/jaxbare/r/tensorboard/2024_03_01_12_00_00";
  WriteFile(bare + "/h0.trace.json.gz", "x");
  WriteFile(bare + "/h0.xplane.pb", "x");
  const std::string odd = jobs + "/oddts/r/tensorboard/plugins/profile/run-2026-11-28";
  WriteFile(odd + "/h0.trace.json.gz", "x");
  const std::string renamed = jobs + "/torch/r/traces";
  WriteFile(renamed + "/rank0_trace.json", "{}");
  WriteFile(renamed + "/worker0.1234.trace.json", "{}");
  WriteFile(renamed + "/config.json", "{}");  // no trace by its name: not reported
  WriteFile(jobs + "/torch/r/train.log", "step 1");
  ScanResult r = Scan(Roots(jobs));
  EXPECT_EQ(r.files.size(), 3u);
  ASSERT_EQ(r.ignored.size(), 3u);
  EXPECT_EQ(r.ignored[0].path, bare);
  EXPECT_EQ(r.ignored[0].reason, kIgnoredTsOutsideProfile);
  EXPECT_EQ(r.ignored[0].files, 2);
  EXPECT_EQ(r.ignored[1].path, odd);
  EXPECT_EQ(r.ignored[1].reason, kIgnoredNotTimestamp);
  EXPECT_EQ(r.ignored[2].path, renamed);
  EXPECT_EQ(r.ignored[2].reason, kIgnoredTraceName);
  EXPECT_EQ(r.ignored[2].files, 2);
}

}  // namespace
}  // namespace profwatch::watch
