#include "window/grouping.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

namespace profwatch::window {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

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
constexpr std::array<std::string_view, 6> kSuffixes = {".pt.trace.json.gz", ".pt.trace.json",
                                                       ".trace.json.gz",    ".trace.json",
                                                       ".xplane.pb",        ".json.gz"};

std::string_view StripSuffix(std::string_view name, bool* kineto) {
  for (std::string_view suffix : kSuffixes) {
    if (EndsWith(name, suffix)) {
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
    if (EndsWith(name, suffix) && name.size() > suffix.size()) return true;
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

std::string HostOfTraceFile(std::string_view name) {
  bool kineto = false;
  std::string_view key = StripSuffix(name, &kineto);
  if (kineto) {
    // <worker>.<pid>.<ts>: drop the numeric pid and timestamp components.
    for (int i = 0; i < 2; ++i) {
      size_t dot = key.rfind('.');
      if (dot == std::string_view::npos || dot == 0 || !AllDigits(key.substr(dot + 1))) break;
      key = key.substr(0, dot);
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

std::vector<Window> GroupWindows(std::vector<TimestampDir> dirs, int64_t skew_seconds) {
  std::stable_sort(dirs.begin(), dirs.end(), [](const TimestampDir& a, const TimestampDir& b) {
    return a.time != b.time ? a.time < b.time : a.path < b.path;
  });
  std::vector<Window> windows;
  std::set<std::string> keys;  // process keys of the window being built
  for (TimestampDir& dir : dirs) {
    std::vector<std::string> files;
    for (const std::string& f : dir.files) {
      if (IsTraceFileName(f)) files.push_back(f);
    }
    // An empty dir (being created, or holding other files) says nothing about
    // where a window starts or ends.
    if (files.empty()) continue;
    std::sort(files.begin(), files.end());
    std::set<std::string> dir_keys;
    for (const std::string& f : files) dir_keys.insert(ProcessKeyOfTraceFile(f));

    bool start_new = windows.empty() || dir.time - windows.back().last_time > skew_seconds;
    if (!start_new) {
      for (const std::string& k : dir_keys) {
        if (keys.count(k) != 0) {
          start_new = true;  // the same process wrote again: a later window
          break;
        }
      }
    }
    if (start_new) {
      Window w;
      w.first_time = dir.time;
      w.id = fs::path(dir.path).filename().string();
      if (w.id.empty()) w.id = fs::path(dir.path).parent_path().filename().string();
      windows.push_back(std::move(w));
      keys.clear();
    }
    Window& w = windows.back();
    w.last_time = dir.time;
    if (w.timestamp_dirs.empty() || w.timestamp_dirs.back() != dir.path) {
      w.timestamp_dirs.push_back(dir.path);
    }
    for (const std::string& f : files) w.files.push_back((fs::path(dir.path) / f).string());
    keys.insert(dir_keys.begin(), dir_keys.end());
  }
  return windows;
}

Result<std::vector<TimestampDir>> ListTimestampDirs(const std::string& profile_dir) {
  std::error_code ec;
  fs::directory_iterator it(profile_dir, ec);
  if (ec) {
    const ErrorCode code = ec == std::errc::permission_denied           ? ErrorCode::kPermission
                           : ec == std::errc::no_such_file_or_directory ? ErrorCode::kNotFound
                                                                        : ErrorCode::kIo;
    return MakeError(code, profile_dir + ": " + ec.message());
  }
  std::vector<TimestampDir> out;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::directory_entry& entry = *it;
    std::error_code sec;
    if (!entry.is_directory(sec)) continue;
    std::string name = entry.path().filename().string();
    std::optional<int64_t> t = ParseTimestampDirName(name);
    if (!t) continue;
    TimestampDir dir;
    dir.path = entry.path().string();
    dir.time = *t;
    std::error_code fec;
    for (fs::directory_iterator fit(entry.path(), fec); !fec && fit != fs::directory_iterator();
         fit.increment(fec)) {
      std::error_code rec;
      std::string fname = fit->path().filename().string();
      if (IsTraceFileName(fname) && fit->is_regular_file(rec)) dir.files.push_back(fname);
    }
    std::sort(dir.files.begin(), dir.files.end());
    out.push_back(std::move(dir));
  }
  std::sort(out.begin(), out.end(),
            [](const TimestampDir& a, const TimestampDir& b) { return a.time < b.time; });
  return out;
}

}  // namespace profwatch::window
