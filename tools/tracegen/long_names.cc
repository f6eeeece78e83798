// profwatch-tracegen `long-names`: see long_names.h.
#include "long_names.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "gen_util.h"

namespace profwatch::tracegen {

std::string LongKernelName(int64_t index, int64_t name_bytes) {
  std::string name = "hostile_kernel_" + std::to_string(index) + "_";
  if (static_cast<int64_t>(name.size()) < name_bytes) {
    name.append(static_cast<size_t>(name_bytes) - name.size(), 'x');
  }
  return name;
}

bool WriteLongNamesTrace(const LongNamesParams& p, const std::string& path, LongNamesTruth* truth,
                         std::string* error) {
  *truth = LongNamesTruth{};
  // Level 1: the filler compresses as well as at 6 (runs of one byte), in
  // far less time.
  gzFile gz = gzopen(path.c_str(), "wb1");
  if (gz == nullptr) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = true;
  auto put = [&](const std::string& s) {
    ok = ok && gzwrite(gz, s.data(), static_cast<unsigned>(s.size())) == static_cast<int>(s.size());
    truth->uncompressed_bytes += s.size();
  };
  put("{\"schemaVersion\":1,\"deviceProperties\":[],\"traceEvents\":[");
  constexpr int64_t kUs = 1000;  // ns
  std::string name;
  for (int64_t i = 0; i < p.names && ok; ++i) {
    const int dev = static_cast<int>(i % p.gpus);
    // Back to back on each device, 1 µs apart.
    const int64_t ts_ns = 1'000'000 + (i / p.gpus) * (p.kernel_us + 1) * kUs;
    name = LongKernelName(i, p.name_bytes);
    put(std::string(i == 0 ? "" : ",") + "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"");
    put(name);
    put("\",\"pid\":" + std::to_string(dev) + ",\"tid\":7,\"ts\":" + MicrosText(ts_ns) +
        ",\"dur\":" + MicrosText(p.kernel_us * kUs) +
        ",\"args\":{\"device\":" + std::to_string(dev) + ",\"stream\":7}}");
    ++truth->launches;
    truth->kernel_ps += p.kernel_us * kUs * 1000;
  }
  put("]}\n");
  ok = gzclose(gz) == Z_OK && ok;
  if (!ok) *error = "cannot write " + path;
  return ok;
}

}  // namespace profwatch::tracegen
