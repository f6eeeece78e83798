// Integration tests of `profwatch serve` (issue 60): a run is labelled by
// where it really is and whose it is. Directory links cannot relabel a run,
// a log planted by another user cannot stand for a run's own, and the same
// job in two roots is exported twice under label sets that differ. The
// planted-log tests chown files to distinct uids, so they need root (CI runs
// as root); they skip with a message otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "testing/serve_harness.h"
#include "testing/test_util.h"

namespace profwatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Labels;
using testing::ProfileDir;
using testing::Sample;
using testing::Serve;
using testing::TempDir;

constexpr char kTs[] = "2024_03_01_12_00_00";

std::vector<std::string> FastFlags(std::vector<std::string> roots,
                                   std::initializer_list<std::string> more = {}) {
  std::vector<std::string> flags;
  for (const std::string& root : roots) {
    flags.push_back("--watch");
    flags.push_back(root);
  }
  for (const char* f : {"--settle", "500ms", "--poll-interval", "300ms"}) {
    flags.push_back(f);
  }
  flags.insert(flags.end(), more);
  return flags;
}

// One window of `gpus` GPUs in `jobs`/`job`/`run`.
void RunWithWindow(const std::string& jobs, const std::string& job, const std::string& run,
                   int gpus) {
  testing::WriteSmallJaxTrace(ProfileDir(jobs, job, run) + "/" + kTs + "/h0.trace.json.gz", gpus);
}

std::function<bool(const std::string&)> HasGpus(const std::string& job, const std::string& run,
                                                double gpus) {
  return [=](const std::string& m) {
    auto v = Sample(m, "profwatch_window_gpus", {{"training_job", job}, {"run", run}});
    return v && *v == gpus;
  };
}

// The series lines of the exposition `m` that carry training_job="<job>".
std::vector<std::string> SeriesOfJob(const std::string& m, const std::string& job) {
  std::vector<std::string> out;
  std::istringstream lines(m);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("#") && line.find("training_job=\"" + job + "\"") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// --- links ------------------------------------------------------------------

// `ln -s victim <root>/0alias` and a link inside the attacker's own job
// (`evil/r1 -> ../victim2/r1`): before, the victim's run was exported only
// as training_job="0alias" and victim2's as "evil" (the alias sorts first,
// the real directory was then skipped as already walked). Now a directory
// link into a root is not followed: each run is exported under its real
// name, nothing under 0alias or evil, and the two links are refused
// (counted by the link's owner, logged once). The root itself is given as a
// symlink, resolved once as before.
TEST(ServeIdentityTest, DirectoryLinksDoNotRelabelRuns) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  RunWithWindow(jobs, "victim", "r1", 1);
  RunWithWindow(jobs, "victim2", "r1", 2);
  fs::create_directories(jobs + "/evil");
  fs::create_directory_symlink("victim", jobs + "/0alias");
  fs::create_directory_symlink("../victim2/r1", jobs + "/evil/r1");
  const std::string root_link = tmp.Sub("jobs-link");
  fs::create_directory_symlink(jobs, root_link);

  Serve serve(tmp, FastFlags({root_link}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return HasGpus("victim", "r1", 1)(t) && HasGpus("victim2", "r1", 2)(t);
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  m = serve.MetricsAfterScans(2);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(SeriesOfJob(*m, "0alias"), std::vector<std::string>{}) << *m;
  EXPECT_EQ(SeriesOfJob(*m, "evil"), std::vector<std::string>{}) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_scan_refused_total",
                   {{"reason", "symlink"}, {"owner", std::to_string(geteuid())}}),
            2)
      << *m;
  const std::string log = serve.Log();
  EXPECT_EQ(Count(log, "directory links into a watch root not followed"), 1u) << log;
  EXPECT_NE(log.find("0alias"), std::string::npos) << log;
  EXPECT_NE(log.find("evil/r1"), std::string::npos) << log;
  EXPECT_EQ(serve.Stop(15s), 0) << serve.Log();
}

// --- training logs (root only) ----------------------------------------------

#define PROFWATCH_REQUIRE_ROOT()                                                           \
  do {                                                                                     \
    if (geteuid() != 0) GTEST_SKIP() << "needs root to chown runs and logs to other uids"; \
  } while (0)

constexpr uid_t kVictim = 4011;
constexpr uid_t kOther = 4012;

void ChownTree(const std::string& path, uid_t uid) {
  ASSERT_EQ(::lchown(path.c_str(), uid, uid), 0) << path;
  if (!fs::is_directory(fs::symlink_status(path))) return;
  for (const auto& e : fs::recursive_directory_iterator(path)) {
    ASSERT_EQ(::lchown(e.path().c_str(), uid, uid), 0) << e.path();
  }
}

// A MaxText log of 20 steps of `seconds` each.
void WriteStepLog(const std::string& path, const std::string& seconds, const std::string& loss) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  for (int s = 1; s <= 20; ++s) {
    out << "I1122 03:00:00 train.py:500] completed step: " << s << ", seconds: " << seconds
        << ", TFLOP/s/device: 150.000, Tokens/s/device: 3000.000, total_weights: 65536, loss: "
        << loss << "\n";
  }
}

