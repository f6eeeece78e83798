#include "cli/analyze_inputs.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "watch/layout.h"
#include "watch/scanner.h"
#include "window/grouping.h"

namespace profwatch::cli {
namespace fs = std::filesystem;
namespace {

// Trace files directly inside `dir`, sorted by name; in a rocprof dir only
// what the daemon reads there (watch::IsRocprofOutputName).
std::vector<std::string> TraceFilesIn(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::path base = fs::absolute(dir).lexically_normal();
  if (base.filename().empty()) base = base.parent_path();  // "dir/"
  const bool rocprof = base.filename() == watch::kRocprofDirName;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) &&
        (rocprof ? watch::IsRocprofOutputName(name) : watch::IsTraceFileName(name))) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The name `analyze` and `compare` give a run dir found below `root`, the
// path typed on the command line: "job/run" guessed from the depth, as a
// reader of the report expects: two or more components below the root give
// rel[0] and the rest, one gives the root's name and it, none (a run dir
// given itself) its parent's name and its own. A display name only: serve's
// labels never name a directory above a root (watch::LabelsForRunDir).
std::string DisplayNameOfRunDir(const std::string& root_in, const std::string& run_dir_in) {
  auto normal = [](const std::string& p) {
    std::string s = fs::absolute(fs::path(p)).lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return fs::path(s);
  };
  const fs::path root = normal(root_in);
  const fs::path run_dir = normal(run_dir_in);
  std::vector<std::string> parts;
  for (const fs::path& part : run_dir.lexically_relative(root)) {
    const std::string p = part.string();
    if (p == "..") {
      parts.clear();
      break;
    }
    if (!p.empty() && p != ".") parts.push_back(p);
  }
  if (parts.empty()) {
    return run_dir.parent_path().filename().string() + "/" + run_dir.filename().string();
  }
  std::string name = parts.size() == 1 ? root.filename().string() : "";
  for (const std::string& p : parts) name += (name.empty() ? "" : "/") + p;
  return name;
}

// Every window serve would find below `root`, per run dir (sorted), oldest
// first within a run. Grouping is the assembler's: one TimestampDir per
// FileObservation::group_dir.
Result<std::vector<InputWindow>> WindowsBelow(const std::string& root, int64_t skew_seconds) {
  watch::ScanOptions options;
  options.roots = {root};
  watch::ScanResult scan = watch::Scan(options);
  const watch::RootStatus& status = scan.roots.front();
  if (status.condition == watch::RootCondition::kUnreadable) {
    return MakeError(ErrorCode::kPermission, root + ": permission denied");
  }
  if (status.condition != watch::RootCondition::kOk) {
    return MakeError(ErrorCode::kNotFound,
                     root + ": " + std::string(watch::RootConditionName(status.condition)));
  }
  // Nothing below the root is left out silently.
  if (scan.permission_errors > 0) {
    std::string named;
    for (const std::string& p : scan.permission_error_paths) named += " " + p;
    std::fprintf(stderr, "profwatch: WARNING: %s: %lld entries below it unreadable, skipped:%s\n",
                 root.c_str(), static_cast<long long>(scan.permission_errors), named.c_str());
  }
  if (scan.symlinks_skipped > 0) {
    std::fprintf(stderr,
                 "profwatch: WARNING: %s: %lld directory links leading out of it not followed\n",
                 root.c_str(), static_cast<long long>(scan.symlinks_skipped));
  }
  std::map<std::string, std::vector<const watch::FileObservation*>> by_run;
  for (const watch::FileObservation& o : scan.files) by_run[o.run_dir].push_back(&o);
  std::vector<InputWindow> out;
  for (const auto& [run_dir, obs] : by_run) {
    std::map<std::string, window::TimestampDir> dirs;
    std::map<std::string, const watch::FileObservation*> by_group_path;
    for (const watch::FileObservation* o : obs) {
      window::TimestampDir& d = dirs[o->group_dir];
      d.path = o->group_dir;
      d.time = o->group_time;
      d.files.push_back(o->name);
      by_group_path[(fs::path(o->group_dir) / o->name).string()] = o;
    }
    std::vector<window::TimestampDir> list;
    for (auto& [path, d] : dirs) list.push_back(std::move(d));
    const std::string name = DisplayNameOfRunDir(root, run_dir);
    for (const window::Window& w : window::GroupWindows(std::move(list), skew_seconds)) {
      InputWindow iw;
      iw.label = name + "/" + w.id;
      iw.run_dir = run_dir;
      iw.capture_time = w.last_time;
      for (const std::string& gp : w.files) {
        const watch::FileObservation* o = by_group_path.at(gp);
        iw.files.push_back(o->path);
        // Real <ts> dirs only: a Kineto or nsys window has none.
        if (o->dir == o->group_dir &&
            (iw.timestamp_dirs.empty() || iw.timestamp_dirs.back() != o->dir)) {
          iw.timestamp_dirs.push_back(o->dir);
        }
      }
      out.push_back(std::move(iw));
    }
  }
  return out;
}

// `files` with the .xplane.pb of each JAX trace-events JSON beside it, when
// there is one and it is not given already: as for a <ts> dir, the xplane
// gives the JSON its HLO modules (FLOPs, regions of CUDA graphs) and its
// device name (the peak for MFU), and --source can pick it.
std::vector<std::string> WithXplaneSiblings(const std::vector<std::string>& files) {
  std::set<std::string> given;
  for (const std::string& f : files) given.insert(fs::path(f).lexically_normal().string());
  std::vector<std::string> out = files;
  for (const std::string& f : files) {
    const std::string name = fs::path(f).filename().string();
    if (name.ends_with(".xplane.pb") || watch::IsKinetoTraceFileName(name) ||
        !watch::IsTraceFileName(name)) {
      continue;
    }
    const fs::path sibling =
        fs::path(f).parent_path() / (watch::ProcessKeyOfTraceFile(name) + ".xplane.pb");
    std::error_code ec;
    if (given.count(sibling.lexically_normal().string()) == 0 && fs::is_regular_file(sibling, ec)) {
      out.push_back(sibling.string());
      given.insert(sibling.lexically_normal().string());
    }
  }
  return out;
}

// Plain file arguments: one window, unless Kineto files of one process carry
// different capture times (two profiling cycles): then one window per cycle,
// the other files in the first.
std::vector<InputWindow> LooseWindows(const std::vector<std::string>& files, int64_t skew_seconds) {
  std::map<std::string, std::set<std::string>> captures_of;  // process key -> capture ids
  for (const std::string& f : files) {
    const std::string name = fs::path(f).filename().string();
    if (auto c = watch::KinetoCaptureOf(name)) {
      captures_of[fs::path(f).parent_path().string() + "/" + watch::ProcessKeyOfTraceFile(name)]
          .insert(c->id);
    }
  }
  const bool cycles = std::any_of(captures_of.begin(), captures_of.end(),
                                  [](const auto& kv) { return kv.second.size() > 1; });
  auto label_of = [](const std::vector<std::string>& fs_) {
    return fs_.size() == 1 ? fs_[0] : std::to_string(fs_.size()) + " files";
  };
  if (!cycles) return {InputWindow{label_of(files), WithXplaneSiblings(files), {}, ""}};
  // One pseudo dir per capture, as the scanner makes them.
  std::map<std::string, window::TimestampDir> dirs;
  std::map<std::string, std::string> path_of;  // pseudo path -> argument
  std::vector<std::string> others;
  for (const std::string& f : files) {
    const std::string name = fs::path(f).filename().string();
    auto c = watch::KinetoCaptureOf(name);
    if (!c) {
      others.push_back(f);
      continue;
    }
    const std::string pseudo = fs::path(f).parent_path().string() + "/" + c->id;
    window::TimestampDir& d = dirs[pseudo];
    d.path = pseudo;
    d.time = c->unix_ns / 1'000'000'000;
    d.files.push_back(name);
    path_of[pseudo + "/" + name] = f;
  }
  std::vector<window::TimestampDir> list;
  for (auto& [p, d] : dirs) list.push_back(std::move(d));
  std::vector<InputWindow> out;
  for (const window::Window& w : window::GroupWindows(std::move(list), skew_seconds)) {
    InputWindow iw;
    iw.capture_time = w.last_time;
    if (out.empty()) iw.files = WithXplaneSiblings(others);
    for (const std::string& gp : w.files) iw.files.push_back(path_of.at(gp));
    iw.label = iw.files.size() == 1 ? iw.files[0]
                                    : w.id + " (" + std::to_string(iw.files.size()) + " files)";
    out.push_back(std::move(iw));
  }
  return out;
}

}  // namespace

