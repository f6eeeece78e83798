// xplane_bench: throughput and peak RSS of the XSpace wire reader.
//
//   xplane_bench --generate PATH [--planes N] [--events M] [--host-events H]
//   xplane_bench [--no-host] FILE...
//
// --generate writes a synthetic capture shaped like a JAX GPU window (N
// device planes of M kernel events on 4 "Stream #" lines, 2,000 distinct
// kernel names of ~90 bytes, two stats per event like CUPTI/ROCm captures,
// plus a host plane of H events on 16 lines) and exits. Otherwise each FILE
// is parsed from disk through OpenTraceSource, as the daemon does, and one
// line is printed: bytes, events, seconds, MB/s, events/s, and the process's
// peak RSS (getrusage). Peak RSS is process-wide and monotonic: run one file
// per process for per-file peaks.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "parse/xplane_parser.h"
#include "read/byte_source.h"

namespace {

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void PutVarintField(std::string& out, uint32_t field, int64_t v) {
  PutVarint(out, uint64_t{field} << 3);
  PutVarint(out, static_cast<uint64_t>(v));
}
void PutLenField(std::string& out, uint32_t field, std::string_view bytes) {
  PutVarint(out, uint64_t{field} << 3 | 2);
  PutVarint(out, bytes.size());
  out.append(bytes);
}

std::string MakePlane(int64_t id, const std::string& name, int64_t events, int lines, int names,
                      int64_t base_ns) {
  std::string plane;
  PutVarintField(plane, 1, id);
  PutLenField(plane, 2, name);
  const int64_t per_line = events / lines;
  std::string line, event, stat;
  for (int l = 0; l < lines; ++l) {
    line.clear();
    PutVarintField(line, 1, 16 + l);
    PutLenField(line, 2, "Stream #" + std::to_string(16 + l) + "(Kernel)");
    PutVarintField(line, 3, base_ns);
    int64_t offset = 0;
    for (int64_t e = 0; e < per_line; ++e) {
      event.clear();
      PutVarintField(event, 1, 1 + (e * 7919 + l) % names);
      PutVarintField(event, 2, offset);
      const int64_t dur = 1000 + (e * 104729) % 900000;
      PutVarintField(event, 3, dur);
      stat.clear();
      PutVarintField(stat, 1, 1);
      PutVarintField(stat, 3, e);  // correlation_id
      PutLenField(event, 4, stat);
      stat.clear();
      PutVarintField(stat, 1, 2);
      PutVarintField(stat, 7, 1 + e % 50);  // ref_value (kernel_details)
      PutLenField(event, 4, stat);
      PutLenField(line, 4, event);
      offset += dur + 2000;
    }
    PutLenField(plane, 3, line);
  }
  std::string entry, md;
  for (int n = 1; n <= names; ++n) {
    md.clear();
    PutVarintField(md, 1, n);
    PutLenField(md, 2,
                "void xla::gpu::kernel_fusion_" + std::to_string(n) +
                    "<float, 128, 64, true>(float const*, float*, long, long, xla::Shape const&)");
    entry.clear();
    PutVarintField(entry, 1, n);
    PutLenField(entry, 2, md);
    PutLenField(plane, 4, entry);
  }
  return plane;
}

class CountingSink final : public profwatch::parse::EventSink {
 public:
  void OnEvent(const profwatch::parse::TraceEvent& e) override {
    ++events;
    bytes += e.name.size();
    dur_ps += e.dur_ps;
  }
  uint64_t events = 0, bytes = 0;
  int64_t dur_ps = 0;
};

long PeakRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

int Run(const std::string& path, bool host) {
  auto source = profwatch::read::OpenTraceSource(path);
  if (!source) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), source.error().ToString().c_str());
    return 1;
  }
  profwatch::parse::XPlaneOptions xo;
  xo.host_events = host;
  auto parser = profwatch::parse::MakeXPlaneParser({}, xo);
  CountingSink sink;
  const auto t0 = std::chrono::steady_clock::now();
  auto summary = parser->Parse(**source, sink);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!summary) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), summary.error().ToString().c_str());
    return 1;
  }
  const double mb = static_cast<double>(summary->json_bytes) / 1e6;
  std::printf("%s: %.1f MB, %llu events, %.3f s, %.0f MB/s, %.2f M events/s, peak RSS %.1f MB\n",
              path.c_str(), mb, static_cast<unsigned long long>(sink.events), s, mb / s,
              static_cast<double>(sink.events) / s / 1e6, static_cast<double>(PeakRssKb()) / 1024);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t planes = 8, events = 1000000, host_events = 1000000;
  std::string generate;
  bool host = true;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--planes" && i + 1 < argc) {
      planes = std::atoll(argv[++i]);
    } else if (a == "--events" && i + 1 < argc) {
      events = std::atoll(argv[++i]);
    } else if (a == "--host-events" && i + 1 < argc) {
      host_events = std::atoll(argv[++i]);
    } else if (a == "--generate" && i + 1 < argc) {
      generate = argv[++i];
    } else if (a == "--no-host") {
      host = false;
    } else {
      files.push_back(a);
    }
  }
  if (!generate.empty()) {
    std::ofstream out(generate, std::ios::binary | std::ios::trunc);
    std::string field;
    for (int64_t p = 0; p < planes; ++p) {
      field.clear();
      PutLenField(field, 1,
                  MakePlane(p, "/device:GPU:" + std::to_string(p), events, 4, 2000, 1000000));
      out.write(field.data(), static_cast<std::streamsize>(field.size()));
    }
    if (host_events > 0) {
      field.clear();
      PutLenField(field, 1, MakePlane(0, "/host:CPU", host_events, 16, 2000, 999000));
      out.write(field.data(), static_cast<std::streamsize>(field.size()));
    }
    return out.good() ? 0 : 1;
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: xplane_bench --generate PATH [...] | [--no-host] FILE...\n");
    return 2;
  }
  int rc = 0;
  for (const auto& f : files) rc |= Run(f, host);
  return rc;
}
