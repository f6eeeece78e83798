#include "watch/layout.h"

#include <algorithm>
#include <array>
#include <climits>
#include <filesystem>

namespace profwatch::watch {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Format suffixes, longest first so ".pt.trace.json.gz" wins over ".json.gz".
// "_results.json": rocprofv3's JSON output (`<name>_results.json`);
// "_results.db": its rocpd database (ROCm 7's default).
constexpr std::array<std::string_view, 9> kSuffixes = {
    ".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json", ".xplane.pb",
    ".json.gz",          ".sqlite",        "_results.json",  "_results.db"};

std::string_view StripSuffix(std::string_view name, bool* kineto) {
  for (std::string_view suffix : kSuffixes) {
    if (name.ends_with(suffix)) {
      if (kineto != nullptr) *kineto = suffix.starts_with(".pt.");
      return name.substr(0, name.size() - suffix.size());
    }
  }
  if (kineto != nullptr) *kineto = false;
  return name;
}

}  // namespace

std::optional<int64_t> ParseTimestampDirName(std::string_view name) {
  // YYYY_MM_DD_HH_MM_SS
  if (name.size() != 19) return std::nullopt;
  int fields[6];
  size_t pos = 0;
  for (int i = 0; i < 6; ++i) {
    const size_t len = i == 0 ? 4 : 2;
    std::string_view part = name.substr(pos, len);
    if (!AllDigits(part)) return std::nullopt;
    int v = 0;
    for (char c : part) v = v * 10 + (c - '0');
    fields[i] = v;
    pos += len;
    if (i < 5) {
      if (name[pos] != '_') return std::nullopt;
      ++pos;
    }
  }
  const int month = fields[1], day = fields[2], hour = fields[3], minute = fields[4],
            second = fields[5];
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  return DaysFromCivil(fields[0], static_cast<unsigned>(month), static_cast<unsigned>(day)) *
             86400 +
         hour * 3600 + minute * 60 + second;
}

bool IsTraceFileName(std::string_view name) {
  // Hidden names are editors' and copy tools' temporaries, never a writer's output.
  if (name.empty() || name.front() == '.') return false;
  for (std::string_view suffix : kSuffixes) {
    if (name.ends_with(suffix) && name.size() > suffix.size()) return true;
  }
  return false;
}

std::string ProcessKeyOfTraceFile(std::string_view name) {
  bool kineto = false;
  std::string_view key = StripSuffix(name, &kineto);
  if (kineto) {
    // Kineto names are <worker>.<pid>.<ts_ms>: the timestamp differs per window
    // of the same process, so it is not part of the process identity.
    size_t dot = key.rfind('.');
    if (dot != std::string_view::npos && dot > 0 && AllDigits(key.substr(dot + 1))) {
      key = key.substr(0, dot);
    }
  }
  return std::string(key);
}

bool IsKinetoTraceFileName(std::string_view name) {
  bool kineto = false;
  StripSuffix(name, &kineto);
  return kineto;
}

std::string HostOfTraceFile(std::string_view name) {
  bool kineto = false;
  std::string_view key = StripSuffix(name, &kineto);
  if (kineto) {
    // torch writes <worker>.<capture ns>, its default worker name being
    // <host>_<pid>; older writers put <worker>.<pid>.<ts>. Drop the numeric
    // dot components, then, in torch's form, the pid after the host's last
    // underscore (a host name may hold underscores and digits itself).
    int numeric = 0;
    for (; numeric < 2; ++numeric) {
      size_t dot = key.rfind('.');
      if (dot == std::string_view::npos || dot == 0 || !AllDigits(key.substr(dot + 1))) break;
      key = key.substr(0, dot);
    }
    if (numeric == 1) {
      size_t under = key.rfind('_');
      if (under != std::string_view::npos && under > 0 && AllDigits(key.substr(under + 1))) {
        key = key.substr(0, under);
      }
    }
    return std::string(key);
  }
  // <host>.proc<N>: one file per GPU process.
  size_t dot = key.rfind(".proc");
  if (dot != std::string_view::npos && dot > 0 && AllDigits(key.substr(dot + 5))) {
    key = key.substr(0, dot);
  }
  return std::string(key);
}

std::string RunDirOfProfileDir(const std::string& profile_dir) {
  namespace fs = std::filesystem;
  const fs::path logdir = fs::path(profile_dir).parent_path().parent_path();
  return (logdir.filename() == "tensorboard" ? logdir.parent_path() : logdir).string();
}

std::string RunDirOfKinetoDir(const std::string& kineto_dir) {
  namespace fs = std::filesystem;
  const fs::path p(kineto_dir);
  const std::string base = p.filename().string();
  const bool output_dir =
      base == "tensorboard" || base == "traces" || base == "profiler" || base == "profile";
  return (output_dir ? p.parent_path() : p).string();
}

bool IsNsysExportName(std::string_view name) {
  return !name.empty() && name.front() != '.' && name.size() > 7 && name.ends_with(".sqlite");
}

bool IsRocprofOutputName(std::string_view name) {
  // Only trace file names (kSuffixes): the window grouping, the scanner and
  // `analyze` then take the same files of a rocprof dir. rocprofv3 names
  // every output `<prefix>_results.<ext>` (rocprofiler-sdk's
  // get_output_filename); the content decides the format.
  return IsTraceFileName(name) && (name.ends_with("_results.json") || name.ends_with(".json.gz") ||
                                   name.ends_with("_results.db"));
}

std::string RunDirOfNsysDir(const std::string& nsys_dir) {
  return std::filesystem::path(nsys_dir).parent_path().string();
}

std::optional<KinetoCapture> KinetoCaptureOf(std::string_view name) {
  bool kineto = false;
  std::string_view key = StripSuffix(name, &kineto);
  if (!kineto) return std::nullopt;
  const size_t dot = key.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view digits = key.substr(dot + 1);
  if (!AllDigits(digits) || digits.size() > 19) return std::nullopt;
  int64_t v = 0;
  for (char c : digits) {
    const int64_t d = c - '0';
    if (v > (INT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  // The unit by magnitude: present-day times are ~1.8e9 s, ~1.8e12 ms,
  // ~1.8e15 us and ~1.8e18 ns.
  int64_t ns = v;
  if (v < 100'000'000'000) {
    ns = v * 1'000'000'000;
  } else if (v < 100'000'000'000'000) {
    ns = v * 1'000'000;
  } else if (v < 100'000'000'000'000'000) {
    ns = v * 1'000;
  }
  return KinetoCapture{std::string(digits), ns};
}

}  // namespace profwatch::watch
