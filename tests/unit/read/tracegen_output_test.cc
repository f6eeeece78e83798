// profwatch-tracegen output: decompressed with the read/ stage's gzip source,
// validated with simdjson, and compared with the generator's manifest using an
// independent exact decimal -> picosecond conversion.
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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
  int64_t pid, tid;
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
    int64_t tid = -1;
    EXPECT_EQ(obj["tid"].get(tid), simdjson::SUCCESS);
    out.x.push_back(XEvent{pid, tid, std::string(name), MicrosTextToPs(ts_texts[k]),
                           MicrosTextToPs(dur_texts[k])});
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
  // The ~240 MB of JSON are inflated once into one buffer of the size the
  // gzip trailer gives (ISIZE: the length mod 2^32), not grown and copied.
  std::ifstream gz(dir_.Sub("big.json.gz"), std::ios::binary);
  unsigned char trailer[4] = {};
  ASSERT_TRUE(gz.seekg(-4, std::ios::end).read(reinterpret_cast<char*>(trailer), 4));
  const uint32_t isize =
      trailer[0] | trailer[1] << 8 | trailer[2] << 16 | uint32_t{trailer[3]} << 24;
  simdjson::padded_string text(isize);
  auto src = OpenTraceSource(dir_.Sub("big.json.gz"));
  ASSERT_TRUE(src);
  size_t filled = 0;
  while (filled < text.size()) {
    Result<size_t> got = (*src)->Read(text.data() + filled, text.size() - filled);
    ASSERT_TRUE(got) << got.error().ToString();
    if (*got == 0) break;
    filled += *got;
  }
  char past = 0;
  Result<size_t> end = (*src)->Read(&past, 1);
  ASSERT_TRUE(end) << end.error().ToString();
  EXPECT_EQ(*end, 0u) << "more bytes than the gzip trailer says";
  ASSERT_EQ(filled, text.size());
  const std::string_view view(text.data(), text.size());
  size_t x = 0;
  for (size_t pos = view.find("{\"ph\":\"X\""); pos != std::string_view::npos;
       pos = view.find("{\"ph\":\"X\"", pos + 1)) {
    ++x;
  }
  EXPECT_EQ(x, 1000000u);
  EXPECT_EQ(view.substr(view.size() - 5), ",{}]}");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
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

// --blocker-us and --host-stall-us: the file itself must show what the
// manifest claims, checked from the parsed events alone.

// Device events of one pid, sorted by start.
std::vector<XEvent> DeviceEvents(const ParsedTrace& t, int64_t pid) {
  std::vector<XEvent> out;
  for (const XEvent& e : t.x) {
    if (e.pid == pid) out.push_back(e);
  }
  std::sort(out.begin(), out.end(),
            [](const XEvent& a, const XEvent& b) { return a.ts_ps < b.ts_ps; });
  return out;
}

// Each device has one `name` kernel of exactly `u_ps` per step on its compute
// stream, and no other kernel of that device runs while it runs.
void ExpectBlockersRunAlone(const ParsedTrace& t, const nlohmann::json& file,
                            const std::string& name, int steps, int64_t u_ps, int64_t compute_tid) {
  for (const auto& d : file["devices"]) {
    int64_t pid = d["pid"].get<int64_t>();
    std::vector<XEvent> events = DeviceEvents(t, pid);
    std::vector<XEvent> blockers;
    for (const XEvent& e : events) {
      if (e.name == name) blockers.push_back(e);
    }
    ASSERT_EQ(blockers.size(), static_cast<size_t>(steps)) << pid;
    ASSERT_EQ(d["blockers"].size(), blockers.size()) << pid;
    for (size_t k = 0; k < blockers.size(); ++k) {
      const XEvent& b = blockers[k];
      EXPECT_EQ(b.dur_ps, u_ps) << pid;
      EXPECT_EQ(b.tid, compute_tid) << pid;
      EXPECT_EQ(d["blockers"][k]["step"].get<int>(), static_cast<int>(k));
      EXPECT_EQ(d["blockers"][k]["tid"].get<int64_t>(), compute_tid);
      EXPECT_EQ(d["blockers"][k]["ts_ps"].get<int64_t>(), b.ts_ps);
      EXPECT_EQ(d["blockers"][k]["dur_ps"].get<int64_t>(), u_ps);
      size_t before = 0, after = 0;
      for (const XEvent& e : events) {
        if (e.ts_ps == b.ts_ps && e.name == name) continue;  // b itself
        bool overlaps = e.ts_ps < b.ts_ps + b.dur_ps && e.ts_ps + e.dur_ps > b.ts_ps;
        EXPECT_FALSE(overlaps) << "pid " << pid << ": " << e.name << " at " << e.ts_ps
                               << " runs during the blocker at " << b.ts_ps;
        before += e.ts_ps + e.dur_ps <= b.ts_ps ? 1 : 0;
        after += e.ts_ps >= b.ts_ps + b.dur_ps ? 1 : 0;
      }
      EXPECT_EQ(before + after + 1, events.size());
      EXPECT_GT(before, 0u);  // inside the step, not at its edge
      EXPECT_GT(after, 0u);
    }
  }
}

