#include "store/history.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/text.h"
#include "store/state_json.h"

namespace profwatch::store {
namespace {

Error IoError(const std::string& what, const std::string& path) {
  return Error{ErrorCode::kIo, what + " " + path + ": " + std::strerror(errno)};
}

}  // namespace

std::string HistoryLine(const snapshot::RunState& rs, double now_unix,
                        nlohmann::ordered_json report, uint64_t max_bytes, bool* cut) {
  nlohmann::ordered_json j;
  j["schema"] = kHistorySchema;
  j["time"] = now_unix;
  j["training_job"] = rs.key.training_job;
  j["run"] = rs.key.run;
  j["window"] = rs.window_id;
  j["incomplete"] = rs.incomplete;
  // Names and the report's strings in their reversible form (core/text.h);
  // "state" is in it already (SerializeRunState), so it is added after.
  ReversibleUtf8Strings(j);
  ReversibleUtf8Strings(report);
  nlohmann::ordered_json head = j;
  j["state"] = nlohmann::ordered_json::parse(SerializeRunState(rs));
  j["report"] = std::move(report);
  // Replace invalid UTF-8 (kernel names are arbitrary bytes) instead of throwing.
  std::string line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (cut != nullptr) *cut = line.size() > max_bytes;
  if (line.size() <= max_bytes) return line;
  head["cut"] = "line_bytes";
  head["line_bytes"] = line.size();
  return head.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

HistoryWriter::HistoryWriter(std::string path, uint64_t max_bytes)
    : path_(std::move(path)), max_bytes_(max_bytes) {}

HistoryWriter::~HistoryWriter() {
  std::lock_guard<std::mutex> lock(mu_);
  CloseLocked();
}

void HistoryWriter::CloseLocked() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Status HistoryWriter::OpenLocked() {
  fd_ = open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return tl::unexpected(IoError("cannot open history file", path_));
  return {};
}

Status HistoryWriter::Append(const std::string& line, bool* rotated) {
  std::lock_guard<std::mutex> lock(mu_);
  if (rotated != nullptr) *rotated = false;
  // Someone renamed or removed the file: follow the path, not the old inode.
  if (fd_ >= 0) {
    struct stat at_path {
    }, open_file{};
    if (stat(path_.c_str(), &at_path) != 0 || fstat(fd_, &open_file) != 0 ||
        at_path.st_dev != open_file.st_dev || at_path.st_ino != open_file.st_ino) {
      CloseLocked();
    }
  }
  if (fd_ < 0) {
    if (Status s = OpenLocked(); !s) return s;
  }
  const std::string data = line + "\n";
  struct stat st {};
  if (fstat(fd_, &st) != 0) return tl::unexpected(IoError("cannot stat history file", path_));
  if (st.st_size > 0 && static_cast<uint64_t>(st.st_size) + data.size() > max_bytes_) {
    const std::string old = path_ + ".1";
    if (std::rename(path_.c_str(), old.c_str()) != 0) {
      return tl::unexpected(IoError("cannot rotate history file", path_));
    }
    CloseLocked();
    if (rotated != nullptr) *rotated = true;
    if (Status s = OpenLocked(); !s) return s;
  }
  const ssize_t n = write(fd_, data.data(), data.size());
  if (n != static_cast<ssize_t>(data.size())) {
    Error e = IoError("short write to history file", path_);
    CloseLocked();
    return tl::unexpected(e);
  }
  return {};
}

std::string OwnerHistoryPath(const std::string& path, watch::Owner owner, watch::Owner self) {
  if (owner == watch::kNoOwner || owner == self) return path;
  return path + ".uid" + std::to_string(owner);
}

OwnerHistory::OwnerHistory(std::string path, uint64_t max_bytes_per_owner, watch::Owner self)
    : path_(std::move(path)), max_bytes_(max_bytes_per_owner), self_(self) {}

Status OwnerHistory::Append(watch::Owner owner, const std::string& line, bool* rotated) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(owner);
  if (it == open_.end()) {
    if (open_.size() >= kOpenWriters) {
      auto lru = std::min_element(open_.begin(), open_.end(), [](const auto& a, const auto& b) {
        return a.second.used < b.second.used;
      });
      open_.erase(lru);
    }
    it = open_.emplace(owner, Open{std::make_unique<HistoryWriter>(PathOf(owner), max_bytes_), 0})
             .first;
  }
  it->second.used = ++tick_;
  return it->second.writer->Append(line, rotated);
}

std::optional<HistoryQuery> ParseHistoryQuery(std::string_view text) {
  HistoryQuery q;
  const size_t at = text.rfind('@');
  std::string_view name = text;
  if (at != std::string_view::npos) {
    q.window = std::string(text.substr(at + 1));
    name = text.substr(0, at);
    if (q.window->empty()) return std::nullopt;
  }
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= name.size()) {
    return std::nullopt;
  }
  q.training_job = std::string(name.substr(0, slash));
  q.run = std::string(name.substr(slash + 1));
  return q;
}

