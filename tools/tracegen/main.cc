// profwatch-tracegen: writes deterministic synthetic JAX/XLA trace files and
// MaxText-style job directories, plus a manifest of exact expected values.
// Usage: see README.md or `profwatch-tracegen --help`.
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jax_collectives.h"
#include "kineto_collectives.h"
#include "kineto_math.h"
#include "long_names.h"
#include "nsys_export.h"
#include "rocprof_json.h"
#include "trace_model.h"
#include "whitespace.h"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using profwatch::tracegen::BlockerKind;
using profwatch::tracegen::FileParams;
using profwatch::tracegen::FileStats;
using profwatch::tracegen::Vendor;

namespace {

constexpr const char* kUsage = R"(usage:
  profwatch-tracegen file --out PATH [options] [--manifest FILE]
  profwatch-tracegen job --out JOBS_ROOT --job NAME --run NAME [options] [--manifest FILE]
  profwatch-tracegen nsys --out FILE.sqlite [--schema 2020|2024] [--ranks R] [--first-rank N]
                          [--steps K] [--kernels N] [--seed N]
  profwatch-tracegen rocprof --out DIR [--gpus G] [--ranks R] [--first-gpu N] [--steps K]
                          [--kernels-per-step N] [--no-markers] [--gzip] [--seed N]
                          [--format json|rocpd] [--manifest FILE]
  profwatch-tracegen kineto --out FILE.pt.trace.json.gz [--gpus N] [--steps K] [--seed N]
                          [--form nccl|rccl|rccl-bare|cpu-op|old-nccl|symm-mem|deepep]
                          [--pg-desc named|undefined|absent]
                          [--whitespace compact|indented|brace] [--manifest FILE]
  profwatch-tracegen kineto-math --out FILE.pt.trace.json.gz [--gpus N] [--steps K] [--seed N]
                          [--external-id own|correlation] [--bytes]
                          [--attention-kernel flash|aotriton|sage|ck]
                          [--whitespace compact|indented|brace] [--manifest FILE]
  profwatch-tracegen respace --in FILE --out FILE --style compact|indented|brace
  profwatch-tracegen jax-collectives --out DIR [--gpus N] [--steps K] [--seed N]
                          [--host NAME] [--start YYYY_MM_DD_HH_MM_SS] [--manifest FILE]
                          [--empty-tuple-shapes N] [--extra-dims N]
  profwatch-tracegen long-names --out FILE.pt.trace.json.gz [--names N] [--name-bytes B]
                          [--gpus N] [--kernel-us U] [--manifest FILE]

trace options (both subcommands):
  --vendor amd|nvidia        kernel names and stream naming (default amd)
  --gpus N                   devices in the file (file only; default 8)
  --streams S                streams per GPU: compute, comm, memcpy/aux, aux... (default 2)
  --steps K                  profiled steps in each file (default 3)
  --kernels-per-step M       device events per GPU per step, all streams (default 200)
  --events N                 exact total X events per file (host + device); overrides M
  --step-seconds S           step length on the trace timeline (default 2.0)
  --kernel-fraction F        summed kernel time per GPU per step / step time (default 0.85)
  --seed N                   everything is a function of the seed (default 1)
  --gzip-level L             0-9 (default 6)
  --plain                    write uncompressed JSON (name keeps .gz only if you give it)
  --cap                      keep the first 1,000,000 events by time (XLA writer cap)
  --cap-events N             keep the first N events by time instead
  --blocker-us U             per GPU and step, one U-microsecond kernel on the compute
                             stream with every other stream drained (default 0: none)
  --blocker-kind alltoall|scatter  that kernel: XLA's in-process ragged all-to-all or an
                             atomic scatter fusion (default alltoall)
  --host-stall-us U          U microseconds of idle GPU before each step's first kernel,
                             from the second step on (default 0: none)
  --manifest FILE            write the expected values as JSON

job options:
  --mode 1node|1gpu          <host>.trace.json.gz per host, or <host>.proc<N>.trace.json.gz per GPU
  --hosts H                  (default 2)
  --gpus-per-host G          (default 8)
  --host-prefix P            host names P0, P1, ... (default node)
  --split-dirs D             spread each window's files over D <ts> dirs (default 1)
  --split-gap SECONDS        seconds between those dirs (default 2)
  --start YYYY_MM_DD_HH_MM_SS  first window's timestamp (default 2025_01_15_10_00_00)
  --windows W                profile windows (default 1)
  --window-interval SECONDS  time between windows (default 1800)
  --stale                    add an older window 600 s before the first
  --log                      write a MaxText log at JOBS_ROOT/<job>.log
  --log-path FILE            write the log there instead
  --skip-steps N             skip_first_n_steps_for_profiler (default 5)
  --log-step-seconds S       steady step time in the log (default: --step-seconds)

nsys options (an Nsight Systems SQLite export of one node, one GPU per rank):
  --schema 2020|2024         export schema generation (default 2024)
  --ranks R                  processes, one GPU each (default 8)
  --first-rank N             rank of the first process (default 0)
  --kernels N                kernel rows in all (default 1000)

kineto options (a PyTorch Kineto trace whose collectives are of every kind, README.md):
  --gpus N                   devices in the file (default 2)
  --steps K                  ProfilerStep#s (default 3)
  --form F                   nccl: NCCL kernel names with the collective args; rccl: RCCL's
                             generic kernel with them; rccl-bare: the generic kernel, no args
                             (kind and size unknown); cpu-op: NCCL names, the args only on
                             the record_param_comms operator; old-nccl: every kernel
                             ncclKernel_SendRecv_*, kind and shapes only in the launching
                             nccl:*/c10d:: operators, External id = correlation id;
                             symm-mem: symmetric-memory and vLLM custom all-reduces under
                             their operators (default nccl)
  --pg-desc D                named: each group's description (fsdp, ep, pp, tp, dp);
                             undefined: torch's "undefined"; absent: no process-group args

kineto-math options (a PyTorch Kineto trace whose GEMM and attention kernels are launched by
operators with and without shapes, and FBGEMM kernels, README.md):
  --gpus N                   devices in the file (default 1)
  --steps K                  ProfilerStep#s (default 3)
  --external-id E            own: kernels carry their operator's External id; correlation:
                             their correlation id, as older Kineto writes it (default own)
  --bytes                    also an aten::add (elementwise) and a memcpy and memset with
                             CUPTI's bytes per step; the manifest's bytes_by_family and
                             memop_bytes are the bytes a reader must find

jax-collectives options (a JAX window, DIR/<ts>/<host>.trace.json.gz and <host>.xplane.pb,
whose collectives' sizes are in the xplane's HLO module, README.md):
  --gpus N                   devices (default 2)
  --steps K                  steps (default 3; analyze with --profile-steps K)
  --host NAME                file name prefix (default node0)
  --start TS                 the <ts> dir (default 2025_01_15_10_00_00)
  --empty-tuple-shapes N     hostile: N empty tuple_shapes in all, spread over the collective
                             instructions' result shapes (default 0)
  --extra-dims N             hostile: N more dimensions (of 1) in all, spread over the
                             collective instructions' first operands (default 0)

long-names options (a hostile Kineto trace: distinct, very long kernel names, README.md):
  --names N                  distinct kernel names, one launch each (default 600)
  --name-bytes B             bytes of each name (default 1048576)
  --gpus N                   devices the launches go to in turn (default 1)
  --kernel-us U              each launch's duration (default 10)
)";