// The idle stretches of at least `u_ps` on each device (from the union of
// its kernels) are exactly the manifest's step gaps, one before each step but
// the first.
void ExpectStepGaps(const ParsedTrace& t, const nlohmann::json& file, int steps, int64_t u_ps) {
  for (const auto& d : file["devices"]) {
    int64_t pid = d["pid"].get<int64_t>();
    std::vector<XEvent> events = DeviceEvents(t, pid);
    ASSERT_FALSE(events.empty());
    std::vector<std::pair<int64_t, int64_t>> idle;  // [end of busy, next start)
    int64_t end = events.front().ts_ps + events.front().dur_ps;
    for (const XEvent& e : events) {
      if (e.ts_ps - end >= u_ps) idle.push_back({end, e.ts_ps});
      end = std::max(end, e.ts_ps + e.dur_ps);
    }
    ASSERT_EQ(idle.size(), static_cast<size_t>(steps - 1)) << pid;
    ASSERT_EQ(d["step_gaps"].size(), idle.size()) << pid;
    for (size_t k = 0; k < idle.size(); ++k) {
      const auto& g = d["step_gaps"][k];
      EXPECT_EQ(g["before_step"].get<int>(), static_cast<int>(k + 1));
      EXPECT_EQ(g["start_ps"].get<int64_t>(), idle[k].first) << pid;
      EXPECT_EQ(g["end_ps"].get<int64_t>(), idle[k].second) << pid;
      EXPECT_EQ(g["idle_ps"].get<int64_t>(), idle[k].second - idle[k].first);
      EXPECT_GE(idle[k].second - idle[k].first, u_ps);
    }
  }
}

// (name, duration) of every device event but `skip`: what an injection must
// leave unchanged.
std::multiset<std::pair<std::string, int64_t>> WorkOf(const ParsedTrace& t,
                                                      const std::string& skip) {
  std::multiset<std::pair<std::string, int64_t>> out;
  for (const XEvent& e : t.x) {
    if (e.pid != 701 && e.name != skip) out.insert({e.name, e.dur_ps});
  }
  return out;
}