Result<std::vector<InputWindow>> ResolveInputs(const std::vector<std::string>& paths,
                                               int64_t skew_seconds) {
  std::vector<InputWindow> windows;
  std::vector<std::string> loose;  // plain file arguments
  for (const auto& arg : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(arg, ec);
    if (ec || !fs::exists(st)) {
      return MakeError(ErrorCode::kNotFound, arg + ": no such file or directory");
    }
    if (fs::is_regular_file(st)) {
      loose.push_back(arg);
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
    if (const std::optional<int64_t> ts_time = watch::ParseTimestampDirName(name)) {
      const fs::path profile = absolute.parent_path();
      const bool in_profile =
          profile.filename() == "profile" && profile.parent_path().filename() == "plugins";
      InputWindow w{arg,
                    TraceFilesIn(dir),
                    {dir.string()},
                    in_profile ? watch::RunDirOfProfileDir(profile.string()) : "",
                    *ts_time};
      if (w.files.empty()) {
        return MakeError(ErrorCode::kNotFound, arg + ": nothing to analyse: no trace files in it");
      }
      windows.push_back(std::move(w));
      continue;
    }
    auto found = WindowsBelow(absolute.string(), skew_seconds);
    if (!found) return tl::unexpected(found.error());
    if (found->empty()) {
      // Any other dir of traces (sample files without a layout): one window.
      auto files = TraceFilesIn(dir);
      if (files.empty()) {
        return MakeError(ErrorCode::kNotFound,
                         arg +
                             ": nothing to analyse: no trace files, plugins/profile/<ts> dirs, "
                             "Kineto *.pt.trace.json[.gz] files or capture-nsys-profile exports "
                             "below it");
      }
      windows.push_back({arg, std::move(files), {}, watch::RunDirOfKinetoDir(absolute.string())});
      continue;
    }
    for (auto& w : *found) windows.push_back(std::move(w));
  }
  if (!loose.empty()) {
    std::vector<InputWindow> lw = LooseWindows(loose, skew_seconds);
    windows.insert(windows.begin(), lw.begin(), lw.end());
  }
  return windows;
}

std::vector<InputWindow> LatestPerRun(std::vector<InputWindow> windows) {
  std::vector<std::string> order;        // run dirs by first appearance
  std::map<std::string, size_t> newest;  // run dir -> index in windows
  for (size_t i = 0; i < windows.size(); ++i) {
    auto [it, inserted] = newest.emplace(windows[i].run_dir, i);
    if (inserted) {
      order.push_back(windows[i].run_dir);
    } else if (windows[i].capture_time >= windows[it->second].capture_time) {
      it->second = i;
    }
  }
  std::vector<InputWindow> out;
  for (const std::string& run : order) out.push_back(std::move(windows[newest.at(run)]));
  return out;
}

InputWindow NewestWindow(std::vector<InputWindow> windows) {
  size_t best = 0;
  for (size_t i = 1; i < windows.size(); ++i) {
    if (windows[i].capture_time >= windows[best].capture_time) best = i;
  }
  return std::move(windows[best]);
}

}  // namespace profwatch::cli