struct Args {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
};

bool IsBoolFlag(const std::string& name) {
  return name == "plain" || name == "cap" || name == "stale" || name == "log" || name == "bytes" ||
         name == "help" || name == "no-markers" || name == "gzip";
}

bool ParseArgs(int argc, char** argv, int first, Args* args, std::string* error) {
  static const std::set<std::string> kKnown = {"out",
                                               "vendor",
                                               "gpus",
                                               "streams",
                                               "steps",
                                               "kernels-per-step",
                                               "events",
                                               "step-seconds",
                                               "kernel-fraction",
                                               "seed",
                                               "gzip-level",
                                               "cap-events",
                                               "blocker-us",
                                               "blocker-kind",
                                               "host-stall-us",
                                               "manifest",
                                               "external-id",
                                               "mode",
                                               "hosts",
                                               "gpus-per-host",
                                               "host-prefix",
                                               "split-dirs",
                                               "split-gap",
                                               "start",
                                               "windows",
                                               "window-interval",
                                               "log-path",
                                               "skip-steps",
                                               "log-step-seconds",
                                               "job",
                                               "run",
                                               "schema",
                                               "ranks",
                                               "first-rank",
                                               "kernels",
                                               "form",
                                               "format",
                                               "pg-desc",
                                               "host",
                                               "empty-tuple-shapes",
                                               "extra-dims",
                                               "names",
                                               "name-bytes",
                                               "kernel-us",
                                               "whitespace",
                                               "attention-kernel",
                                               "in",
                                               "style",
                                               "first-gpu"};
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      *error = "unexpected argument: " + a;
      return false;
    }
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (IsBoolFlag(name)) {
      if (has_value) {
        *error = "--" + name + " takes no value";
        return false;
      }
      args->flags.insert(name);
      continue;
    }
    if (!kKnown.count(name)) {
      *error = "unknown flag --" + name;
      return false;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        *error = "--" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    args->values[name] = value;
  }
  return true;
}

struct Getter {
  const Args& args;
  std::string error;
  std::string Str(const std::string& name, const std::string& def) {
    auto it = args.values.find(name);
    return it == args.values.end() ? def : it->second;
  }
  int64_t Int(const std::string& name, int64_t def, int64_t min, int64_t max) {
    auto it = args.values.find(name);
    if (it == args.values.end()) return def;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || v < min || v > max) {
      error = "--" + name + " must be an integer in [" + std::to_string(min) + ", " +
              std::to_string(max) + "], got \"" + it->second + "\"";
      return def;
    }
    return v;
  }
  double Double(const std::string& name, double def, double min, double max) {
    auto it = args.values.find(name);
    if (it == args.values.end()) return def;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0' || !(v >= min && v <= max)) {
      error = "--" + name + " must be a number in [" + std::to_string(min) + ", " +
              std::to_string(max) + "], got \"" + it->second + "\"";
      return def;
    }
    return v;
  }
};

bool FileParamsFrom(Getter& g, const Args& args, FileParams* p) {
  std::string vendor = g.Str("vendor", "amd");
  if (vendor == "amd") {
    p->vendor = Vendor::kAmd;
  } else if (vendor == "nvidia") {
    p->vendor = Vendor::kNvidia;
  } else {
    g.error = "--vendor must be amd or nvidia";
  }
  p->gpus = static_cast<int>(g.Int("gpus", 8, 1, 64));
  p->streams = static_cast<int>(g.Int("streams", 2, 1, 16));
  p->steps = static_cast<int>(g.Int("steps", 3, 1, 1000));
  p->kernels_per_step = g.Int("kernels-per-step", 200, 1, 100000000);
  p->events = g.Int("events", -1, 0, 4000000000LL);
  p->step_seconds = g.Double("step-seconds", 2.0, 1e-6, 3600);
  p->kernel_fraction = g.Double("kernel-fraction", 0.85, 0.0, 1.0);
  p->seed = static_cast<uint64_t>(g.Int("seed", 1, 0, INT64_MAX));
  p->gzip_level = static_cast<int>(g.Int("gzip-level", 6, 0, 9));
  p->plain = args.flags.count("plain") > 0;
  if (args.flags.count("cap")) p->cap = 1000000;
  if (args.values.count("cap-events")) p->cap = g.Int("cap-events", 1000000, 1, INT64_MAX);
  // Microseconds on the command line, whole nanoseconds on the timeline.
  auto whole_ns_ps = [&](const char* name) -> int64_t {
    double us = g.Double(name, 0.0, 0.0, 3.6e9);
    int64_t ps = std::llround(us * 1e3) * 1000;
    if (us > 0 && ps == 0) g.error = std::string("--") + name + " must be 0 or at least 0.001";
    return ps;
  };
  p->blocker_ps = whole_ns_ps("blocker-us");
  p->host_stall_ps = whole_ns_ps("host-stall-us");
  std::string kind = g.Str("blocker-kind", "alltoall");
  if (kind == "alltoall") {
    p->blocker_kind = BlockerKind::kAllToAll;
  } else if (kind == "scatter") {
    p->blocker_kind = BlockerKind::kScatter;
  } else {
    g.error = "--blocker-kind must be alltoall or scatter";
  }
  return g.error.empty();
}

