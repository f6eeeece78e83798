// profwatch-tracegen output: decompressed with the read/ stage's gzip source,
// validated with simdjson, and compared with the generator's manifest using an
// independent exact decimal -> picosecond conversion.
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "read/byte_source.h"
#include "read_test_util.h"
#include "testing/test_util.h"

namespace profwatch::read {
namespace {

namespace fs = std::filesystem;
using ::profwatch::testing::BinaryPath;
using ::profwatch::testing::RunCommand;
using ::profwatch::testing::TempDir;

std::string Tracegen() { return BinaryPath("profwatch-tracegen"); }

::profwatch::testing::CommandResult Gen(const std::string& args) {
  return RunCommand("'" + Tracegen() + "' " + args);
}

std::string Inflated(const std::string& path) {
  auto src = OpenTraceSource(path);
  EXPECT_TRUE(src) << path;
  if (!src) return "";
  auto data = testutil::ReadAll(**src, 1 << 20);
  EXPECT_TRUE(data) << data.error().ToString();
  return data ? *data : "";
}

// Exact "microseconds text" -> picoseconds, round-half-even, via digit
// strings (deliberately not the generator's integer arithmetic).
int64_t MicrosTextToPs(std::string_view t) {
  std::string digits;
  int point = -1, exp = 0;
  size_t i = 0;
  for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
    if (t[i] == '.') {
      point = static_cast<int>(digits.size());
    } else {
      digits += t[i];
    }
  }
  if (i < t.size()) exp = std::stoi(std::string(t.substr(i + 1)));
  if (point < 0) point = static_cast<int>(digits.size());
  int int_digits = point + exp + 6;  // digits before the picosecond point
  while (int_digits > static_cast<int>(digits.size())) digits += '0';
  std::string int_part, frac_part;
  if (int_digits <= 0) {
    frac_part = std::string(-int_digits, '0') + digits;
  } else {
    int_part = digits.substr(0, int_digits);
    frac_part = digits.substr(int_digits);
  }
  int64_t v = int_part.empty() ? 0 : std::stoll(int_part);
  if (!frac_part.empty()) {
    bool above = frac_part[0] > '5' ||
                 (frac_part[0] == '5' && frac_part.find_first_not_of('0', 1) != std::string::npos);
    bool half = frac_part[0] == '5' && frac_part.find_first_not_of('0', 1) == std::string::npos;
    if (above || (half && (v & 1))) ++v;
  }
  return v;
}

TEST(MicrosTextToPsTest, ConvertsTheWriterForms) {
  EXPECT_EQ(MicrosTextToPs("1342.422"), 1342422000);
  EXPECT_EQ(MicrosTextToPs("22.140000000000001"), 22140000);
  EXPECT_EQ(MicrosTextToPs("1e-06"), 1);
  EXPECT_EQ(MicrosTextToPs("9.9999999999999995e-07"), 1);
  EXPECT_EQ(MicrosTextToPs("1.5e-06"), 2);  // half to even
  EXPECT_EQ(MicrosTextToPs("2.5e-06"), 2);
  EXPECT_EQ(MicrosTextToPs("3"), 3000000);
}

struct XEvent {
  int64_t pid;
  std::string name;
  int64_t ts_ps, dur_ps;
};

struct ParsedTrace {
  std::vector<XEvent> x;
  size_t metadata = 0;
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
};

// Validates the exact documented shape and returns the events.
ParsedTrace ParseAndCheckShape(const std::string& text) {
  ParsedTrace out;
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true},"
                       "\"traceEvents\":[",
                       0),
            0u);
  EXPECT_TRUE(text.size() >= 4 && text.substr(text.size() - 5) == ",{}]}");
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(padded).get(doc), simdjson::SUCCESS);
  simdjson::dom::object top;
  EXPECT_EQ(doc.get(top), simdjson::SUCCESS);
  EXPECT_EQ(top.size(), 3u);
  std::string_view unit;
  EXPECT_EQ(top["displayTimeUnit"].get(unit), simdjson::SUCCESS);
  EXPECT_EQ(unit, "ns");
  bool highres = false;
  EXPECT_EQ(top["metadata"]["highres-ticks"].get(highres), simdjson::SUCCESS);
  EXPECT_TRUE(highres);
  simdjson::dom::array events;
  EXPECT_EQ(top["traceEvents"].get(events), simdjson::SUCCESS);

  // Exact number texts of ts/dur, in document order (only X events have them).
  std::vector<std::string_view> ts_texts, dur_texts;
  for (auto [key, vec] : {std::pair{std::string_view("\"ts\":"), &ts_texts},
                          std::pair{std::string_view("\"dur\":"), &dur_texts}}) {
    for (size_t pos = text.find(key); pos != std::string::npos; pos = text.find(key, pos + 1)) {
      size_t start = pos + key.size(), end = text.find_first_of(",}", start);
      vec->push_back(std::string_view(text).substr(start, end - start));
    }
  }

  size_t n = events.size(), index = 0;
  bool seen_x = false;
  for (simdjson::dom::element e : events) {
    ++index;
    simdjson::dom::object obj;
    EXPECT_EQ(e.get(obj), simdjson::SUCCESS);
    if (index == n) {
      EXPECT_EQ(obj.size(), 0u) << "the array must end with {}";
      break;
    }
    std::string_view ph, name;
    EXPECT_EQ(obj["ph"].get(ph), simdjson::SUCCESS);
    EXPECT_EQ(obj["name"].get(name), simdjson::SUCCESS);
    int64_t pid = -1;
    EXPECT_EQ(obj["pid"].get(pid), simdjson::SUCCESS);
    EXPECT_TRUE(obj["cat"].error() == simdjson::NO_SUCH_FIELD) << "JAX writes no cat";
    if (ph == "M") {
      EXPECT_FALSE(seen_x) << "metadata must come first";
      ++out.metadata;
      std::string_view arg;
      if (name == "process_name") {
        EXPECT_EQ(obj["args"]["name"].get(arg), simdjson::SUCCESS);
        EXPECT_FALSE(out.process_names.count(pid));
        if (!out.process_names.empty()) {
          EXPECT_GT(pid, out.process_names.rbegin()->first);
        }
        out.process_names[pid] = std::string(arg);
      } else if (name == "thread_name") {
        int64_t tid = -1;
        EXPECT_EQ(obj["tid"].get(tid), simdjson::SUCCESS);
        EXPECT_EQ(obj["args"]["name"].get(arg), simdjson::SUCCESS);
        out.thread_names[{pid, tid}] = std::string(arg);
      }
      continue;
    }
    EXPECT_EQ(ph, "X");
    seen_x = true;
    simdjson::dom::object args;
    EXPECT_EQ(obj["args"].get(args), simdjson::SUCCESS);
    for (auto field : args) {
      EXPECT_TRUE(field.value.is_string()) << "args." << field.key << " must be a string";
    }
    std::string_view corr;
    EXPECT_EQ(args["correlation_id"].get(corr), simdjson::SUCCESS);
    if (pid != 701) {
      std::string_view module, op;
      EXPECT_EQ(args["hlo_module"].get(module), simdjson::SUCCESS);
      EXPECT_EQ(args["hlo_op"].get(op), simdjson::SUCCESS);
    }
    double ts = 0, dur = 0;
    EXPECT_EQ(obj["ts"].get(ts), simdjson::SUCCESS);
    EXPECT_EQ(obj["dur"].get(dur), simdjson::SUCCESS);
    size_t k = out.x.size();
    if (k >= ts_texts.size() || k >= dur_texts.size()) {
      ADD_FAILURE() << "number scan out of step";
      break;
    }
    EXPECT_EQ(std::strtod(std::string(ts_texts[k]).c_str(), nullptr), ts);
    out.x.push_back(
        XEvent{pid, std::string(name), MicrosTextToPs(ts_texts[k]), MicrosTextToPs(dur_texts[k])});
  }
  EXPECT_EQ(out.x.size(), ts_texts.size());
  return out;
}

