#include "store/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "core/text.h"
#include "store/state_json.h"

namespace profwatch::store {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

}  // namespace

std::string SerializeDaemonState(const DaemonState& state, double saved_unix) {
  // Streamed like SerializeState, with the same bytes as the whole document
  // dumped compactly (sorted keys): no DOM of every run and window.
  std::string out = "{\"saved_unix\":" + json(saved_unix).dump() +
                    ",\"schema\":" + json(kDaemonStateSchema).dump() +
                    ",\"snapshot\":" + SerializeState(state.snapshot) + ",\"windows\":[";
  bool first = true;
  for (const window::AnalysedWindow& w : state.windows) {
    json jw;
    jw["training_job"] = w.run.training_job;
    jw["run"] = w.run.run;
    jw["run_dir"] = w.run_dir;
    jw["first_dir"] = w.first_dir;
    jw["analyzed_unix"] = w.analyzed_unix;
    json files = json::array();
    for (const window::FileFingerprint& f : w.files) {
      files.push_back({{"path", f.path},
                       {"dev", f.dev},
                       {"ino", f.ino},
                       {"size", f.size},
                       {"mtime_ns", f.mtime_ns}});
    }
    jw["files"] = std::move(files);
    ReversibleUtf8Strings(jw);  // paths and names kept exact (core/text.h)
    if (!first) out += ',';
    first = false;
    out += jw.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  out += "]}\n";
  return out;
}

namespace {

// The daemon state document from `input` (text or a stream), its snapshot's
// runs read one at a time (StateRunReader): never a tree of the whole file.
template <class Input>
Result<DaemonState> ParseDaemonStateFrom(Input&& input) {
  StateRunReader runs({"snapshot"}, /*drop_bad_runs=*/true);
  json doc;
  try {
    doc = json::parse(std::forward<Input>(input), std::ref(runs));
  } catch (const json::exception& e) {
    return MakeError(ErrorCode::kCorrupt, std::string("state file is not JSON: ") + e.what());
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternal, std::string("state file: ") + e.what());
  }
  if (!doc.is_object()) {
    return MakeError(ErrorCode::kCorrupt, "state file is not a JSON object");
  }
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string()) {
    return MakeError(ErrorCode::kCorrupt, "schema: missing");
  }
  if (schema->get<std::string>() != kDaemonStateSchema) {
    return MakeError(ErrorCode::kUnsupported, "schema: " + schema->get<std::string>() +
                                                  " (expected " + std::string(kDaemonStateSchema) +
                                                  ")");
  }
  DaemonState state;
  auto snap = doc.find("snapshot");
  if (snap == doc.end() || !snap->is_object()) {
    return MakeError(ErrorCode::kCorrupt, "snapshot: missing");
  }
  auto parsed = runs.Finish(*snap);
  if (!parsed) {
    Error e = parsed.error();
    e.Wrap("snapshot");
    return tl::unexpected(e);
  }
  state.snapshot = std::move(*parsed);
  for (const DroppedRun& d : runs.dropped()) {
    Error e = d.error;
    e.Wrap("snapshot");
    state.dropped.push_back({d.reason, e.ToString()});
  }
  auto windows = doc.find("windows");
  if (windows == doc.end() || !windows->is_array()) {
    return MakeError(ErrorCode::kCorrupt, "windows: missing");
  }
  // A malformed window record is dropped alone (its window is analysed
  // again if its run is alive), like a bad run.
  size_t i = 0;
  for (const json& jw : *windows) {
    const std::string where = "windows[" + std::to_string(i++) + "]";
    auto drop = [&](const std::string& what) {
      state.dropped.push_back({"invalid", "corrupt: " + where + ": " + what});
    };
    if (!jw.is_object()) {
      drop("not an object");
      continue;
    }
    window::AnalysedWindow w;
    auto str = [&](const char* key, std::string* out) -> bool {
      auto it = jw.find(key);
      if (it == jw.end() || !it->is_string()) return false;
      *out = FromReversibleUtf8(it->get_ref<const std::string&>());
      return true;
    };
    if (!str("training_job", &w.run.training_job) || !str("run", &w.run.run) ||
        !str("run_dir", &w.run_dir) || !str("first_dir", &w.first_dir)) {
      drop("missing a name field");
      continue;
    }
    auto at = jw.find("analyzed_unix");
    if (at != jw.end() && at->is_number()) w.analyzed_unix = at->get<double>();
    auto files = jw.find("files");
    if (files == jw.end() || !files->is_array()) {
      drop("files: missing");
      continue;
    }
    bool malformed = false;
    for (const json& jf : *files) {
      if (!jf.is_object() || !jf.contains("path") || !jf["path"].is_string() ||
          !jf.contains("dev") || !jf["dev"].is_number_unsigned() || !jf.contains("ino") ||
          !jf["ino"].is_number_unsigned() || !jf.contains("size") ||
          !jf["size"].is_number_unsigned() || !jf.contains("mtime_ns") ||
          !jf["mtime_ns"].is_number_integer()) {
        malformed = true;
        break;
      }
      window::FileFingerprint f;
      f.path = FromReversibleUtf8(jf["path"].get_ref<const std::string&>());
      f.dev = jf["dev"].get<uint64_t>();
      f.ino = jf["ino"].get<uint64_t>();
      f.size = jf["size"].get<uint64_t>();
      f.mtime_ns = jf["mtime_ns"].get<int64_t>();
      w.files.push_back(std::move(f));
    }
    if (malformed) {
      drop("files: malformed entry");
      continue;
    }
    state.windows.push_back(std::move(w));
  }
  return state;
}

}  // namespace