json DeviceJson(const profwatch::tracegen::DeviceStats& d, const FileParams& p) {
  json j{{"pid", d.pid},
         {"device", d.name},
         {"kernel_launches", d.kernel_launches},
         {"kernel_ps", d.kernel_ps},
         {"busy_ps", d.busy_ps},
         {"span_ps", d.span_ps},
         {"first_ts_ps", d.first_ts_ps},
         {"last_end_ps", d.last_end_ps},
         {"streams", d.streams},
         {"streams_with_events", d.streams_with_events}};
  if (p.blocker_ps > 0) {
    json blockers = json::array();
    for (const auto& b : d.blockers) {
      blockers.push_back(
          json{{"step", b.step}, {"tid", b.tid}, {"ts_ps", b.ts_ps}, {"dur_ps", b.dur_ps}});
    }
    j["blockers"] = blockers;
  }
  if (p.host_stall_ps > 0) {
    json gaps = json::array();
    for (const auto& gap : d.step_gaps) {
      gaps.push_back(json{{"before_step", gap.step},
                          {"start_ps", gap.start_ps},
                          {"end_ps", gap.end_ps},
                          {"idle_ps", gap.end_ps - gap.start_ps}});
    }
    j["step_gaps"] = gaps;
  }
  return j;
}

json FileJson(const std::string& rel_path, const FileStats& s, const FileParams& p) {
  json devices = json::array();
  for (const auto& d : s.devices) devices.push_back(DeviceJson(d, p));
  json kernels = json::object();
  for (const auto& [name, ns] : s.kernels) {
    kernels[name] = json{{"launches", ns.launches}, {"ps", ns.ps}};
  }
  json collectives = json::object();
  for (const auto& [kind, c] : s.collectives) {
    collectives[kind] = json{{"calls", c.calls}, {"ps", c.ps}, {"exposed_ps", c.exposed_ps}};
  }
  return json{{"path", rel_path},
              {"collectives", collectives},
              {"events", s.events},
              {"device_events", s.device_events},
              {"host_events", s.host_events},
              {"metadata_events", s.metadata_events},
              {"capped", s.capped},
              {"events_before_cap", s.events_before_cap},
              {"bytes", s.bytes},
              {"uncompressed_bytes", s.uncompressed_bytes},
              {"devices", devices},
              {"kernels", kernels}};
}

void AddKernels(json* total, const FileStats& s) {
  for (const auto& [name, ns] : s.kernels) {
    json& k = (*total)[name];
    if (k.is_null()) k = json{{"launches", 0}, {"ps", 0}};
    k["launches"] = k["launches"].get<uint64_t>() + ns.launches;
    k["ps"] = k["ps"].get<int64_t>() + ns.ps;
  }
}

json ParamsJson(const FileParams& p) {
  return json{{"vendor", p.vendor == Vendor::kAmd ? "amd" : "nvidia"},
              {"gpus", p.gpus},
              {"streams", p.streams},
              {"steps", p.steps},
              {"kernels_per_step", p.kernels_per_step},
              {"events", p.events},
              {"step_seconds", p.step_seconds},
              {"kernel_fraction", p.kernel_fraction},
              {"seed", p.seed},
              {"cap", p.cap},
              {"gzip_level", p.gzip_level},
              {"plain", p.plain},
              {"blocker_us", static_cast<double>(p.blocker_ps) * 1e-6},
              {"blocker_kind", p.blocker_kind == BlockerKind::kAllToAll ? "alltoall" : "scatter"},
              {"host_stall_us", static_cast<double>(p.host_stall_ps) * 1e-6}};
}

// Ground truth of --blocker-us and --host-stall-us at the manifest's top
// level (absent when off); the per-device placements are in "devices".
void AddInjected(json* m, const FileParams& p) {
  if (p.blocker_ps > 0) {
    (*m)["blocker"] =
        json{{"kind", p.blocker_kind == BlockerKind::kAllToAll ? "alltoall" : "scatter"},
             {"name", profwatch::tracegen::BlockerName(p.vendor, p.blocker_kind)},
             {"hlo_op", profwatch::tracegen::BlockerHloOp(p.vendor, p.blocker_kind)},
             {"per_gpu_per_step_us", static_cast<double>(p.blocker_ps) * 1e-6},
             {"per_gpu_per_step_ps", p.blocker_ps}};
  }
  if (p.host_stall_ps > 0) {
    (*m)["host_stall_us"] = static_cast<double>(p.host_stall_ps) * 1e-6;
    (*m)["host_stall_ps"] = p.host_stall_ps;
  }
}

bool WriteManifest(const std::string& path, const json& m) {
  std::ofstream out(path, std::ios::trunc);
  out << m.dump(2) << "\n";
  return static_cast<bool>(out);
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "profwatch-tracegen: %s\n", msg.c_str());
  return 1;
}

int CmdFile(const Args& args) {
  Getter g{args, ""};
  FileParams p;
  FileParamsFrom(g, args, &p);
  std::string out = g.Str("out", "");
  if (out.empty()) g.error = "file: --out PATH is required";
  if (g.error.empty()) g.error = profwatch::tracegen::CheckParams(p);
  if (!g.error.empty()) return Fail(g.error);
  std::error_code ec;
  if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path(), ec);
  FileStats stats;
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
  if (!profwatch::tracegen::WriteTraceFile(p, out, &stats, &error)) return Fail(error);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "wrote %s: %llu events, %llu bytes (%llu uncompressed) in %.2f s\n",
               out.c_str(), static_cast<unsigned long long>(stats.events),
               static_cast<unsigned long long>(stats.bytes),
               static_cast<unsigned long long>(stats.uncompressed_bytes), secs);
  if (args.values.count("manifest")) {
    json kernels = json::object();
    AddKernels(&kernels, stats);
    json m{{"generator", "profwatch-tracegen"},
           {"schema", 1},
           {"command", "file"},
           {"params", ParamsJson(p)},
           {"files", json::array({FileJson(out, stats, p)})},
           {"kernels", kernels}};
    AddInjected(&m, p);
    if (!WriteManifest(args.values.at("manifest"), m)) return Fail("cannot write manifest");
  }
  return 0;
}