nlohmann::json LoadJson(const std::string& path) {
  return nlohmann::json::parse(::profwatch::testing::ReadFile(path));
}

// Recomputes per-device and per-name statistics and compares with the manifest.
void ExpectManifestMatches(const ParsedTrace& t, const nlohmann::json& file) {
  EXPECT_EQ(file["events"].get<uint64_t>(), t.x.size());
  EXPECT_EQ(file["metadata_events"].get<uint64_t>(), t.metadata);
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> by_pid;
  std::map<std::string, std::pair<uint64_t, int64_t>> names;
  uint64_t host = 0;
  for (const XEvent& e : t.x) {
    if (e.pid == 701) {
      ++host;
      continue;
    }
    by_pid[e.pid].push_back({e.ts_ps, e.ts_ps + e.dur_ps});
    names[e.name].first += 1;
    names[e.name].second += e.dur_ps;
  }
  EXPECT_EQ(file["host_events"].get<uint64_t>(), host);
  ASSERT_EQ(file["devices"].size(), t.process_names.size() - 1);  // + host
  for (const auto& d : file["devices"]) {
    int64_t pid = d["pid"].get<int64_t>();
    EXPECT_EQ(t.process_names.at(pid), d["device"].get<std::string>());
    auto iv = by_pid[pid];
    std::sort(iv.begin(), iv.end());
    int64_t sum = 0, busy = 0, cs = 0, ce = -1, last = 0;
    for (auto [s, e] : iv) {
      sum += e - s;
      last = std::max(last, e);
      if (ce < 0) {
        cs = s, ce = e;
      } else if (s > ce) {
        busy += ce - cs, cs = s, ce = e;
      } else {
        ce = std::max(ce, e);
      }
    }
    if (ce >= 0) busy += ce - cs;
    EXPECT_EQ(d["kernel_launches"].get<uint64_t>(), iv.size()) << pid;
    EXPECT_EQ(d["kernel_ps"].get<int64_t>(), sum) << pid;
    EXPECT_EQ(d["busy_ps"].get<int64_t>(), busy) << pid;
    if (!iv.empty()) {
      EXPECT_EQ(d["span_ps"].get<int64_t>(), last - iv.front().first) << pid;
    }
    int streams = 0;
    for (const auto& [key, name] : t.thread_names) {
      if (key.first == pid) {
        EXPECT_EQ(name.rfind("Stream #", 0), 0u) << name;
        ++streams;
      }
    }
    EXPECT_EQ(d["streams"].get<int>(), streams);
  }
  ASSERT_EQ(file["kernels"].size(), names.size());
  for (const auto& [name, v] : names) {
    EXPECT_EQ(file["kernels"][name]["launches"].get<uint64_t>(), v.first) << name;
    EXPECT_EQ(file["kernels"][name]["ps"].get<int64_t>(), v.second) << name;
  }
}

class TracegenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(Tracegen())) GTEST_SKIP() << "profwatch-tracegen not built";
  }
  TempDir dir_;
};

TEST_F(TracegenTest, AmdFileHasTheXlaShapeAndMatchesItsManifest) {
  auto r = Gen("file --out " + dir_.Sub("h.trace.json.gz") +
               " --vendor amd --gpus 4 --streams 3 --steps 3 --kernels-per-step 400 --seed 5"
               " --manifest " +
               dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string text = Inflated(dir_.Sub("h.trace.json.gz"));
  ParsedTrace t = ParseAndCheckShape(text);
  EXPECT_EQ(t.process_names.at(1), "/device:GPU:0");
  EXPECT_EQ(t.process_names.at(4), "/device:GPU:3");
  EXPECT_EQ(t.process_names.at(701), "/host:CPU");
  EXPECT_EQ(t.process_names.size(), 5u);
  EXPECT_EQ(t.thread_names.at({1, 16}), "Stream #16(Kernel)");
  EXPECT_NE(text.find("\"dur\":1e-06"), std::string::npos) << "zero-length events";
  EXPECT_NE(text.find("ncclDevKernel_Generic_4("), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"Cijk_Alik_Bljk_"), std::string::npos);
  // Float noise as the XLA writer prints it (17 significant digits).
  EXPECT_NE(text.find("99999"), std::string::npos);
  nlohmann::json m = LoadJson(dir_.Sub("m.json"));
  ASSERT_EQ(m["files"].size(), 1u);
  ExpectManifestMatches(t, m["files"][0]);
  EXPECT_EQ(m["files"][0]["devices"][0]["kernel_launches"].get<uint64_t>(), 3u * 400u);
  // Overlapping comm stream: busy time is below the summed kernel time.
  for (const auto& d : m["files"][0]["devices"]) {
    EXPECT_LT(d["busy_ps"].get<int64_t>(), d["kernel_ps"].get<int64_t>());
    EXPECT_LE(d["busy_ps"].get<int64_t>(), d["span_ps"].get<int64_t>());
  }
}