TEST_F(TracegenTest, AmdAllToAllBlockerRunsAloneOnTheComputeStream) {
  std::string common =
      " --plain --vendor amd --gpus 3 --streams 3 --steps 3"
      " --kernels-per-step 300 --step-seconds 0.1 --seed 21";
  ASSERT_EQ(
      Gen("file --out " + dir_.Sub("base.json") + common + " --manifest " + dir_.Sub("base.m.json"))
          .exit_code,
      0);
  auto r = Gen("file --out " + dir_.Sub("b.json") + common + " --blocker-us 1500 --manifest " +
               dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string name = "stream_executor::gpu::RaggedAllToAllKernelImpl<8l>";
  nlohmann::json m = LoadJson(dir_.Sub("m.json"));
  EXPECT_EQ(m["params"]["blocker_us"].get<double>(), 1500.0);
  EXPECT_EQ(m["params"]["blocker_kind"].get<std::string>(), "alltoall");
  EXPECT_EQ(m["blocker"]["name"].get<std::string>(), name);
  EXPECT_EQ(m["blocker"]["kind"].get<std::string>(), "alltoall");
  EXPECT_EQ(m["blocker"]["hlo_op"].get<std::string>(), "ragged-all-to-all.3");
  EXPECT_EQ(m["blocker"]["per_gpu_per_step_us"].get<double>(), 1500.0);
  EXPECT_EQ(m["blocker"]["per_gpu_per_step_ps"].get<int64_t>(), 1500000000);
  EXPECT_FALSE(m.contains("host_stall_us"));
  std::string text = ::profwatch::testing::ReadFile(dir_.Sub("b.json"));
  ParsedTrace t = ParseAndCheckShape(text);
  ExpectManifestMatches(t, m["files"][0]);
  ExpectBlockersRunAlone(t, m["files"][0], name, 3, 1500000000, 16);
  EXPECT_NE(text.find("\"name\":\"" + name + "\",\"args\":{\"correlation_id\":\""),
            std::string::npos);
  EXPECT_NE(text.find("\"hlo_module\":\"jit_train_step\",\"hlo_op\":\"ragged-all-to-all.3\""),
            std::string::npos);
  EXPECT_EQ(m["kernels"][name]["launches"].get<uint64_t>(), 9u);
  EXPECT_EQ(m["kernels"][name]["ps"].get<int64_t>(), 9 * 1500000000LL);
  // The rest of the work is the run without the blocker: same kernels, same
  // durations; the blocker adds exactly 3 x 1.5 ms of kernel time per GPU.
  ParsedTrace base = ParseAndCheckShape(::profwatch::testing::ReadFile(dir_.Sub("base.json")));
  EXPECT_TRUE(WorkOf(t, name) == WorkOf(base, name));
  nlohmann::json bm = LoadJson(dir_.Sub("base.m.json"));
  for (size_t i = 0; i < 3; ++i) {
    const auto& d = m["files"][0]["devices"][i];
    const auto& b = bm["files"][0]["devices"][i];
    EXPECT_EQ(d["kernel_ps"].get<int64_t>(), b["kernel_ps"].get<int64_t>() + 3 * 1500000000LL);
    EXPECT_EQ(d["kernel_launches"].get<uint64_t>(), b["kernel_launches"].get<uint64_t>() + 3);
    EXPECT_FALSE(b.contains("blockers"));
  }
  EXPECT_FALSE(bm.contains("blocker"));
}

TEST_F(TracegenTest, HostStallLeavesAnIdleGapBeforeEveryStepButTheFirst) {
  std::string common =
      " --plain --vendor nvidia --gpus 2 --streams 4 --steps 4"
      " --kernels-per-step 200 --step-seconds 0.1 --seed 8";
  ASSERT_EQ(Gen("file --out " + dir_.Sub("base.json") + common).exit_code, 0);
  auto r = Gen("file --out " + dir_.Sub("s.json") + common + " --host-stall-us 5000 --manifest " +
               dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json m = LoadJson(dir_.Sub("m.json"));
  EXPECT_EQ(m["params"]["host_stall_us"].get<double>(), 5000.0);
  EXPECT_EQ(m["host_stall_us"].get<double>(), 5000.0);
  EXPECT_EQ(m["host_stall_ps"].get<int64_t>(), 5000000000);
  EXPECT_FALSE(m.contains("blocker"));
  ParsedTrace t = ParseAndCheckShape(::profwatch::testing::ReadFile(dir_.Sub("s.json")));
  ExpectManifestMatches(t, m["files"][0]);
  ExpectStepGaps(t, m["files"][0], 4, 5000000000);
  // Without the stall no device idles that long; the kernels are the same.
  ParsedTrace base = ParseAndCheckShape(::profwatch::testing::ReadFile(dir_.Sub("base.json")));
  EXPECT_TRUE(WorkOf(t, "") == WorkOf(base, ""));
  for (int64_t pid : {1, 2}) {
    std::vector<XEvent> events = DeviceEvents(base, pid);
    int64_t end = events.front().ts_ps, longest = 0;
    for (const XEvent& e : events) {
      longest = std::max(longest, e.ts_ps - end);
      end = std::max(end, e.ts_ps + e.dur_ps);
    }
    EXPECT_LT(longest, 5000000000) << pid;
  }
}

TEST_F(TracegenTest, BlockerAndHostStallComposeWithStreamsVendorsAndKinds) {
  struct Case {
    std::string args, name;
    int steps;
    int64_t tid;
  };
  const Case cases[] = {
      {"--vendor nvidia --gpus 2 --streams 4 --steps 3 --blocker-kind scatter",
       "input_scatter_fusion", 3, 7},
      {"--vendor amd --gpus 3 --streams 1 --steps 4 --blocker-kind scatter",
       "input_scatter_fusion.kd", 4, 16},
      {"--vendor nvidia --gpus 1 --streams 2 --steps 2", "ragged_all_to_all_kernel_uint16", 2, 7},
      {"--vendor amd --gpus 2 --streams 2 --steps 3 --blocker-kind alltoall",
       "stream_executor::gpu::RaggedAllToAllKernelImpl<8l>", 3, 16},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    std::string out = dir_.Sub("c" + std::to_string(i) + ".json");
    std::string man = dir_.Sub("c" + std::to_string(i++) + ".m.json");
    auto r = Gen("file --plain --out " + out + " " + c.args +
                 " --kernels-per-step 150 --step-seconds 0.05 --seed 4"
                 " --blocker-us 700.5 --host-stall-us 4000 --manifest " +
                 man);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json m = LoadJson(man);
    EXPECT_EQ(m["blocker"]["name"].get<std::string>(), c.name);
    EXPECT_EQ(m["blocker"]["per_gpu_per_step_ps"].get<int64_t>(), 700500000);
    ParsedTrace t = ParseAndCheckShape(::profwatch::testing::ReadFile(out));
    ExpectManifestMatches(t, m["files"][0]);
    ExpectBlockersRunAlone(t, m["files"][0], c.name, c.steps, 700500000, c.tid);
    ExpectStepGaps(t, m["files"][0], c.steps, 4000000000);
  }
}

TEST_F(TracegenTest, BlockerAndHostStallInJobsAndWithAnExactEventCount) {
  std::string root = dir_.Sub("jobs");
  auto r = Gen("job --out " + root +
               " --job j --run r --mode 1gpu --hosts 1 --gpus-per-host 2 --vendor nvidia"
               " --streams 3 --kernels-per-step 100 --step-seconds 0.05 --blocker-us 300"
               " --blocker-kind scatter --host-stall-us 2500 --manifest " +
               dir_.Sub("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json m = LoadJson(dir_.Sub("m.json"));
  EXPECT_EQ(m["blocker"]["name"].get<std::string>(), "input_scatter_fusion");
  EXPECT_EQ(m["host_stall_us"].get<double>(), 2500.0);
  ASSERT_EQ(m["files"].size(), 2u);
  for (const auto& f : m["files"]) {
    ParsedTrace t = ParseAndCheckShape(Inflated(root + "/" + f["path"].get<std::string>()));
    ExpectManifestMatches(t, f);
    ExpectBlockersRunAlone(t, f, "input_scatter_fusion", 3, 300000000, 7);
    ExpectStepGaps(t, f, 3, 2500000000);
  }

  // --events stays exact: the blockers are part of the count.
  r = Gen("file --plain --out " + dir_.Sub("e.json") +
          " --gpus 2 --streams 3 --events 6000 --step-seconds 0.05 --blocker-us 250"
          " --host-stall-us 3000 --manifest " +
          dir_.Sub("e.m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json em = LoadJson(dir_.Sub("e.m.json"));
  ParsedTrace t = ParseAndCheckShape(::profwatch::testing::ReadFile(dir_.Sub("e.json")));
  EXPECT_EQ(t.x.size(), 6000u);
  ExpectManifestMatches(t, em["files"][0]);
  ExpectBlockersRunAlone(t, em["files"][0], "stream_executor::gpu::RaggedAllToAllKernelImpl<8l>", 3,
                         250000000, 16);
  ExpectStepGaps(t, em["files"][0], 3, 3000000000);
}

TEST_F(TracegenTest, InjectionFlagsAreListedAndCheckedAndDeterministic) {
  auto help = Gen("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* flag : {"--blocker-us", "--blocker-kind alltoall|scatter", "--host-stall-us"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
  auto kind = Gen("file --out " + dir_.Sub("x") + " --blocker-us 10 --blocker-kind gather");
  EXPECT_EQ(kind.exit_code, 1);
  EXPECT_NE(kind.err.find("--blocker-kind must be alltoall or scatter"), std::string::npos);
  auto negative = Gen("file --out " + dir_.Sub("x") + " --host-stall-us -5");
  EXPECT_EQ(negative.exit_code, 1);
  EXPECT_NE(negative.err.find("--host-stall-us"), std::string::npos);
  auto few = Gen("file --out " + dir_.Sub("x") + " --gpus 8 --steps 3 --events 20 --blocker-us 5");
  EXPECT_EQ(few.exit_code, 1);
  EXPECT_NE(few.err.find("blocker kernels"), std::string::npos) << few.err;
  EXPECT_FALSE(fs::exists(dir_.Sub("x")));

  std::string common =
      " --gpus 2 --kernels-per-step 100 --blocker-us 40 --host-stall-us 90 --steps 3";
  ASSERT_EQ(Gen("file --out " + dir_.Sub("a.gz") + common + " --seed 3").exit_code, 0);
  ASSERT_EQ(Gen("file --out " + dir_.Sub("b.gz") + common + " --seed 3").exit_code, 0);
  EXPECT_TRUE(::profwatch::testing::ReadFile(dir_.Sub("a.gz")) ==
              ::profwatch::testing::ReadFile(dir_.Sub("b.gz")));
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