bool ParseStart(const std::string& s, std::time_t* t) {
  std::tm tm{};
  if (std::sscanf(s.c_str(), "%4d_%2d_%2d_%2d_%2d_%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6 ||
      s.size() != 19) {
    return false;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  *t = timegm(&tm);
  return *t != static_cast<std::time_t>(-1);
}

std::string FormatTs(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y_%m_%d_%H_%M_%S", &tm);
  return buf;
}

uint64_t MixSeed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = seed ^ 0x6a09e667f3bcc909ULL;
  for (uint64_t v : {a, b, c}) {
    x ^= v + 0x9e3779b97f4a7c15ULL + (x << 6) + (x >> 2);
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
  }
  return x;
}

// The MaxText log: config lines and one "completed step" line per step.
json WriteLog(const std::string& path, const std::string& run, int skip, int profiled, int windows,
              int period, double step_s, uint64_t seed, std::string* error) {
  int last_profiled = skip + (windows - 1) * period + profiled - 1;
  int total_steps = last_profiled + 6;
  std::set<int> profiled_steps, write_back;
  for (int w = 0; w < windows; ++w) {
    for (int k = 0; k < profiled; ++k) profiled_steps.insert(skip + w * period + k);
    write_back.insert(skip + w * period + profiled);
  }
  std::string text;
  auto line = [&](const std::string& l) { text += l + "\n"; };
  line("Config param run_name: " + run);
  line("Config param steps: " + std::to_string(total_steps));
  line("Config param per_device_batch_size: 4");
  line("Config param profiler: xplane");
  line("Config param profiler_steps: " + std::to_string(profiled));
  line("Config param skip_first_n_steps_for_profiler: " + std::to_string(skip));
  if (windows > 1) line("Config param profile_periodically_period: " + std::to_string(period));
  line("Number of model params=8.030 billion");
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 12345;
  auto uni = [&]() {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(x >> 11) * 0x1.0p-53;
  };
  const double tflop_per_step = 216.055 * step_s;  // TFLOP per device per step
  const double tokens_per_step = 32768.0;
  json steps = json::array();
  double steady_sum = 0;
  int steady_n = 0;
  for (int s = 0; s < total_steps; ++s) {
    double secs = step_s * (1.0 + (uni() - 0.5) * 0.01);
    if (s == 0) secs = step_s * 9.0 + 30.0;  // compilation
    if (s == 1) secs = step_s * 1.8;
    if (s == 2) secs = step_s * 1.15;
    if (profiled_steps.count(s)) secs = step_s * 1.03;
    if (write_back.count(s)) secs = step_s * 1.5;
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%.3f", secs);
    double printed = std::strtod(buf, nullptr);
    double loss = 12.45 * std::exp(-s / 400.0) + 0.02 * uni();
    std::snprintf(buf, sizeof(buf),
                  "completed step: %d, seconds: %.3f, TFLOP/s/device: %.3f, Tokens/s/device: "
                  "%.3f, total_weights: 1048576, loss: %.3f",
                  s, printed, tflop_per_step / printed, tokens_per_step / printed, loss);
    line(buf);
    if (s == 0)
      line("To see full metrics 'tensorboard --logdir=gs://bucket/" + run + "/tensorboard/'");
    bool steady = s >= 3 && !profiled_steps.count(s) && !write_back.count(s);
    if (steady) steady_sum += printed, ++steady_n;
    steps.push_back(json{{"step", s}, {"seconds", printed}, {"steady", steady}});
  }
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) *error = "cannot write " + path;
  return json{{"path", path},
              {"steps", total_steps},
              {"profiled_steps", std::vector<int>(profiled_steps.begin(), profiled_steps.end())},
              {"write_back_steps", std::vector<int>(write_back.begin(), write_back.end())},
              {"steady_step_seconds_mean", steady_n ? steady_sum / steady_n : 0.0},
              {"step_seconds", steps}};
}