TEST_F(TracegenTest, NvidiaFileNamesStreamsWithActivitiesAndExactEventCount) {
  auto r = Gen("file --out " + dir_.Sub("n.json") +
               " --plain --vendor nvidia --gpus 2 --streams 4 --events 12345 --manifest " +
               dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string text = ::profwatch::testing::ReadFile(dir_.Sub("n.json"));
  ParsedTrace t = ParseAndCheckShape(text);
  EXPECT_EQ(t.x.size(), 12345u);
  EXPECT_EQ(t.thread_names.at({1, 7}), "Stream #7(Compute,MemcpyH2D,MemcpyD2H)");
  EXPECT_NE(text.find("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_"), std::string::npos);
  EXPECT_NE(text.find("ncclDevKernel_AllReduce_Sum_bf16_RING_LL("), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"MemcpyD2H\""), std::string::npos);
  EXPECT_NE(text.find("\"context_id\":\"1\""), std::string::npos);
  ExpectManifestMatches(t, LoadJson(dir_.Sub("m.json"))["files"][0]);
}

TEST_F(TracegenTest, SameSeedGivesIdenticalBytesAndOtherSeedDiffers) {
  std::string common = " --gpus 2 --kernels-per-step 300 --streams 3";
  ASSERT_EQ(Gen("file --out " + dir_.Sub("a.gz") + common + " --seed 9").exit_code, 0);
  ASSERT_EQ(Gen("file --out " + dir_.Sub("b.gz") + common + " --seed 9").exit_code, 0);
  ASSERT_EQ(Gen("file --out " + dir_.Sub("c.gz") + common + " --seed 10").exit_code, 0);
  std::string a = ::profwatch::testing::ReadFile(dir_.Sub("a.gz"));
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == ::profwatch::testing::ReadFile(dir_.Sub("b.gz")));
  EXPECT_FALSE(a == ::profwatch::testing::ReadFile(dir_.Sub("c.gz")));
}

