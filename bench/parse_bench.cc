// parse_bench: throughput of the streaming JSON trace parser on a generated
// JAX-like trace held in memory, next to zlib inflate of the same bytes (the
// floor the analyze path pays anyway).
//   parse_bench [MiB=300] [chunk_bytes=1048576] [--json PLAIN.json] [--no-inflate]
//               [--write-gz PATH] [--batched]
// --batched: entries are decoded in batches (the DecodePipeline path of
// `analyze`), all on this thread, so CPU per event compares with inline.
// Prints MB/s (10^6 bytes of decompressed JSON per second).
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/work_share.h"
#include "parse/trace_parser.h"
#include "read/byte_source.h"

namespace {

using Clock = std::chrono::steady_clock;

// CPU time of this thread: the machine may be shared, so wall time alone
// understates throughput.
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Serves a string in reads of at most `n` bytes, like an inflating source.
class StringViewSource final : public profwatch::read::ByteSource {
 public:
  explicit StringViewSource(const std::string& s) : s_(s) {}
  profwatch::Result<size_t> Read(char* buf, size_t n) override {
    const size_t take = std::min(n, s_.size() - pos_);
    std::memcpy(buf, s_.data() + pos_, take);
    pos_ += take;
    return take;
  }
  uint64_t RawBytesRead() const override { return pos_; }
  std::string_view Name() const override { return "<bench>"; }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

class CountingSink final : public profwatch::parse::EventSink {
 public:
  void OnEvent(const profwatch::parse::TraceEvent& e) override {
    ++events;
    dur_ps += e.dur_ps;
    name_bytes += e.name.size();
  }
  uint64_t events = 0;
  int64_t dur_ps = 0;
  uint64_t name_bytes = 0;
};

// Shaped like XLA's converter output: metadata first, then X events with
// float-noise times and string args.
std::string MakeTrace(size_t target_bytes) {
  static const char* kNames[] = {
      "input_scatter_fusion_2.kd",
      "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x1_SN_1LDSB1_GRVW8_K1_MIWT4_4_NTn1_NTA0_NTB0",
      "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)",
      "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
      "loop_transpose_fusion",
      "__amd_rocclr_copyBuffer"};
  std::string out = R"({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)";
  out.reserve(target_bytes + 4096);
  for (int gpu = 0; gpu < 8; ++gpu) {
    char buf[256];
    std::snprintf(
        buf, sizeof(buf),
        R"j({"ph":"M","pid":%d,"name":"process_name","args":{"name":"/device:GPU:%d"}},)j"
        R"j({"ph":"M","pid":%d,"tid":16,"name":"thread_name","args":{"name":"Stream #16(Kernel)"}},)j",
        gpu + 1, gpu, gpu + 1);
    out += buf;
  }
  uint64_t i = 0;
  double ts = 1000.0;
  while (out.size() < target_bytes) {
    const int gpu = static_cast<int>(i % 8);
    const char* name = kNames[(i * 7) % 6];
    const double dur = 0.5 + static_cast<double>((i * 2654435761u) % 100000) / 1000.0;
    ts += 0.140000000000001 + dur / 8;
    char buf[768];
    std::snprintf(buf, sizeof(buf),
                  R"({"ph":"X","pid":%d,"tid":16,"ts":%.17g,"dur":%.17g,"name":"%s",)"
                  R"("args":{"correlation_id":"%)" PRIu64
                  R"(","hlo_module":"jit_train_step","hlo_op":"fusion.%)" PRIu64
                  R"(","name":"jit(train_step)/jvp(Transformer)/layers/mlp/dot_general"}},)",
                  gpu + 1, ts, dur, name, i, i % 977);
    out += buf;
    ++i;
  }
  out += "{}]}";
  return out;
}

std::string Gzip(const std::string& in) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out;
  out.resize(deflateBound(&zs, in.size()));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Returns {wall, cpu} seconds.