int CmdJob(const Args& args) {
  Getter g{args, ""};
  FileParams base;
  FileParamsFrom(g, args, &base);
  std::string root = g.Str("out", ""), job = g.Str("job", ""), run = g.Str("run", "");
  std::string mode = g.Str("mode", "1node");
  int hosts = static_cast<int>(g.Int("hosts", 2, 1, 4096));
  int gpus = static_cast<int>(g.Int("gpus-per-host", 8, 1, 64));
  int split = static_cast<int>(g.Int("split-dirs", 1, 1, 100));
  int split_gap = static_cast<int>(g.Int("split-gap", 2, 0, 3600));
  int windows = static_cast<int>(g.Int("windows", 1, 1, 1000));
  int64_t interval = g.Int("window-interval", 1800, 1, 86400 * 30);
  int skip = static_cast<int>(g.Int("skip-steps", 5, 0, 1000000));
  double log_step_s = g.Double("log-step-seconds", base.step_seconds, 1e-6, 3600);
  std::string prefix = g.Str("host-prefix", "node");
  std::time_t start = 0;
  if (!ParseStart(g.Str("start", "2025_01_15_10_00_00"), &start)) {
    g.error = "--start must look like 2025_01_15_10_00_00";
  }
  if (root.empty() || job.empty() || run.empty())
    g.error = "job: --out, --job and --run are required";
  if (mode != "1node" && mode != "1gpu") g.error = "--mode must be 1node or 1gpu";
  if (args.values.count("gpus")) g.error = "job: use --gpus-per-host, not --gpus";
  if (g.error.empty()) {
    FileParams one_file = base;
    one_file.gpus = mode == "1node" ? gpus : 1;
    g.error = profwatch::tracegen::CheckParams(one_file);
  }
  if (!g.error.empty()) return Fail(g.error);

  bool one_node = mode == "1node";
  fs::path run_dir = fs::path(root) / job / run;
  fs::path profile_dir = run_dir / "tensorboard" / "plugins" / "profile";
  // Steps between windows, as MaxText's profile_periodically_period.
  int period = std::max(base.steps + 2,
                        static_cast<int>(std::lround(static_cast<double>(interval) / log_step_s)));

  json files = json::array(), window_list = json::array(), kernels = json::object();
  struct Window {
    int index;
    bool stale;
    std::time_t t;
  };
  std::vector<Window> plan;
  if (args.flags.count("stale")) plan.push_back({-1, true, start - 600});
  for (int w = 0; w < windows; ++w) plan.push_back({w, false, start + w * interval});

  for (const Window& w : plan) {
    struct F {
      std::string host, name;
      int proc;
    };
    std::vector<F> wfiles;
    for (int h = 0; h < hosts; ++h) {
      std::string host = prefix + std::to_string(h);
      if (one_node) {
        wfiles.push_back({host, host + ".trace.json.gz", -1});
      } else {
        for (int q = 0; q < gpus; ++q) {
          wfiles.push_back({host, host + ".proc" + std::to_string(q) + ".trace.json.gz", q});
        }
      }
    }
    std::set<std::string> dirs;
    for (size_t i = 0; i < wfiles.size(); ++i) {
      int d = static_cast<int>(i * split / wfiles.size());
      std::string ts = FormatTs(w.t + static_cast<std::time_t>(d) * split_gap);
      dirs.insert(ts);
      fs::path dir = profile_dir / ts;
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) return Fail("cannot create " + dir.string() + ": " + ec.message());
      FileParams p = base;
      p.gpus = one_node ? gpus : 1;
      p.seed =
          MixSeed(base.seed, static_cast<uint64_t>(w.index + 1), static_cast<uint64_t>(i), 0x70b);
      FileStats stats;
      std::string error;
      fs::path path = dir / wfiles[i].name;
      if (!profwatch::tracegen::WriteTraceFile(p, path.string(), &stats, &error)) {
        return Fail(error);
      }
      json f = FileJson(fs::relative(path, root).string(), stats, p);
      f["window"] = w.index;
      f["ts_dir"] = ts;
      f["host"] = wfiles[i].host;
      if (wfiles[i].proc >= 0) f["proc"] = wfiles[i].proc;
      files.push_back(f);
      if (!w.stale) AddKernels(&kernels, stats);
    }
    json win{{"index", w.index},
             {"stale", w.stale},
             {"ts_dirs", std::vector<std::string>(dirs.begin(), dirs.end())},
             {"files", wfiles.size()},
             {"gpus", hosts * gpus},
             {"hosts", hosts}};
    if (!w.stale) {
      std::vector<int> steps;
      for (int k = 0; k < base.steps; ++k) steps.push_back(skip + w.index * period + k);
      win["profiled_steps"] = steps;
    }
    window_list.push_back(win);
  }

  json manifest{{"generator", "profwatch-tracegen"},
                {"schema", 1},
                {"command", "job"},
                {"params", ParamsJson(base)},
                {"job", job},
                {"run", run},
                {"mode", mode},
                {"hosts", hosts},
                {"gpus_per_host", gpus},
                {"run_dir", fs::relative(run_dir, root).string()},
                {"windows", window_list},
                {"files", files},
                {"kernels", kernels}};
  AddInjected(&manifest, base);
  if (args.flags.count("log") || args.values.count("log-path")) {
    std::string log_path = args.values.count("log-path")
                               ? args.values.at("log-path")
                               : (fs::path(root) / (job + ".log")).string();
    std::string error;
    json log =
        WriteLog(log_path, run, skip, base.steps, windows, period, log_step_s, base.seed, &error);
    if (!error.empty()) return Fail(error);
    manifest["log"] = log;
  }
  if (args.values.count("manifest") && !WriteManifest(args.values.at("manifest"), manifest)) {
    return Fail("cannot write manifest " + args.values.at("manifest"));
  }
  std::fprintf(stderr, "wrote %zu files under %s\n", files.size(), run_dir.string().c_str());
  return 0;
}

int CmdNsys(const Args& args) {
  profwatch::tracegen::NsysSynthetic p;
  auto number = [&](const char* name, int64_t fallback) -> std::optional<int64_t> {
    auto it = args.values.find(name);
    if (it == args.values.end()) return fallback;
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end != '\0' || v < 0) return std::nullopt;
    return v;
  };
  const auto out = args.values.find("out");
  if (out == args.values.end()) return Fail("nsys needs --out FILE.sqlite");
  const std::string schema = args.values.count("schema") ? args.values.at("schema") : "2024";
  if (schema != "2020" && schema != "2024") return Fail("--schema must be 2020 or 2024");
  p.schema = schema == "2020" ? profwatch::tracegen::NsysSchema::k2020
                              : profwatch::tracegen::NsysSchema::k2024;
  const auto ranks = number("ranks", 8), first = number("first-rank", 0),
             steps = number("steps", 3), kernels = number("kernels", 1000),
             seed = number("seed", 1);
  if (!ranks || !first || !steps || !kernels || !seed || *ranks < 1 || *steps < 1) {
    return Fail("--ranks, --first-rank, --steps, --kernels and --seed take non-negative numbers");
  }
  p.ranks = static_cast<int>(*ranks);
  p.first_rank = static_cast<int>(*first);
  p.steps = static_cast<int>(*steps);
  p.kernels = *kernels;
  p.seed = static_cast<uint64_t>(*seed);
  std::error_code ec;
  if (fs::path(out->second).has_parent_path()) {
    fs::create_directories(fs::path(out->second).parent_path(), ec);
  }
  std::string error;
  if (!profwatch::tracegen::WriteSyntheticNsysExport(p, out->second, &error)) return Fail(error);
  std::fprintf(stderr, "wrote %s\n", out->second.c_str());
  return 0;
}

