#include "window/grouping.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "watch/layout.h"

namespace profwatch::window {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::vector<Window> GroupWindows(std::vector<TimestampDir> dirs, int64_t skew_seconds) {
  std::stable_sort(dirs.begin(), dirs.end(), [](const TimestampDir& a, const TimestampDir& b) {
    return a.time != b.time ? a.time < b.time : a.path < b.path;
  });
  std::vector<Window> windows;
  std::set<std::string> keys;  // process keys of the window being built
  for (TimestampDir& dir : dirs) {
    std::vector<std::string> files;
    for (const std::string& f : dir.files) {
      if (watch::IsTraceFileName(f)) files.push_back(f);
    }
    // An empty dir (being created, or holding other files) says nothing about
    // where a window starts or ends.
    if (files.empty()) continue;
    std::sort(files.begin(), files.end());
    std::set<std::string> dir_keys;
    for (const std::string& f : files) dir_keys.insert(watch::ProcessKeyOfTraceFile(f));

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
    std::optional<int64_t> t = watch::ParseTimestampDirName(name);
    if (!t) continue;
    TimestampDir dir;
    dir.path = entry.path().string();
    dir.time = *t;
    std::error_code fec;
    for (fs::directory_iterator fit(entry.path(), fec); !fec && fit != fs::directory_iterator();
         fit.increment(fec)) {
      std::error_code rec;
      std::string fname = fit->path().filename().string();
      if (watch::IsTraceFileName(fname) && fit->is_regular_file(rec)) dir.files.push_back(fname);
    }
    std::sort(dir.files.begin(), dir.files.end());
    out.push_back(std::move(dir));
  }
  std::sort(out.begin(), out.end(),
            [](const TimestampDir& a, const TimestampDir& b) { return a.time < b.time; });
  return out;
}

}  // namespace profwatch::window
