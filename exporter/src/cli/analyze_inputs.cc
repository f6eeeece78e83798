#include "cli/analyze_inputs.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "watch/layout.h"
#include "window/grouping.h"

namespace profwatch::cli {
namespace fs = std::filesystem;
namespace {

// Trace files directly inside `dir`, sorted by name.
std::vector<std::string> TraceFilesIn(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && watch::IsTraceFileName(name)) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every plugins/profile directory below `root` (symlinked dirs not followed,
// so loops cannot hang the walk).
std::vector<fs::path> ProfileDirsBelow(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (root.filename() == "profile" && root.parent_path().filename() == "plugins") {
    out.push_back(root);
    return out;
  }
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec)) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory(ec)) continue;
    const fs::path& p = it->path();
    if (p.filename() == "profile" && p.parent_path().filename() == "plugins") {
      out.push_back(p);
      it.disable_recursion_pending();
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "job/run" from ".../<job>/<run>/tensorboard/plugins/profile" (MaxText
// layout), else the directory above plugins/.
std::string RunLabel(const fs::path& profile_dir) {
  fs::path logdir = profile_dir.parent_path().parent_path();  // above plugins/
  if (logdir.filename() == "tensorboard") {
    fs::path run = logdir.parent_path();
    return run.parent_path().filename().string() + "/" + run.filename().string();
  }
  return logdir.filename().string();
}

}  // namespace

Result<std::vector<InputWindow>> ResolveInputs(const std::vector<std::string>& paths,
                                               int64_t skew_seconds) {
  std::vector<InputWindow> windows;
  InputWindow loose;  // plain file arguments form one window
  for (const auto& arg : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(arg, ec);
    if (ec || !fs::exists(st)) {
      return MakeError(ErrorCode::kNotFound, arg + ": no such file or directory");
    }
    if (fs::is_regular_file(st)) {
      loose.files.push_back(arg);
      continue;
    }
    if (!fs::is_directory(st)) {
      return MakeError(ErrorCode::kUnsupported, arg + ": not a regular file or directory");
    }
    fs::path dir(arg);
    std::string name = dir.filename().string();
    if (name.empty()) name = dir.parent_path().filename().string();
    fs::path absolute = fs::absolute(dir).lexically_normal();
    if (absolute.filename().empty()) absolute = absolute.parent_path();  // "dir/"
    if (watch::ParseTimestampDirName(name)) {
      const fs::path profile = absolute.parent_path();
      const bool in_profile =
          profile.filename() == "profile" && profile.parent_path().filename() == "plugins";
      InputWindow w{arg,
                    TraceFilesIn(dir),
                    {dir.string()},
                    in_profile ? watch::RunDirOfProfileDir(profile.string()) : ""};
      windows.push_back(std::move(w));
      continue;
    }
    // A run dir of nsys exports: its capture-nsys-profile dir is the window.
    if (name != watch::kNsysCaptureDirName &&
        fs::is_directory(absolute / watch::kNsysCaptureDirName, ec)) {
      absolute /= watch::kNsysCaptureDirName;
      dir = absolute;
      name = watch::kNsysCaptureDirName;
    }
    if (name == watch::kNsysCaptureDirName) {
      auto files = TraceFilesIn(dir);
      if (files.empty()) return MakeError(ErrorCode::kNotFound, arg + ": no *.sqlite exports");
      windows.push_back({arg, std::move(files), {}, watch::RunDirOfNsysDir(absolute.string())});
      continue;
    }
    auto profile_dirs = ProfileDirsBelow(dir);
    if (profile_dirs.empty()) {
      // A Kineto output dir (or any dir of traces): one window of its files.
      auto files = TraceFilesIn(dir);
      if (files.empty()) {
        return MakeError(ErrorCode::kNotFound,
                         arg + ": no trace files and no plugins/profile/<ts> directories below it");
      }
      windows.push_back({arg, std::move(files), {}, watch::RunDirOfKinetoDir(absolute.string())});
      continue;
    }
    for (const auto& pd : profile_dirs) {
      auto ts_dirs = window::ListTimestampDirs(pd.string());
      if (!ts_dirs) return tl::unexpected(ts_dirs.error());
      for (auto& w : window::GroupWindows(std::move(*ts_dirs), skew_seconds)) {
        windows.push_back(
            {RunLabel(pd) + "/" + w.id, w.files, w.timestamp_dirs,
             watch::RunDirOfProfileDir(fs::absolute(pd).lexically_normal().string())});
      }
    }
  }
  if (!loose.files.empty()) {
    loose.label =
        loose.files.size() == 1 ? loose.files[0] : std::to_string(loose.files.size()) + " files";
    windows.insert(windows.begin(), std::move(loose));
  }
  return windows;
}

}  // namespace profwatch::cli