// rocprofv3 JSON outputs of one node (tools/tracegen/rocprof_json.h), one
// file per process, and their exact truth.
int CmdRocprof(const Args& args) {
  profwatch::tracegen::RocprofSynthetic p;
  auto number = [&](const char* name, int64_t fallback) -> std::optional<int64_t> {
    auto it = args.values.find(name);
    if (it == args.values.end()) return fallback;
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end != '\0' || v < 0 || v > 1'000'000) return std::nullopt;
    return v;
  };
  const auto out = args.values.find("out");
  if (out == args.values.end()) return Fail("rocprof needs --out DIR");
  const auto gpus = number("gpus", 8), ranks = number("ranks", 8), first = number("first-gpu", 0),
             steps = number("steps", 3), kernels = number("kernels-per-step", 40),
             seed = number("seed", 1);
  if (!gpus || !ranks || !first || !steps || !kernels || !seed || *gpus < 1 || *ranks < 1 ||
      *ranks > *gpus || *steps < 1) {
    return Fail(
        "--gpus, --ranks (at most --gpus), --first-gpu, --steps, --kernels-per-step and "
        "--seed take non-negative numbers");
  }
  p.gpus = static_cast<int>(*gpus);
  p.ranks = static_cast<int>(*ranks);
  p.first_gpu = static_cast<int>(*first);
  p.steps = static_cast<int>(*steps);
  p.kernels_per_step = static_cast<int>(*kernels);
  p.seed = static_cast<uint64_t>(*seed);
  p.markers = args.flags.count("no-markers") == 0;
  p.gzip = args.flags.count("gzip") != 0;
  if (auto f = args.values.find("format"); f != args.values.end()) {
    if (f->second != "json" && f->second != "rocpd") return Fail("--format takes json or rocpd");
    p.rocpd = f->second == "rocpd";
  }
  std::vector<profwatch::tracegen::RocprofTruth> truth;
  std::string error;
  if (!profwatch::tracegen::WriteRocprofOutputs(p, out->second, &truth, &error)) {
    return Fail(error);
  }
  if (args.values.count("manifest")) {
    json files = json::array();
    for (const auto& t : truth) {
      files.push_back(json{{"path", t.path},
                           {"pid", t.pid},
                           {"device", t.device},
                           {"gpu", t.gpu},
                           {"device_name", p.product_name},
                           {"kernel_launches", t.kernels},
                           {"kernel_ps", t.kernel_ps},
                           {"busy_ps", t.busy_ps},
                           {"span_ps", t.span_ps},
                           {"streams", t.streams},
                           {"rccl_kernels", t.rccl_kernels},
                           {"rccl_all_reduce", t.rccl_all_reduce},
                           {"rccl_all_gather", t.rccl_all_gather},
                           {"comm_ps", t.comm_ps},
                           {"exposed_comm_ps", t.exposed_comm_ps},
                           {"memops", t.memops},
                           {"memop_ps", t.memop_ps},
                           {"memop_bytes", t.memop_bytes},
                           {"step_markers", t.steps},
                           {"rank", p.markers ? json(t.rank) : json(nullptr)},
                           {"idle_gpu_agents", t.idle_gpu_agents}});
    }
    json m{{"generator", "profwatch-tracegen"},
           {"schema", 1},
           {"command", "rocprof"},
           {"params", json{{"gpus", p.gpus},
                           {"ranks", p.ranks},
                           {"steps", p.steps},
                           {"kernels_per_step", p.kernels_per_step},
                           {"markers", p.markers},
                           {"gzip", p.gzip},
                           {"format", p.rocpd ? "rocpd" : "json"}}},
           {"gpus", p.ranks},
           {"launcher_mode", "1-GPU/proc"},
           {"files", files}};
    if (!WriteManifest(args.values.at("manifest"), m)) return Fail("cannot write manifest");
  }
  std::fprintf(stderr, "wrote %zu files under %s\n", truth.size(), out->second.c_str());
  return 0;
}

// A count the trace may lack (-1): null then.
json OptCount(int64_t v) { return v < 0 ? json(nullptr) : json(v); }

// Adds one call kind's sums to its collective kind's in a manifest's
// `collectives` object.
void AddKindSums(json* kinds, const std::string& kind, uint64_t calls, int64_t ps,
                 int64_t exposed_ps) {
  json& k = (*kinds)[kind];
  if (k.is_null()) k = json{{"calls", 0}, {"ps", 0}, {"exposed_ps", 0}};
  k["calls"] = k["calls"].get<uint64_t>() + calls;
  k["ps"] = k["ps"].get<int64_t>() + ps;
  k["exposed_ps"] = k["exposed_ps"].get<int64_t>() + exposed_ps;
}

// A collective generator's manifest entry for one file: `entry` (its
// paths), then the window's shape, the per-kind sums and the calls.
json CollectiveFileEntry(json entry, int gpus, int steps, int64_t kernel_launches,
                         const json& kinds, const json& calls) {
  entry["gpus"] = gpus;
  entry["steps"] = steps;
  entry["kernel_launches"] = kernel_launches;
  entry["collectives"] = kinds;
  entry["calls"] = calls;
  return entry;
}

// --whitespace STYLE of the Kineto generators: `out`, once written, re-spaced
// in place (the same events; the manifest holds for every style).
bool RespaceAsAsked(const Args& args, const std::string& out, std::string* error) {
  auto it = args.values.find("whitespace");
  if (it == args.values.end()) return true;
  profwatch::tracegen::Whitespace style;
  if (!profwatch::tracegen::ParseWhitespace(it->second, &style)) {
    *error = "--whitespace must be compact, indented or brace";
    return false;
  }
  return profwatch::tracegen::RespaceFile(out, out, style, error);
}

// respace: any JSON file (gzip or plain) with other whitespace between its
// tokens.
int CmdRespace(const Args& args) {
  Getter g{args, ""};
  const std::string in = g.Str("in", ""), out = g.Str("out", "");
  profwatch::tracegen::Whitespace style;
  if (in.empty() || out.empty()) g.error = "respace: --in FILE and --out FILE are required";
  if (!profwatch::tracegen::ParseWhitespace(g.Str("style", ""), &style)) {
    g.error = "--style must be compact, indented or brace";
  }
  if (!g.error.empty()) return Fail(g.error);
  std::string error;
  if (!profwatch::tracegen::RespaceFile(in, out, style, &error)) return Fail(error);
  return 0;
}

// --gpus, --steps and --seed of the collective generators (kineto,
// jax-collectives): the shape of the generated window.
template <class Params>
void ReadCollectiveShape(Getter& g, Params& p) {
  p.gpus = static_cast<int>(g.Int("gpus", 2, 1, 64));
  p.steps = static_cast<int>(g.Int("steps", 3, 1, 1000));
  p.seed = static_cast<uint64_t>(g.Int("seed", 1, 0, INT64_MAX));
}