Result<DaemonState> ParseDaemonState(std::string_view text) { return ParseDaemonStateFrom(text); }

Status CheckWritable(const std::string& path) {
  fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) {
    return MakeError(ErrorCode::kIo, path + ": is a directory");
  }
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const std::string probe =
      (dir / ("." + target.filename().string() + ".probe-" + std::to_string(getpid()))).string();
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return MakeError(errno == EACCES ? ErrorCode::kPermission : ErrorCode::kIo,
                     path + ": cannot create a file in " + dir.string() + ": " + strerror(errno));
  }
  close(fd);
  unlink(probe.c_str());
  return {};
}

Status WriteFileAtomic(const std::string& path, std::string_view data) {
  fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const std::string tmp =
      (dir / ("." + target.filename().string() + ".tmp-" + std::to_string(getpid()))).string();
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return MakeError(errno == EACCES ? ErrorCode::kPermission : ErrorCode::kIo,
                     tmp + ": open: " + strerror(errno));
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string msg = strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return MakeError(ErrorCode::kIo, tmp + ": write: " + msg);
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    const std::string msg = strerror(errno);
    unlink(tmp.c_str());
    return MakeError(ErrorCode::kIo, tmp + ": fsync: " + msg);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string msg = strerror(errno);
    unlink(tmp.c_str());
    return MakeError(ErrorCode::kIo, path + ": rename: " + msg);
  }
  // The rename itself is durable only once the directory is synced.
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return {};
}

DaemonState LoadDaemonStateOrSetAside(const std::string& path, double now_unix,
                                      std::optional<LogEvent>* warning) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  // Parsed from the stream: the file's text is never held whole.
  std::ifstream in(path, std::ios::binary);
  Result<DaemonState> state =
      in ? ParseDaemonStateFrom(in) : Result<DaemonState>(MakeError(ErrorCode::kIo, "unreadable"));
  if (state) return std::move(*state);
  const std::string aside = path + ".corrupt-" + std::to_string(static_cast<int64_t>(now_unix));
  std::error_code rec;
  fs::rename(path, aside, rec);
  LogEvent w{LogLevel::kWarn,
             "state file unusable, set aside",
             {{"path", path}, {"moved_to", aside}, {"reason", state.error().ToString()}}};
  if (rec) w.fields.emplace_back("rename_error", rec.message());
  const std::vector<std::string> removed = PruneSetAsideStateFiles(path, kMaxSetAsideStateFiles);
  if (!removed.empty()) {
    std::string list;
    for (size_t i = 0; i < removed.size(); ++i) list += (i ? "," : "") + removed[i];
    w.fields.emplace_back("removed_older", list);
  }
  *warning = std::move(w);
  return {};
}

std::vector<std::string> PruneSetAsideStateFiles(const std::string& path, size_t keep) {
  const fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const std::string prefix = target.filename().string() + ".corrupt-";
  // (time, name) of each `<name>.corrupt-<digits>`; other files are left alone.
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    found.emplace_back(std::stoll(digits), name);
  }
  std::sort(found.begin(), found.end(), std::greater<>());  // newest first
  std::vector<std::string> removed;
  for (size_t i = keep; i < found.size(); ++i) {
    const std::string p = (dir / found[i].second).string();
    std::error_code rec;
    if (fs::remove(p, rec)) removed.push_back(p);
  }
  return removed;
}

void SaveThrottle::Saved(TimePoint started, TimePoint finished) {
  const std::chrono::nanoseconds took =
      std::max(std::chrono::nanoseconds(0),
               std::chrono::duration_cast<std::chrono::nanoseconds>(finished - started));
  next_ = finished +
          std::chrono::duration_cast<TimePoint::duration>(std::max(min_gap_, took * cost_factor_));
}

}  // namespace profwatch::store
