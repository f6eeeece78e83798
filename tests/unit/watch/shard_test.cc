#include "watch/shard.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <string>

#include "testing/test_util.h"
#include "watch/scanner.h"

namespace profwatch::watch {
namespace {

using profwatch::testing::TempDir;
using profwatch::testing::WriteFile;

// The expected values were computed independently of this code, with Python:
//   d = hashlib.md5(v.encode()).digest(); int.from_bytes(d[8:], "big") % n
// which is Prometheus' hashmod (relabel.go: md5.Sum, binary.BigEndian.Uint64
// of sum[8:], modulo the modulus).
TEST(HashModTest, MatchesPrometheusHashmodComputedWithPythonHashlib) {
  // A modulus above every value gives the 64-bit integer itself.
  EXPECT_EQ(HashMod("job-a", UINT64_MAX), 9623431921090062628ull % UINT64_MAX);
  EXPECT_EQ(HashMod("llama-70b", UINT64_MAX), 14371601577738427940ull % UINT64_MAX);
  EXPECT_EQ(HashMod("", UINT64_MAX), 16825458760271544958ull % UINT64_MAX);
  EXPECT_EQ(HashMod("job-a", 3), 1u);
  EXPECT_EQ(HashMod("llama-70b", 3), 2u);
  EXPECT_EQ(HashMod("profwatch", 3), 2u);
  EXPECT_EQ(HashMod("train_0001", 3), 1u);
  EXPECT_EQ(HashMod("job-a", 1000), 628u);
  EXPECT_EQ(HashMod("gpt-j", 1000), 136u);
  EXPECT_EQ(HashMod("job-0", 3), 1u);
  EXPECT_EQ(HashMod("job-1", 3), 0u);
  EXPECT_EQ(HashMod("job-2", 3), 2u);
  EXPECT_EQ(HashMod("job-2", 2), 1u);
  EXPECT_EQ(HashMod("job-3", 2), 0u);
  EXPECT_EQ(HashMod("anything", 1), 0u);
}

TEST(ParseShardTest, IndexOverCountOrAPodNameEndingInTheIndex) {
  EXPECT_EQ(*ParseShard(""), Shard{});
  EXPECT_FALSE(ParseShard("").value().enabled());
  EXPECT_EQ(*ParseShard("0/3"), (Shard{0, 3}));
  EXPECT_EQ(*ParseShard("2/3"), (Shard{2, 3}));
  EXPECT_EQ(*ParseShard("profwatch-2/3"), (Shard{2, 3}));
  EXPECT_EQ(*ParseShard("my-profwatch-10/12"), (Shard{10, 12}));
  for (const char* bad : {"3", "3/3", "4/3", "0/0", "-1/3", "a/3", "1/x", "profwatch/3",
                          "profwatch-/3", "1/3/", " 1/3", "1 /3"}) {
    Result<Shard> s = ParseShard(bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code, ErrorCode::kConfig) << bad;
    EXPECT_NE(s.error().context.find("--shard"), std::string::npos) << bad;
  }
}

TEST(ShardTest, OwnsEveryJobWhenNotShardedAndEachJobOnExactlyOneShard) {
  EXPECT_TRUE(Shard{}.Owns("job-2"));
  for (const char* job : {"job-0", "job-1", "job-2", "llama-70b"}) {
    int owners = 0;
    for (uint64_t i = 0; i < 3; ++i) owners += Shard{i, 3}.Owns(job) ? 1 : 0;
    EXPECT_EQ(owners, 1) << job;
  }
  EXPECT_TRUE((Shard{1, 3}.Owns("job-0")));
  EXPECT_TRUE((Shard{0, 3}.Owns("job-1")));
  EXPECT_TRUE((Shard{2, 3}.Owns("job-2")));
}

// The scanner lists the job directories but never enters another shard's:
// an unreadable job dir of another shard is not even a permission error.
TEST(ShardScanTest, ReportsOnlyOwnJobsAndNeverEntersOthers) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  for (const char* job : {"job-0", "job-1", "job-2"}) {
    WriteFile(
        jobs + "/" + job + "/run/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.xplane.pb",
        "x");
  }
  ASSERT_EQ(chmod((jobs + "/job-1").c_str(), 0), 0);  // shard 0's job
  ScanOptions o;
  o.roots = {jobs};
  o.shard = Shard{2, 3};
  ScanResult r = Scan(o);
  chmod((jobs + "/job-1").c_str(), 0755);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].labels.training_job, "job-2");
  EXPECT_EQ(r.permission_errors, 0);
  EXPECT_EQ(r.other_shard_jobs, 2);
  for (const std::string& d : r.dirs) {
    EXPECT_EQ(d.find("job-0"), std::string::npos) << d;
    EXPECT_EQ(d.find("job-1"), std::string::npos) << d;
  }
}