int CmdKineto(const Args& args) {
  Getter g{args, ""};
  profwatch::tracegen::KinetoCollectiveParams p;
  ReadCollectiveShape(g, p);
  using profwatch::tracegen::KinetoCommForm;
  using profwatch::tracegen::PgDescForm;
  const std::string form = g.Str("form", "nccl"), pg = g.Str("pg-desc", "named");
  const std::map<std::string, KinetoCommForm> forms = {
      {"nccl", KinetoCommForm::kNccl},          {"rccl", KinetoCommForm::kRccl},
      {"rccl-bare", KinetoCommForm::kRcclBare}, {"cpu-op", KinetoCommForm::kCpuOp},
      {"old-nccl", KinetoCommForm::kOldNccl},   {"symm-mem", KinetoCommForm::kSymmMem},
      {"deepep", KinetoCommForm::kDeepEp}};
  const std::map<std::string, PgDescForm> pgs = {{"named", PgDescForm::kNamed},
                                                 {"undefined", PgDescForm::kUndefined},
                                                 {"absent", PgDescForm::kAbsent}};
  if (!forms.count(form)) {
    g.error = "--form must be nccl, rccl, rccl-bare, cpu-op, old-nccl, symm-mem or deepep";
  }
  if (!pgs.count(pg)) g.error = "--pg-desc must be named, undefined or absent";
  const std::string out = g.Str("out", "");
  if (out.empty()) g.error = "kineto: --out FILE is required";
  if (!g.error.empty()) return Fail(g.error);
  p.form = forms.at(form);
  p.pg = pgs.at(pg);
  std::error_code ec;
  if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path(), ec);
  profwatch::tracegen::KinetoCollectiveTruth truth;
  std::string error;
  if (!profwatch::tracegen::WriteKinetoCollectiveTrace(p, out, &truth, &error)) return Fail(error);
  if (!RespaceAsAsked(args, out, &error)) return Fail(error);
  if (args.values.count("manifest")) {
    // Per call kind: the generator's parameters (what the trace says) and
    // its sums; per collective kind: calls, kernel and exposed time.
    json calls = json::array(), kinds = json::object();
    for (const auto& c : truth.calls) {
      auto str = [](const std::string& v) { return v.empty() ? json(nullptr) : json(v); };
      calls.push_back(json{{"kernel", c.kernel},
                           {"collective_name", str(c.collective_name)},
                           {"kind", c.kind},
                           {"launchers", c.launchers},
                           {"dtype", str(c.dtype)},
                           {"in_nelems", OptCount(c.in_nelems)},
                           {"out_nelems", OptCount(c.out_nelems)},
                           {"group_size", OptCount(c.group_size)},
                           {"process_group_description", str(c.pg_desc)},
                           {"process_group_ranks", str(c.pg_ranks)},
                           {"calls", c.calls},
                           {"ps", c.ps},
                           {"exposed_ps", c.exposed_ps}});
      AddKindSums(&kinds, c.kind, c.calls, c.ps, c.exposed_ps);
    }
    json entry = CollectiveFileEntry(json{{"path", out}}, p.gpus, p.steps, truth.kernel_launches,
                                     kinds, calls);
    if (p.form == KinetoCommForm::kOldNccl) entry["matmul_flops"] = truth.matmul_flops;
    json m{{"generator", "profwatch-tracegen"},
           {"schema", 1},
           {"command", "kineto"},
           {"params", json{{"gpus", p.gpus},
                           {"steps", p.steps},
                           {"seed", p.seed},
                           {"form", form},
                           {"pg_desc", pg}}},
           {"files", json::array({std::move(entry)})}};
    if (!WriteManifest(args.values.at("manifest"), m)) return Fail("cannot write manifest");
  }
  std::fprintf(stderr, "wrote %s\n", out.c_str());
  return 0;
}

int CmdKinetoMath(const Args& args) {
  Getter g{args, ""};
  profwatch::tracegen::KinetoMathParams p;
  p.gpus = static_cast<int>(g.Int("gpus", 1, 1, 64));
  p.steps = static_cast<int>(g.Int("steps", 3, 1, 1000));
  p.seed = static_cast<uint64_t>(g.Int("seed", 1, 0, INT64_MAX));
  const std::string ext = g.Str("external-id", "own");
  if (ext != "own" && ext != "correlation") g.error = "--external-id must be own or correlation";
  p.correlation_ids = ext == "correlation";
  p.bytes = args.flags.count("bytes") > 0;
  p.attention_kernel = g.Str("attention-kernel", "flash");
  if (profwatch::tracegen::AttentionKernelName(p.attention_kernel).empty()) {
    g.error = "--attention-kernel must be flash, aotriton, sage or ck";
  }
  const std::string out = g.Str("out", "");
  if (out.empty()) g.error = "kineto-math: --out FILE is required";
  if (!g.error.empty()) return Fail(g.error);
  std::error_code ec;
  if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path(), ec);
  profwatch::tracegen::KinetoMathTruth truth;
  std::string error;
  if (!profwatch::tracegen::WriteKinetoMathTrace(p, out, &truth, &error)) return Fail(error);
  if (!RespaceAsAsked(args, out, &error)) return Fail(error);
  if (args.values.count("manifest")) {
    json kernels = json::array(), families = json::object(), uncounted = json::array();
    for (const auto& k : truth.kernels) {
      kernels.push_back(
          json{{"name", k.name}, {"family", k.family}, {"launches", k.launches}, {"ps", k.ps}});
      families[k.family] = families.value(k.family, int64_t{0}) + k.ps;
    }
    for (const auto& u : truth.uncounted) {
      uncounted.push_back(
          json{{"name", u.name}, {"by", u.op ? "operator" : "kernel"}, {"ps", u.ps}});
    }
    json m{{"generator", "profwatch-tracegen"},
           {"schema", 1},
           {"command", "kineto-math"},
           {"params", json{{"gpus", p.gpus},
                           {"steps", p.steps},
                           {"seed", p.seed},
                           {"external_id", ext},
                           {"attention_kernel", p.attention_kernel}}},
           {"files", json::array({json{{"path", out},
                                       {"gpus", p.gpus},
                                       {"steps", p.steps},
                                       {"kernels", kernels},
                                       {"families", families},
                                       {"matmul_flops", truth.matmul_flops},
                                       {"attention_flops", truth.attention_flops},
                                       {"math_ps", truth.math_ps},
                                       {"counted_math_ps", truth.counted_math_ps},
                                       {"unknown_ops", truth.unknown_ops},
                                       {"uncounted", uncounted},
                                       {"bytes_by_family", truth.bytes_by_family},
                                       {"memop_bytes", truth.memop_bytes},
                                       {"memops", truth.memops}}})}};
    if (!WriteManifest(args.values.at("manifest"), m)) return Fail("cannot write manifest");
  }
  std::fprintf(stderr, "wrote %s\n", out.c_str());
  return 0;
}

