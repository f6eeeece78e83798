#include "testing/diagnosis_window.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <set>

namespace profwatch::testing {
namespace {

struct Kernel {
  std::string name;
  int scope = -1;  // index into Scopes(), -1: none
  int stream = 1;
  int64_t start_us = 0, end_us = 0;
};

const std::vector<std::string>& Names() {
  static const std::vector<std::string> names = {
      "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", "loop_add_fusion", "input_reduce_fusion",
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "triton_softmax_kernel"};
  return names;
}

// JAX scopes and their regions at depth 3, written out by hand.
struct Scope {
  const char* path;
  const char* region;
};
const std::vector<Scope>& Scopes() {
  static const std::vector<Scope> scopes = {
      {"jit(train_step)/jit(main)/transpose(jvp(decoder))/layers/mlp/dot_general",
       "decoder/layers/mlp"},
      {"jit(train_step)/jit(main)/jvp(decoder)/layers/attention/softmax",
       "decoder/layers/attention"},
      {"jit(train_step)/jit(main)/embed/gather", "embed/gather"},
      {"jit(train_step)/jit(main)/optimizer/adam/update/mul", "optimizer/adam/update"},
      {"jit(train_step)/jit(main)/vmap(remat(decoder))/norm", "decoder/norm"},
  };
  return scopes;
}

constexpr int64_t kPsPerUs = 1000000;

// Expected figures by elementary segments: between two consecutive kernel
// boundaries the set of running kernels does not change.
void Expect(const std::vector<Kernel>& ks, DiagnosisDevice& d) {
  std::set<int64_t> cuts;
  for (const Kernel& k : ks) {
    cuts.insert(k.start_us);
    cuts.insert(k.end_us);
  }
  const std::vector<int64_t> t(cuts.begin(), cuts.end());
  int64_t gap = 0;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    const int64_t len = (t[i + 1] - t[i]) * kPsPerUs;
    std::vector<const Kernel*> running;
    for (const Kernel& k : ks) {
      if (k.start_us <= t[i] && t[i] < k.end_us) running.push_back(&k);
    }
    if (running.empty()) {
      d.idle_ps += len;
      gap += len;
      continue;
    }
    if (gap > 0) {
      std::string owner;
      for (const Kernel& k : ks) {
        if (k.start_us == t[i] && (owner.empty() || k.name < owner)) owner = k.name;
      }
      d.idle_before_by_name[owner] += gap;
      gap = 0;
    }
    d.busy_ps += len;
    if (running.size() == 1) {
      d.exclusive_ps += len;
      d.exclusive_by_name[running[0]->name] += len;
    } else {
      d.overlapped_ps += len;
    }
    const bool compute = std::any_of(running.begin(), running.end(),
                                     [](const Kernel* k) { return !k->name.starts_with("nccl"); });
    if (compute) d.compute_busy_ps += len;
  }
}

}  // namespace

constexpr int64_t kBlockerUs = 1500;

DiagnosisWindow WriteDiagnosisWindow(const std::string& dir, uint64_t seed, int hosts,
                                     int gpus_per_host) {
  std::mt19937_64 rng(seed);
  DiagnosisWindow w;
  w.blocker = "ncclDevKernel_SendRecv_serial_all_to_all";
  w.slow_host = "h" + std::to_string(hosts - 1);
  w.slow_device = "/device:GPU:" + std::to_string(gpus_per_host / 2);
  for (int h = 0; h < hosts; ++h) {
    const std::string host = "h" + std::to_string(h);
    std::ofstream out(dir + "/" + host + ".trace.json");
    out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
    bool first = true;
    auto event = [&](const std::string& e) {
      out << (first ? "" : ",") << e << "\n";
      first = false;
    };
    for (int g = 0; g < gpus_per_host; ++g) {
      const int pid = g + 1;
      const std::string device = "/device:GPU:" + std::to_string(g);
      event("{\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
            ",\"name\":\"process_name\",\"args\":{\"name\":\"" + device + "\"}}");
      for (int s = 1; s <= 3; ++s) {
        event("{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(s) +
              ",\"name\":\"thread_name\",\"args\":{\"name\":\"Stream #" + std::to_string(s) +
              "(compute)\"}}");
      }
      std::vector<Kernel> ks;
      int64_t step_start = 1000;
      for (int step = 0; step < w.steps; ++step) {
        int64_t end_of_streams = step_start;
        for (int s = 1; s <= 3; ++s) {
          int64_t t = step_start + static_cast<int64_t>(rng() % 20);
          for (int i = 0; i < 8; ++i) {
            const int64_t len = static_cast<int64_t>(rng() % 40);  // zero-length sometimes
            const int scope = static_cast<int>(rng() % (Scopes().size() + 1)) - 1;
            ks.push_back({Names()[rng() % Names().size()], scope, s, t, t + len});
            t += len + static_cast<int64_t>(rng() % 30);  // gaps, sometimes none
          }
          end_of_streams = std::max(end_of_streams, t);
        }
        // The serial blocker: alone on the device, after every stream drained,
        // in calls long enough to be one (figures/diagnosis.h: 1 ms or more).
        const int64_t b = end_of_streams + 5;
        ks.push_back({w.blocker, -1, 1, b, b + kBlockerUs});
        step_start = b + kBlockerUs + 10;
      }
      const bool slow = host == w.slow_host && device == w.slow_device;
      for (Kernel& k : ks) {
        if (slow) {  // stretched by 5/4, rounded down: still whole microseconds
          k.start_us = k.start_us * 5 / 4;
          k.end_us = k.end_us * 5 / 4;
        }
      }
      // Zero-length kernels are written but take no part.
      std::vector<Kernel> timed;
      for (const Kernel& k : ks) {
        if (k.end_us > k.start_us) timed.push_back(k);
      }
      std::vector<Kernel> shuffled = ks;
      std::shuffle(shuffled.begin(), shuffled.end(), rng);  // row order is not promised
      for (const Kernel& k : shuffled) {
        std::string args = "{\"correlation_id\":\"1\"";
        if (k.scope >= 0) args += std::string(",\"name\":\"") + Scopes()[k.scope].path + "\"";
        args += "}";
        event("{\"ph\":\"X\",\"pid\":" + std::to_string(pid) +
              ",\"tid\":" + std::to_string(k.stream) + ",\"ts\":" + std::to_string(k.start_us) +
              ",\"dur\":" + std::to_string(k.end_us - k.start_us) + ",\"name\":\"" + k.name +
              "\",\"args\":" + args + "}");
        if (k.scope >= 0) {
          w.region_ps[Scopes()[k.scope].region] += (k.end_us - k.start_us) * kPsPerUs;
        }
      }
      DiagnosisDevice d;
      d.host = host;
      d.device = device;
      Expect(timed, d);
      w.devices.push_back(std::move(d));
    }
    out << "]}\n";
  }
  return w;
}

}  // namespace profwatch::testing
