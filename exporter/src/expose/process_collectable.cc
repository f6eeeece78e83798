#include "expose/process_collectable.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <exception>
#include <string_view>

#include "expose/limits.h"
#include "expose/metric_names.h"

namespace profwatch::expose {
namespace {

// Reads a small /proc file whole. /proc files report size 0, so read until
// EOF; the cap guards against a misdirected proc_root.
Result<std::string> ReadSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError(ErrorCode::kIo, path + ": cannot open");
  std::string out;
  char buf[4096];
  while (out.size() < kMaxProcFileBytes) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      ::close(fd);
      return MakeError(ErrorCode::kIo, path + ": read failed");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

template <class T>
bool ParseNumber(std::string_view s, T& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

// Whitespace-separated tokens of `s`.
std::vector<std::string_view> Split(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

class Families {
 public:
  void Add(ProcessMetric id, double value) {
    const ProcessMetricSpec* spec = &Spec(id);
    prometheus::MetricFamily f;
    f.name = std::string(spec->name);
    f.help = std::string(spec->help);
    prometheus::ClientMetric m;
    if (spec->type == MetricType::kCounter) {
      f.type = prometheus::MetricType::Counter;
      m.counter.value = value;
    } else {
      f.type = prometheus::MetricType::Gauge;
      m.gauge.value = value;
    }
    f.metric.push_back(std::move(m));
    out.push_back(std::move(f));
  }
  std::vector<prometheus::MetricFamily> out;
};

Result<int64_t> CountOpenFds(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return MakeError(ErrorCode::kIo, dir + ": cannot open");
  int64_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") ++n;
  }
  ::closedir(d);
  return n;
}

}  // namespace

Result<ProcStat> ParseProcStat(std::string_view text) {
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return MakeError(ErrorCode::kCorrupt, "stat: no ')'");
  // Tokens after the comm field start at field 3 (state).
  const std::vector<std::string_view> f = Split(text.substr(close + 1));
  const auto field = [&](int n) { return f[static_cast<size_t>(n - 3)]; };
  if (f.size() < 22) return MakeError(ErrorCode::kCorrupt, "stat: too few fields");
  ProcStat st;
  if (!ParseNumber(field(14), st.utime_ticks) || !ParseNumber(field(15), st.stime_ticks) ||
      !ParseNumber(field(22), st.starttime_ticks) || !ParseNumber(field(23), st.vsize_bytes) ||
      !ParseNumber(field(24), st.rss_pages)) {
    return MakeError(ErrorCode::kCorrupt, "stat: non-numeric field");
  }
  return st;
}

Result<uint64_t> ParseBootTime(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::vector<std::string_view> t = Split(text.substr(pos, eol - pos));
    uint64_t v = 0;
    if (t.size() == 2 && t[0] == "btime" && ParseNumber(t[1], v)) return v;
    pos = eol + 1;
  }
  return MakeError(ErrorCode::kCorrupt, "stat: no btime line");
}

Result<uint64_t> ParseMaxOpenFiles(std::string_view text) {
  constexpr std::string_view kKey = "Max open files";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    if (line.starts_with(kKey)) {
      const std::vector<std::string_view> t = Split(line.substr(kKey.size()));
      if (t.empty()) break;
      if (t[0] == "unlimited") return MakeError(ErrorCode::kUnsupported, "limits: unlimited");
      uint64_t v = 0;
      if (ParseNumber(t[0], v)) return v;
      break;
    }
    pos = eol + 1;
  }
  return MakeError(ErrorCode::kCorrupt, "limits: no Max open files line");
}

ProcessCollectable::ProcessCollectable(std::string proc_root) : proc_root_(std::move(proc_root)) {}

std::vector<prometheus::MetricFamily> ProcessCollectable::Collect() const {
  Families fam;
  try {
    const long ticks = ::sysconf(_SC_CLK_TCK);
    const long page = ::sysconf(_SC_PAGESIZE);
    Result<ProcStat> st =
        ReadSmallFile(proc_root_ + "/self/stat").and_then([](const std::string& s) {
          return ParseProcStat(s);
        });
    if (st && ticks > 0) {
      fam.Add(ProcessMetric::kCpuSecondsTotal,
              static_cast<double>(st->utime_ticks + st->stime_ticks) / static_cast<double>(ticks));
    }
    if (st) fam.Add(ProcessMetric::kVirtualMemoryBytes, static_cast<double>(st->vsize_bytes));
    if (st && page > 0) {
      fam.Add(ProcessMetric::kResidentMemoryBytes,
              static_cast<double>(st->rss_pages) * static_cast<double>(page));
    }
    if (Result<int64_t> fds = CountOpenFds(proc_root_ + "/self/fd")) {
      fam.Add(ProcessMetric::kOpenFds, static_cast<double>(*fds));
    }
    Result<uint64_t> max_fds =
        ReadSmallFile(proc_root_ + "/self/limits").and_then([](const std::string& s) {
          return ParseMaxOpenFiles(s);
        });
    if (max_fds) fam.Add(ProcessMetric::kMaxFds, static_cast<double>(*max_fds));
    Result<uint64_t> btime = ReadSmallFile(proc_root_ + "/stat").and_then([](const std::string& s) {
      return ParseBootTime(s);
    });
    if (st && btime && ticks > 0) {
      fam.Add(ProcessMetric::kStartTimeSeconds,
              static_cast<double>(*btime) +
                  static_cast<double>(st->starttime_ticks) / static_cast<double>(ticks));
    }
  } catch (const std::exception&) {
    // Only allocation can throw here; whatever was gathered is still valid.
  }
  return std::move(fam.out);
}

}  // namespace profwatch::expose