int CmdJaxCollectives(const Args& args) {
  Getter g{args, ""};
  profwatch::tracegen::JaxCollectiveParams p;
  ReadCollectiveShape(g, p);
  p.host = g.Str("host", p.host);
  p.empty_tuple_shapes = g.Int("empty-tuple-shapes", 0, 0, int64_t{1} << 32);
  p.extra_dims = g.Int("extra-dims", 0, 0, int64_t{1} << 32);
  const std::string ts = g.Str("start", "2025_01_15_10_00_00");
  const std::string out = g.Str("out", "");
  if (out.empty()) g.error = "jax-collectives: --out DIR is required";
  if (p.host.empty() || p.host.find('/') != std::string::npos) g.error = "--host: a file name";
  std::time_t start = 0;
  if (!ParseStart(ts, &start)) g.error = "--start must look like 2025_01_15_10_00_00";
  if (!g.error.empty()) return Fail(g.error);
  const std::string dir = (fs::path(out) / ts).string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Fail("cannot create " + dir + ": " + ec.message());
  profwatch::tracegen::JaxCollectiveTruth truth;
  std::string error;
  if (!profwatch::tracegen::WriteJaxCollectiveWindow(p, dir, &truth, &error)) return Fail(error);
  if (args.values.count("manifest")) {
    // Per instruction: the generator's parameters (what the HLO says) and
    // its sums; per collective kind: calls, kernel and exposed time.
    auto arrays = [](const std::vector<profwatch::tracegen::JaxArray>& v) {
      json a = json::array();
      for (const auto& x : v) a.push_back(json{{"dtype", x.dtype}, {"dims", x.dims}});
      return a;
    };
    json calls = json::array(), kinds = json::object();
    for (const auto& c : truth.calls) {
      calls.push_back(json{
          {"hlo_op", c.hlo_op},
          {"opcode", c.opcode},
          {"kernel", c.kernel},
          {"kind", c.kind},
          {"operands", arrays(c.operands)},
          {"outputs", arrays(c.outputs)},
          {"replica_groups", c.replica_groups.empty() ? json(nullptr) : json(c.replica_groups)},
          {"groups", OptCount(c.groups)},
          {"group_size", OptCount(c.group_size)},
          {"calls", c.calls},
          {"ps", c.ps},
          {"exposed_ps", c.exposed_ps}});
      AddKindSums(&kinds, c.kind, c.calls, c.ps, c.exposed_ps);
    }
    const std::string base = (fs::path(dir) / p.host).string();
    json m{{"generator", "profwatch-tracegen"},
           {"schema", 1},
           {"command", "jax-collectives"},
           {"params", json{{"gpus", p.gpus}, {"steps", p.steps}, {"seed", p.seed}}},
           {"hlo_module", truth.module},
           {"files", json::array({CollectiveFileEntry(
                         json{{"path", base + ".trace.json.gz"}, {"xplane", base + ".xplane.pb"}},
                         p.gpus, p.steps, truth.kernel_launches, kinds, calls)})}};
    if (!WriteManifest(args.values.at("manifest"), m)) return Fail("cannot write manifest");
  }
  std::fprintf(stderr, "wrote %s\n", dir.c_str());
  return 0;
}

int CmdLongNames(const Args& args) {
  Getter g{args, ""};
  profwatch::tracegen::LongNamesParams p;
  p.names = g.Int("names", p.names, 1, int64_t{1} << 24);
  p.name_bytes = g.Int("name-bytes", p.name_bytes, 1, int64_t{1} << 30);
  p.gpus = static_cast<int>(g.Int("gpus", p.gpus, 1, 64));
  p.kernel_us = g.Int("kernel-us", p.kernel_us, 1, 1'000'000);
  const std::string out = g.Str("out", "");
  if (out.empty()) g.error = "long-names: --out FILE is required";
  if (!g.error.empty()) return Fail(g.error);
  std::error_code ec;
  if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path(), ec);
  profwatch::tracegen::LongNamesTruth truth;
  std::string error;
  if (!profwatch::tracegen::WriteLongNamesTrace(p, out, &truth, &error)) return Fail(error);
  if (args.values.count("manifest")) {
    json m{{"generator", "profwatch-tracegen"},
           {"schema", 1},
           {"command", "long-names"},
           {"params", json{{"names", p.names},
                           {"name_bytes", p.name_bytes},
                           {"gpus", p.gpus},
                           {"kernel_us", p.kernel_us}}},
           {"files", json::array({json{{"path", out},
                                       {"kernel_launches", truth.launches},
                                       {"kernel_ps", truth.kernel_ps},
                                       {"uncompressed_bytes", truth.uncompressed_bytes}}})}};
    if (!WriteManifest(args.values.at("manifest"), m)) return Fail("cannot write manifest");
  }
  std::fprintf(stderr, "wrote %s\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  Args args;
  std::string error;
  if (!ParseArgs(argc, argv, 2, &args, &error)) {
    std::fprintf(stderr, "profwatch-tracegen: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (args.flags.count("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "file") return CmdFile(args);
  if (cmd == "job") return CmdJob(args);
  if (cmd == "nsys") return CmdNsys(args);
  if (cmd == "rocprof") return CmdRocprof(args);
  if (cmd == "kineto") return CmdKineto(args);
  if (cmd == "kineto-math") return CmdKinetoMath(args);
  if (cmd == "jax-collectives") return CmdJaxCollectives(args);
  if (cmd == "long-names") return CmdLongNames(args);
  if (cmd == "respace") return CmdRespace(args);
  std::fprintf(stderr, "profwatch-tracegen: unknown subcommand \"%s\"\n%s", cmd.c_str(), kUsage);
  return 2;
}