// A shared scratch root (world-writable, sticky) holding the victim's run
// with its own log (1.0 s per step), owned by kVictim, and a root-level
// `<root>/victim.r1.log` (9.99 s) owned by `planter`. The first default
// pattern matches the root-level file.
std::string SharedRootWithPlantedLog(const TempDir& tmp, uid_t planter) {
  const std::string jobs = tmp.Sub("jobs");
  RunWithWindow(jobs, "victim", "r1", 1);
  WriteStepLog(jobs + "/victim/r1/log.txt", "1.000", "4.000");
  ChownTree(jobs + "/victim", kVictim);
  EXPECT_EQ(::chmod(jobs.c_str(), 01777), 0);
  const std::string planted = jobs + "/victim.r1.log";
  WriteStepLog(planted, "9.990", "99.000");
  ChownTree(planted, planter);
  return jobs;
}

const Labels kVictimRun = {{"training_job", "victim"}, {"run", "r1"}};

// Another uid plants `<root>/victim.r1.log`: before, the first default
// pattern preferred it and the victim's step time read 9.99 s (loss 99).
// Now it is refused (not in the run's directory, not the run owner's):
// the victim's own log.txt is read (1.0 s, loss 4), the refusal counted
// once for the victim's run and logged once with its reason.
TEST(ServeIdentityTest, ALogPlantedAtTheRootByAnotherUserIsNotRead) {
  PROFWATCH_REQUIRE_ROOT();
  TempDir tmp;
  const std::string jobs = SharedRootWithPlantedLog(tmp, kOther);
  Serve serve(tmp, FastFlags({jobs}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return Sample(t, "profwatch_training_steady_step_seconds", kVictimRun).has_value() &&
           HasGpus("victim", "r1", 1)(t);
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  m = serve.MetricsAfterScans(3);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_training_steady_step_seconds", kVictimRun), 1.0) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_training_loss", kVictimRun), 4.0) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_training_logs_refused_total",
                   {{"owner", std::to_string(kVictim)}, {"reason", "not_the_runs"}}),
            1)
      << *m;
  const std::string log = serve.Log();
  EXPECT_EQ(Count(log, "training log refused"), 1u) << log;
  EXPECT_NE(log.find("owned by uid " + std::to_string(kOther)), std::string::npos) << log;
  EXPECT_NE(log.find("path=" + jobs + "/victim/r1/log.txt"), std::string::npos) << log;
  EXPECT_EQ(serve.Stop(15s), 0) << serve.Log();
}

// The same root-level file written by the run's owner is the run's log
// (the pattern still works for its users): 9.99 s is read from it.
TEST(ServeIdentityTest, ALogAtTheRootWrittenByTheRunsOwnerIsRead) {
  PROFWATCH_REQUIRE_ROOT();
  TempDir tmp;
  const std::string jobs = SharedRootWithPlantedLog(tmp, kVictim);
  Serve serve(tmp, FastFlags({jobs}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return Sample(t, "profwatch_training_steady_step_seconds", kVictimRun) == 9.99;
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(Sample(*m, "profwatch_training_loss", kVictimRun), 99.0) << *m;
  EXPECT_FALSE(Sample(*m, "profwatch_training_logs_refused_total", {{"reason", "not_the_runs"}}))
      << *m;
  EXPECT_NE(serve.Log().find("path=" + jobs + "/victim.r1.log"), std::string::npos) << serve.Log();
  EXPECT_EQ(serve.Stop(15s), 0) << serve.Log();
}

// --- the same job in two roots ----------------------------------------------

// `--watch a-scratch --watch b-home`, each holding victim/r1: before, the
// lexically first root's run was exported and the other not analysed. Now
// both are, each job label qualified by its root's name (a job under one
// root keeps its plain name), profwatch_job_name_clashes says 1, and the
// clash is logged once.
TEST(ServeIdentityTest, TheSameJobInTwoRootsIsExportedTwiceApart) {
  TempDir tmp;
  const std::string a = tmp.Sub("a-scratch");
  const std::string b = tmp.Sub("b-home");
  RunWithWindow(a, "victim", "r1", 1);
  RunWithWindow(b, "victim", "r1", 2);
  RunWithWindow(b, "alone", "r1", 3);
  Serve serve(tmp, FastFlags({a, b}));
  ASSERT_GT(serve.port(), 0) << serve.Log();
  auto m = serve.WaitFor([](const std::string& t) {
    return HasGpus("a-scratch:victim", "r1", 1)(t) && HasGpus("b-home:victim", "r1", 2)(t) &&
           HasGpus("alone", "r1", 3)(t);
  });
  ASSERT_TRUE(m.has_value()) << serve.Log();
  m = serve.MetricsAfterScans(2);
  ASSERT_TRUE(m.has_value()) << serve.Log();
  EXPECT_EQ(SeriesOfJob(*m, "victim"), std::vector<std::string>{}) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_job_name_clashes"), 1) << *m;
  EXPECT_EQ(Sample(*m, "profwatch_run_label_clashes_total"), 0) << *m;
  const std::string log = serve.Log();
  EXPECT_EQ(Count(log, "job name found under several watch roots"), 1u) << log;
  EXPECT_NE(log.find("training_job=a-scratch:victim,b-home:victim"), std::string::npos) << log;
  EXPECT_EQ(serve.Stop(15s), 0) << serve.Log();
}

}  // namespace
}  // namespace profwatch
