// Helpers the collective generators (kineto_collectives, jax_collectives)
// and the Kineto math generator share: their random numbers, their time
// text, the Kineto trace's per-GPU metadata and tail, and their gzip writer.
#pragma once

#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>

namespace profwatch::tracegen {

// splitmix64: the next value of the sequence `s` steps through.
inline uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Microseconds with three decimals: whole nanoseconds, exactly.
inline std::string MicrosText(int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  return buf;
}

// A Kineto trace's metadata of GPU `dev`'s process (pid `dev`): its name
// and its "GPU <dev>" label, one event a line.
inline std::string KinetoGpuProcessMeta(int dev) {
  const std::string pid = std::to_string(dev);
  return "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"tid\":0,\"args\":{\"name\":\"python3.10\"}},\n"
         "{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":" +
         pid + ",\"tid\":0,\"args\":{\"labels\":\"GPU " + pid + "\"}},\n";
}

// The end of a Kineto trace: the profiler's window-end marker at `end_ns`,
// the traceEvents array closed, then the trailer keys.
inline std::string KinetoTail(int64_t end_ns) {
  return "{\"name\":\"Record Window End\",\"ph\":\"i\",\"s\":\"g\",\"pid\":\"\",\"tid\":\"\","
         "\"ts\":" +
         MicrosText(end_ns) +
         "}],\"traceName\":\"profwatch-tracegen\",\"displayTimeUnit\":\"ms\","
         "\"baseTimeNanoseconds\":1711964646000000000}\n";
}

// Writes the parts, in order, gzip-compressed (level 6) to `path`.
inline bool WriteGzipParts(const std::string& path, std::initializer_list<const std::string*> parts,
                           std::string* error) {
  gzFile gz = gzopen(path.c_str(), "wb6");
  if (gz == nullptr) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = true;
  for (const std::string* s : parts) {
    if (s->empty()) continue;
    ok = ok &&
         gzwrite(gz, s->data(), static_cast<unsigned>(s->size())) == static_cast<int>(s->size());
  }
  ok = gzclose(gz) == Z_OK && ok;
  if (!ok) *error = "cannot write " + path;
  return ok;
}

}  // namespace profwatch::tracegen