TEST_F(TracegenTest, CapKeepsTheEarliestEventsByTime) {
  std::string common = " --plain --gpus 2 --streams 3 --events 1500 --seed 3";
  ASSERT_EQ(Gen("file --out " + dir_.Sub("full.json") + common).exit_code, 0);
  auto r = Gen("file --out " + dir_.Sub("cap.json") + common + " --cap-events 1000 --manifest " +
               dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace full = ParseAndCheckShape(::profwatch::testing::ReadFile(dir_.Sub("full.json")));
  ParsedTrace cap = ParseAndCheckShape(::profwatch::testing::ReadFile(dir_.Sub("cap.json")));
  ASSERT_EQ(full.x.size(), 1500u);
  ASSERT_EQ(cap.x.size(), 1000u);
  using Key = std::tuple<int64_t, int64_t, int64_t, std::string>;
  std::multiset<Key> all, kept;
  for (const auto& e : full.x) all.insert({e.ts_ps, e.pid, e.dur_ps, e.name});
  int64_t max_kept = 0;
  for (const auto& e : cap.x) {
    kept.insert({e.ts_ps, e.pid, e.dur_ps, e.name});
    max_kept = std::max(max_kept, e.ts_ps);
  }
  EXPECT_TRUE(std::includes(all.begin(), all.end(), kept.begin(), kept.end()));
  size_t earlier_than_max = 0;
  for (const auto& e : full.x) earlier_than_max += e.ts_ps < max_kept ? 1 : 0;
  EXPECT_LE(earlier_than_max, 1000u) << "a dropped event started before a kept one";
  nlohmann::json m = LoadJson(dir_.Sub("m.json"));
  EXPECT_TRUE(m["files"][0]["capped"].get<bool>());
  EXPECT_EQ(m["files"][0]["events_before_cap"].get<uint64_t>(), 1500u);
  ExpectManifestMatches(cap, m["files"][0]);
}

TEST_F(TracegenTest, CapFlagStopsAtExactlyOneMillionEvents) {
  auto r = Gen("file --out " + dir_.Sub("big.json.gz") +
               " --gzip-level 1 --gpus 8 --events 1000200 --cap --manifest " + dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string text = Inflated(dir_.Sub("big.json.gz"));
  size_t x = 0;
  for (size_t pos = text.find("{\"ph\":\"X\""); pos != std::string::npos;
       pos = text.find("{\"ph\":\"X\"", pos + 1)) {
    ++x;
  }
  EXPECT_EQ(x, 1000000u);
  EXPECT_EQ(text.substr(text.size() - 5), ",{}]}");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(simdjson::padded_string(text)).get(doc), simdjson::SUCCESS);
  nlohmann::json m = LoadJson(dir_.Sub("m.json"));
  EXPECT_EQ(m["files"][0]["events"].get<uint64_t>(), 1000000u);
  EXPECT_TRUE(m["files"][0]["capped"].get<bool>());
}

TEST_F(TracegenTest, OneNodeJobLayoutSplitDirsStaleWindowAndLog) {
  std::string root = dir_.Sub("jobs");
  auto r = Gen("job --out " + root +
               " --job llama --run r1 --mode 1node --hosts 3 --gpus-per-host 2 --split-dirs 2"
               " --start 2025_03_01_12_00_00 --windows 2 --window-interval 900 --stale --log"
               " --kernels-per-step 50 --step-seconds 1.5 --manifest " +
               dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path prof = fs::path(root) / "llama" / "r1" / "tensorboard" / "plugins" / "profile";
  std::set<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(prof)) {
    if (e.is_regular_file()) files.insert(fs::relative(e.path(), prof).string());
  }
  std::set<std::string> expected = {
      // stale window, 600 s before the first
      "2025_03_01_11_50_00/node0.trace.json.gz", "2025_03_01_11_50_00/node1.trace.json.gz",
      "2025_03_01_11_50_02/node2.trace.json.gz",
      // window 0, split over two dirs 2 s apart
      "2025_03_01_12_00_00/node0.trace.json.gz", "2025_03_01_12_00_00/node1.trace.json.gz",
      "2025_03_01_12_00_02/node2.trace.json.gz",
      // window 1, 900 s later
      "2025_03_01_12_15_00/node0.trace.json.gz", "2025_03_01_12_15_00/node1.trace.json.gz",
      "2025_03_01_12_15_02/node2.trace.json.gz"};
  EXPECT_EQ(files, expected);
  nlohmann::json m = LoadJson(dir_.Sub("m.json"));
  ASSERT_EQ(m["windows"].size(), 3u);
  EXPECT_TRUE(m["windows"][0]["stale"].get<bool>());
  EXPECT_EQ(m["windows"][1]["files"].get<int>(), 3);
  EXPECT_EQ(m["windows"][1]["gpus"].get<int>(), 6);
  EXPECT_EQ(m["windows"][1]["ts_dirs"].size(), 2u);
  EXPECT_EQ(m["windows"][1]["profiled_steps"], nlohmann::json::parse("[5,6,7]"));
  ASSERT_EQ(m["files"].size(), 9u);
  // One file checked end to end against the manifest.
  const auto& f = m["files"][4];
  EXPECT_EQ(f["path"].get<std::string>(),
            "llama/r1/tensorboard/plugins/profile/2025_03_01_12_00_00/node1.trace.json.gz");
  ParsedTrace t = ParseAndCheckShape(Inflated(root + "/" + f["path"].get<std::string>()));
  EXPECT_EQ(t.process_names.size(), 3u);  // 2 GPUs + host
  ExpectManifestMatches(t, f);

  std::string log = ::profwatch::testing::ReadFile(root + "/llama.log");
  EXPECT_NE(log.find("Config param profiler: xplane\n"), std::string::npos);
  EXPECT_NE(log.find("Config param profiler_steps: 3\n"), std::string::npos);
  EXPECT_NE(log.find("Config param skip_first_n_steps_for_profiler: 5\n"), std::string::npos);
  EXPECT_NE(log.find("completed step: 12, seconds: "), std::string::npos);
  // Steady steps at --step-seconds, the write-back step (8) 50% slower.
  double step12 = 0, step8 = 0;
  std::sscanf(log.c_str() + log.find("completed step: 12,"), "completed step: 12, seconds: %lf",
              &step12);
  std::sscanf(log.c_str() + log.find("completed step: 8,"), "completed step: 8, seconds: %lf",
              &step8);
  EXPECT_NEAR(step12, 1.5, 0.01);
  EXPECT_NEAR(step8, 2.25, 0.001);
  EXPECT_NE(log.find(", TFLOP/s/device: "), std::string::npos);
  EXPECT_NE(log.find(", total_weights: 1048576, loss: "), std::string::npos);
  EXPECT_NEAR(m["log"]["steady_step_seconds_mean"].get<double>(), 1.5, 0.01);
}

TEST_F(TracegenTest, OneGpuJobWritesOneSingleDeviceFilePerGpu) {
  std::string root = dir_.Sub("jobs");
  auto r = Gen("job --out " + root +
               " --job j --run r --mode 1gpu --hosts 2 --gpus-per-host 3 --split-dirs 3"
               " --kernels-per-step 20 --vendor nvidia --manifest " +
               dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json m = LoadJson(dir_.Sub("m.json"));
  ASSERT_EQ(m["files"].size(), 6u);
  EXPECT_EQ(m["windows"][0]["gpus"].get<int>(), 6);
  EXPECT_EQ(m["windows"][0]["ts_dirs"].size(), 3u);
  std::set<std::string> names;
  for (const auto& f : m["files"]) {
    names.insert(fs::path(f["path"].get<std::string>()).filename().string());
    ASSERT_EQ(f["devices"].size(), 1u);
    EXPECT_EQ(f["devices"][0]["device"].get<std::string>(), "/device:GPU:0");
    EXPECT_TRUE(fs::exists(root + "/" + f["path"].get<std::string>()));
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"node0.proc0.trace.json.gz", "node0.proc1.trace.json.gz",
                                   "node0.proc2.trace.json.gz", "node1.proc0.trace.json.gz",
                                   "node1.proc1.trace.json.gz", "node1.proc2.trace.json.gz"}));
  EXPECT_FALSE(fs::exists(root + "/j.log"));
}

