#include "store/inflight_journal.h"

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

#include "core/text.h"

namespace profwatch::store {
namespace {

using nlohmann::json;

// FNV-1a, 64 bits.
void Mix(uint64_t& h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  h = (h ^ 0xff) * 0x100000001b3ULL;  // a separator: ("ab","c") != ("a","bc")
}
void Mix(uint64_t& h, uint64_t v) { Mix(h, std::string_view(reinterpret_cast<char*>(&v), 8)); }

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

uint64_t FilesDigest(const std::vector<std::string>& paths) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const std::string& p : paths) {
    Mix(h, p);
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) {
      Mix(h, static_cast<uint64_t>(errno) | (uint64_t{1} << 63));
      continue;
    }
    Mix(h, static_cast<uint64_t>(st.st_dev));
    Mix(h, static_cast<uint64_t>(st.st_ino));
    Mix(h, static_cast<uint64_t>(st.st_size));
    Mix(h, static_cast<uint64_t>(st.st_mtim.tv_sec) * 1'000'000'000ULL +
               static_cast<uint64_t>(st.st_mtim.tv_nsec));
  }
  return h;
}

std::string InflightKey(std::string_view run_dir, std::string_view window) {
  std::string key(run_dir);
  key += '\n';
  key += window;
  return key;
}

Status InflightJournal::Load(std::optional<LogEvent>* warning) {
  if (path_.empty()) return {};
  std::lock_guard<std::mutex> lock(mu_);
  records_.clear();
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return {};
  std::ifstream in(path_);
  if (!in) return MakeError(ErrorCode::kIo, path_ + ": cannot be read");
  std::string line;
  size_t bad = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    InflightRecord r;
    auto str = [&](const char* k, std::string* out) {
      auto it = j.is_object() ? j.find(k) : j.end();
      if (it == j.end() || !it->is_string()) return false;
      *out = FromReversibleUtf8(it->get_ref<const std::string&>());
      return true;
    };
    std::string digest;
    if (!str("key", &r.key) || !str("training_job", &r.training_job) || !str("run", &r.run) ||
        !str("window", &r.window) || !str("digest", &digest) || !j.contains("deaths") ||
        !j["deaths"].is_number_integer() || !j.contains("in_flight") ||
        !j["in_flight"].is_boolean()) {
      ++bad;
      continue;
    }
    r.digest = std::strtoull(digest.c_str(), nullptr, 16);
    r.deaths = std::clamp<int64_t>(j["deaths"].get<int64_t>(), 0, 1000);
    // Its daemon died with it in flight.
    if (j["in_flight"].get<bool>()) ++r.deaths;
    r.in_flight = false;
    r.seq = ++seq_;
    records_[r.key] = std::move(r);
  }
  if (bad > 0) {
    *warning = LogEvent{LogLevel::kWarn,
                        "in-flight journal lines unreadable, skipped",
                        {{"path", path_}, {"lines", bad}}};
  }
  return WriteLocked();
}

std::vector<InflightRecord> InflightJournal::Records() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<InflightRecord> out;
  for (const auto& [key, r] : records_) out.push_back(r);
  return out;
}

std::optional<InflightRecord> InflightJournal::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

Status InflightJournal::Begin(InflightRecord r) {
  if (path_.empty()) return {};
  std::lock_guard<std::mutex> lock(mu_);
  r.in_flight = true;
  r.seq = ++seq_;
  records_[r.key] = std::move(r);
  return WriteLocked();
}

Status InflightJournal::End(const std::string& key, bool finished) {
  if (path_.empty()) return {};
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return {};
  if (finished || it->second.deaths == 0) {
    records_.erase(it);
  } else {
    it->second.in_flight = false;
    it->second.seq = ++seq_;
  }
  return WriteLocked();
}

Status InflightJournal::WriteLocked() {
  // Past kMaxKeptJournalRecords records not in flight, the oldest go.
  std::vector<const InflightRecord*> kept;
  for (const auto& [key, r] : records_) {
    if (!r.in_flight) kept.push_back(&r);
  }
  if (kept.size() > kMaxKeptJournalRecords) {
    std::sort(kept.begin(), kept.end(),
              [](const InflightRecord* a, const InflightRecord* b) { return a->seq < b->seq; });
    std::vector<std::string> drop;
    for (size_t i = 0; i + kMaxKeptJournalRecords < kept.size(); ++i) drop.push_back(kept[i]->key);
    for (const std::string& k : drop) records_.erase(k);
  }
  std::string text;
  for (const auto& [key, r] : records_) {
    json j = {{"key", r.key},
              {"training_job", r.training_job},
              {"run", r.run},
              {"window", r.window},
              {"digest", Hex(r.digest)},
              {"deaths", r.deaths},
              {"in_flight", r.in_flight}};
    ReversibleUtf8Strings(j);  // names and paths kept exact (core/text.h)
    text += j.dump(-1, ' ', false, json::error_handler_t::replace);
    text += '\n';
  }
  const std::string tmp = path_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return MakeError(ErrorCode::kIo, tmp + ": open: " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string msg = std::strerror(errno);
      ::close(fd);
      return MakeError(ErrorCode::kIo, tmp + ": write: " + msg);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    return MakeError(ErrorCode::kIo, path_ + ": rename: " + std::strerror(errno));
  }
  return {};
}

}  // namespace profwatch::store