std::pair<double, double> InflateSeconds(const std::string& gz, size_t expect) {
  const auto start = Clock::now();
  const double cpu_start = CpuSeconds();
  z_stream zs{};
  inflateInit2(&zs, 16 + MAX_WBITS);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  std::vector<char> buf(1 << 20);
  size_t total = 0;
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    total += buf.size() - zs.avail_out;
  } while (rc == Z_OK);
  inflateEnd(&zs);
  if (total != expect) std::fprintf(stderr, "inflate mismatch %zu != %zu\n", total, expect);
  return {std::chrono::duration<double>(Clock::now() - start).count(), CpuSeconds() - cpu_start};
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 300;
  size_t chunk = 1 << 20;
  std::string write_gz;
  bool no_inflate = false;
  bool batched = false;
  std::string json_path;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else if (std::strcmp(argv[i], "--batched") == 0) {
      batched = true;
    } else if (std::strcmp(argv[i], "--no-inflate") == 0) {
      no_inflate = true;
    } else if (std::strcmp(argv[i], "--write-gz") == 0 && i + 1 < argc) {
      write_gz = argv[++i];
    } else {
      pos.emplace_back(argv[i]);
    }
  }
  if (!pos.empty()) mib = std::strtoul(pos[0].c_str(), nullptr, 10);
  if (pos.size() > 1) chunk = std::strtoul(pos[1].c_str(), nullptr, 10);

  std::string json;
  if (json_path.empty()) {
    json = MakeTrace(mib << 20);
  } else {
    FILE* f = std::fopen(json_path.c_str(), "rb");
    if (!f) {
      std::fprintf(stderr, "cannot open %s\n", json_path.c_str());
      return 1;
    }
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) json.append(buf, n);
    std::fclose(f);
  }
  const double mb = static_cast<double>(json.size()) / 1e6;
  std::printf("trace: %.1f MB of JSON\n", mb);

  profwatch::parse::ParseOptions options;
  options.chunk_bytes = chunk;
  // A WorkShare nobody lends to: the parser's thread decodes every batch.
  if (batched) options.work_share = std::make_shared<profwatch::WorkShare>();
  auto parser = profwatch::parse::MakeJsonTraceParser(options);
  double best = 1e9, best_cpu = 1e9;
  CountingSink sink;
  for (int rep = 0; rep < 3; ++rep) {
    StringViewSource source(json);
    sink = CountingSink{};
    const auto start = Clock::now();
    const double cpu_start = CpuSeconds();
    auto result = parser->Parse(source, sink);
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    best_cpu = std::min(best_cpu, CpuSeconds() - cpu_start);
    if (!result) {
      std::fprintf(stderr, "parse failed: %s\n", result.error().ToString().c_str());
      return 1;
    }
    best = std::min(best, s);
  }
  std::printf(
      "parse: %" PRIu64
      " events, best of 3: wall %.3f s = %.0f MB/s; cpu %.3f s = %.0f MB/s (%.0f ns/event)\n",
      sink.events, best, mb / best, best_cpu, mb / best_cpu,
      best_cpu * 1e9 / static_cast<double>(sink.events));

  if (no_inflate) return 0;
  const std::string gz = Gzip(json);
  std::printf("gzip -6: %.1f MB\n", static_cast<double>(gz.size()) / 1e6);
  double inflate_best = 1e9, inflate_cpu = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const auto [wall, cpu] = InflateSeconds(gz, json.size());
    inflate_best = std::min(inflate_best, wall);
    inflate_cpu = std::min(inflate_cpu, cpu);
  }
  std::printf(
      "zlib inflate: best of 3: wall %.3f s = %.0f MB/s; cpu %.3f s = %.0f MB/s of output\n",
      inflate_best, mb / inflate_best, inflate_cpu, mb / inflate_cpu);
  std::printf("cpu time parse / inflate = %.2f\n", best_cpu / inflate_cpu);
  if (!write_gz.empty()) {
    FILE* f = std::fopen(write_gz.c_str(), "wb");
    if (f) {
      std::fwrite(gz.data(), 1, gz.size(), f);
      std::fclose(f);
    }
  }
  return 0;
}