// The shard owning the root's own name ("jobs" hashes to 0 of 3) also reads
// the root's own run (its tensorboard/ and traces/ directories: labelled
// "jobs", run "-"), but every other child of the root is a job of its own
// name: run-a (shard 1) is not entered, however run-like its name.
TEST(ShardScanTest, ShardOwningTheRootNameReadsTheRootsOwnRunOnly) {
  TempDir tmp;
  const std::string jobs = tmp.Sub("jobs");
  for (const char* job : {"job-0", "job-1", "job-2"}) {
    WriteFile(
        jobs + "/" + job + "/run/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.xplane.pb",
        "x");
  }
  WriteFile(jobs + "/run-a/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.xplane.pb", "x");
  WriteFile(jobs + "/tensorboard/plugins/profile/2024_03_01_12_00_00/h0.xplane.pb", "x");
  WriteFile(jobs + "/traces/w0.11.1709294400000.pt.trace.json.gz", "x");
  ScanOptions o;
  o.roots = {jobs};
  o.shard = Shard{0, 3};
  ScanResult r = Scan(o);
  std::vector<std::string> got;
  for (const FileObservation& f : r.files) {
    got.push_back(f.labels.training_job + "/" + f.labels.run);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"job-1/run", "jobs/-", "jobs/-"}));
  // job-0, job-2 and run-a (shards 1, 2 and 1): not entered.
  for (const std::string& d : r.dirs) {
    EXPECT_EQ(d.find("job-0"), std::string::npos) << d;
    EXPECT_EQ(d.find("job-2"), std::string::npos) << d;
    EXPECT_EQ(d.find("run-a"), std::string::npos) << d;
  }
  EXPECT_EQ(r.other_shard_jobs, 3);
  // Shard 1 owns run-a, not "jobs": the root's own run is not its.
  o.shard = Shard{1, 3};
  got.clear();
  for (const FileObservation& f : Scan(o).files) {
    got.push_back(f.labels.training_job + "/" + f.labels.run);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"job-0/run", "run-a/-"}));
}

// A root bound to one job (--watch JOB=DIR): its files carry JOB as
// training_job, and nothing below it is entered unless JOB is this shard's.
TEST(ShardScanTest, ARootOfOneJobIsOwnedByItsBoundName) {
  TempDir tmp;
  const std::string job = tmp.Sub("job-2");
  WriteFile(job + "/run/plugins/profile/2024_03_01_12_00_00/h0.xplane.pb", "x");
  ScanOptions o;
  o.roots = {job};
  o.root_jobs[job] = "job-2";
  o.shard = Shard{1, 3};
  ScanResult other = Scan(o);
  EXPECT_TRUE(other.files.empty());
  EXPECT_TRUE(other.dirs.empty());
  EXPECT_EQ(other.other_shard_jobs, 1);
  o.shard = Shard{2, 3};
  ScanResult r = Scan(o);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].labels.training_job, "job-2");
  EXPECT_EQ(r.files[0].labels.run, "run");
}

}  // namespace
}  // namespace profwatch::watch
