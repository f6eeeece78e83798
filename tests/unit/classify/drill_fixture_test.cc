// The drill rule set and DrillIsKernelName against profile_drill.py's own
// outputs (../shared/fixtures/drill/expected_outputs.txt; skipped when
// absent): every per-family row of every run must print the same "%8.3f".
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "classify/classifier.h"
#include "parse/trace_parser.h"
#include "read/byte_source.h"
#include "testing/test_util.h"

namespace profwatch::classify {
namespace {

// Mirrors profile_drill.py's accumulation: per kernel name (first-seen order)
// time_ms += dur / 1000.0; the GPU set is (file argument, pid).
struct DrillSink : parse::EventSink {
  std::string file;
  std::vector<std::string>* order = nullptr;
  std::unordered_map<std::string, double>* time_ms = nullptr;
  std::set<std::string>* gpus = nullptr;
  void OnEvent(const parse::TraceEvent& e) override {
    if (e.ph != 'X' || !e.has_name || e.name.empty() || !DrillIsKernelName(e.name)) return;
    std::string name(e.name);
    auto [it, inserted] = time_ms->emplace(name, 0.0);
    if (inserted) order->push_back(name);
    it->second += e.dur_us / 1000.0;
    std::string pid = std::to_string(static_cast<int>(e.pid.kind)) + ":" +
                      std::to_string(e.pid.num) + ":" + std::string(e.pid.str);
    gpus->insert(file + "\n" + pid);
  }
};

struct DrillRun {
  std::vector<std::string> files;
  int steps = 3;
  std::map<std::string, std::string> rows;  // family -> "%8.3f" text
};

std::vector<DrillRun> ParseExpected(const std::string& text) {
  std::vector<DrillRun> runs;
  std::istringstream in(text);
  std::string line;
  bool in_families = false;
  while (std::getline(in, line)) {
    if (line.starts_with("$ python3 profile_drill.py")) {
      runs.emplace_back();
      std::istringstream args(line.substr(26));
      std::string a;
      while (args >> a) {
        if (a == "--profile-steps") {
          args >> runs.back().steps;
        } else if (a == "--family-top-n") {
          args >> a;
        } else {
          runs.back().files.push_back(a);
        }
      }
      in_families = false;
    } else if (line.starts_with("--- Per-family aggregates")) {
      in_families = true;
    } else if (in_families && line.size() > 34 && line.ends_with(" s/gpu/step")) {
      std::string family = line.substr(2, 32);
      family.erase(family.find_last_not_of(' ') + 1);
      runs.back().rows[family] = line.substr(35, 8);
    } else if (line.empty()) {
      if (in_families && !runs.back().rows.empty()) in_families = false;
    }
  }
  return runs;
}

TEST(DrillFixtureTest, FamilyRowsMatchProfileDrillOutputs) {
  PROFWATCH_REQUIRE_SHARED_FIXTURE(expected_path, "drill/expected_outputs.txt");
  const std::string dir = expected_path.substr(0, expected_path.rfind('/') + 1);
  auto c = *Classifier::Create(*BuiltinRuleSet("drill"));
  int checked_runs = 0;
  for (const DrillRun& run : ParseExpected(testing::ReadFile(expected_path))) {
    if (run.rows.empty()) continue;  // runs that exit 1 print no families
    std::vector<std::string> order;
    std::unordered_map<std::string, double> time_ms;
    std::set<std::string> gpus;
    for (const std::string& f : run.files) {
      auto source = read::OpenTraceSource(dir + f);
      ASSERT_TRUE(source.has_value()) << f;
      DrillSink sink;
      sink.file = f;
      sink.order = &order;
      sink.time_ms = &time_ms;
      sink.gpus = &gpus;
      auto parser = parse::MakeJsonTraceParser();
      (void)parser->Parse(**source, sink);
    }
    const double divisor = static_cast<double>(gpus.size()) * run.steps;
    std::vector<double> family_ms(c->FamilyNames().size(), 0.0);
    for (const std::string& n : order) family_ms[c->Classify(n)] += time_ms[n];
    ASSERT_EQ(run.rows.size(), c->FamilyNames().size());
    for (FamilyId id = 0; id < c->FamilyNames().size(); ++id) {
      const std::string& fam = c->FamilyNames()[id];
      char buf[32];
      std::snprintf(buf, sizeof buf, "%8.3f", family_ms[id] / divisor / 1000);
      ASSERT_TRUE(run.rows.contains(fam)) << fam;
      EXPECT_EQ(buf, run.rows.at(fam)) << fam << " in run with " << run.files[0];
    }
    ++checked_runs;
  }
  EXPECT_EQ(checked_runs, 6);
}

}  // namespace
}  // namespace profwatch::classify