TEST_F(TracegenTest, BadFlagsFailWithAMessage) {
  auto unknown = Gen("file --out " + dir_.Sub("x") + " --bogus 1");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown flag --bogus"), std::string::npos);
  auto vendor = Gen("file --out " + dir_.Sub("x") + " --vendor intel");
  EXPECT_EQ(vendor.exit_code, 1);
  EXPECT_NE(vendor.err.find("--vendor"), std::string::npos);
  auto range = Gen("file --out " + dir_.Sub("x") + " --gpus 0");
  EXPECT_EQ(range.exit_code, 1);
  auto mode = Gen("job --out " + dir_.Sub("j") + " --job a --run b --mode 2gpu");
  EXPECT_EQ(mode.exit_code, 1);
  EXPECT_EQ(Gen("nosuch").exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_.Sub("x")));
}

TEST_F(TracegenTest, BuiltDemoJobIsSmallAndComplete) {
  fs::path demo = fs::path(PROFWATCH_BINARY_DIR) / "demo" / "jobs";
  if (!fs::exists(demo / "demo-llama-8b")) GTEST_SKIP() << "demo not built (target profwatch_demo)";
  uintmax_t bytes = 0;
  size_t node_files = 0, gpu_files = 0;
  for (const auto& e : fs::recursive_directory_iterator(demo)) {
    if (!e.is_regular_file()) continue;
    bytes += e.file_size();
    std::string name = e.path().filename().string();
    if (name.find(".proc") != std::string::npos) {
      ++gpu_files;
    } else if (name.ends_with(".trace.json.gz")) {
      ++node_files;
    }
  }
  EXPECT_LT(bytes, 2u << 20);
  EXPECT_EQ(node_files, 2u);
  EXPECT_EQ(gpu_files, 4u);
  EXPECT_TRUE(fs::exists(demo / "demo-llama-8b.log"));
}

}  // namespace
}  // namespace profwatch::read