namespace {

// FILE.1, FILE, then each owner's FILE.uidN.1 and FILE.uidN (by name).
std::vector<std::string> HistoryFiles(const std::string& file) {
  std::vector<std::string> out = {file + ".1", file};
  const std::filesystem::path p(file);
  const std::string prefix = p.filename().string() + ".uid";
  std::vector<std::string> owners;
  std::error_code ec;
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  for (std::filesystem::directory_iterator it(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix) || name.ends_with(".1")) continue;
    const std::string uid = name.substr(prefix.size());
    if (uid.empty() || uid.find_first_not_of("0123456789") != std::string::npos) continue;
    owners.push_back((p.has_parent_path() ? (dir / name).string() : name));
  }
  std::sort(owners.begin(), owners.end());
  for (const std::string& o : owners) {
    out.push_back(o + ".1");
    out.push_back(o);
  }
  return out;
}

}  // namespace

Result<snapshot::RunState> FindInHistory(const std::string& file, const HistoryQuery& query) {
  std::optional<snapshot::RunState> found;
  double found_time = 0;
  int64_t without_state = 0;  // lines written before "state" existed
  bool readable = false;
  for (const std::string& path : HistoryFiles(file)) {
    std::ifstream in(path);
    if (!in) continue;
    readable = true;
    std::string line;
    // A name is asked for by its bytes or as the lines write it (the
    // reversible form, as labels show it): either matches.
    // The cheap filter looks for the run as the line's JSON text holds it.
    auto json_text = [](const std::string& v) {
      const std::string quoted =
          nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return quoted.substr(1, quoted.size() - 2);
    };
    const std::string as_given = json_text(query.run);
    const std::string as_written = json_text(ReversibleUtf8(query.run));
    auto matches = [](const nlohmann::json& v, const std::string& want) {
      if (!v.is_string()) return false;
      const auto& s = v.get_ref<const std::string&>();
      return s == want || FromReversibleUtf8(s) == want;
    };
    while (std::getline(in, line)) {
      // Cheap filter before parsing: the run name must appear in the line.
      if (line.find(as_given) == std::string::npos && line.find(as_written) == std::string::npos) {
        continue;
      }
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object()) continue;
      auto job = j.find("training_job");
      auto run = j.find("run");
      auto window = j.find("window");
      if (job == j.end() || run == j.end() || !matches(*job, query.training_job) ||
          !matches(*run, query.run)) {
        continue;
      }
      if (query.window && (window == j.end() || !matches(*window, *query.window))) {
        continue;
      }
      auto state = j.find("state");
      if (state == j.end() || !state->is_object()) {
        ++without_state;
        continue;
      }
      auto rs = ParseRunState(state->dump());
      auto time = j.find("time");
      const double t = time != j.end() && time->is_number() ? time->get<double>() : 0.0;
      if (rs && rs->has_window && (!found || t >= found_time)) {
        found = std::move(*rs);
        found_time = t;
      }
    }
  }
  if (!readable) {
    return MakeError(ErrorCode::kIo, "cannot read history file " + file + " (nor " + file + ".1)");
  }
  if (!found) {
    std::string name = query.training_job + "/" + query.run;
    if (query.window) name += "@" + *query.window;
    std::string why = "no window of " + name + " in history " + file;
    if (without_state > 0) {
      why += " (" + std::to_string(without_state) +
             " matching lines predate the analysis state in history lines: they have only a "
             "report, which compare does not read)";
    }
    return MakeError(ErrorCode::kNotFound, why);
  }
  return *found;
}

}  // namespace profwatch::store
