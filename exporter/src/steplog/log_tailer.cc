#include "steplog/log_tailer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <utility>

#include "steplog/limits.h"

namespace profwatch::steplog {
namespace {

std::string Errno(std::string_view what, const std::string& path, int err) {
  return std::string(what) + " " + path + ": " + std::strerror(err);
}

ErrorCode CodeForErrno(int err) {
  switch (err) {
    case EACCES:
    case EPERM:
      return ErrorCode::kPermission;
    case ENOENT:
    case ENOTDIR:
      return ErrorCode::kNotFound;
    default:
      return ErrorCode::kIo;
  }
}

// Reads exactly `len` bytes at `offset` unless EOF comes first; returns the
// count read.
Result<size_t> PreadFull(int fd, char* buf, size_t len, uint64_t offset) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return MakeError(ErrorCode::kIo, std::string("read: ") + std::strerror(errno));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

bool ParseField(std::string_view& text, std::string_view key, uint64_t& value) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text.substr(0, key.size()) != key) return false;
  text.remove_prefix(key.size());
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data()) return false;
  text.remove_prefix(static_cast<size_t>(ptr - text.data()));
  return true;
}

// The kernel's name of the open file (every link resolved); "" when it
// cannot be read.
std::string DescriptorPath(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  char buf[PATH_MAX + 1];
  const ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
  if (n <= 0 || n >= PATH_MAX) return "";
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

Result<int> OpenRunLog(const std::string& path, const read::Confinement* confine_to,
                       const LogTrust* trust, bool* untrusted) {
  if (untrusted != nullptr) *untrusted = false;
  if (trust == nullptr) return read::OpenReadOnly(path, confine_to);
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  } while (fd < 0 && errno == EINTR);
  const bool via_link = fd < 0 && errno == ELOOP;
  if (fd < 0 && !via_link) {
    const int err = errno;
    return MakeError(CodeForErrno(err), Errno("open", path, err));
  }
  if (via_link) {
    // Where the link leads decides (below).
    Result<int> opened = read::OpenReadOnly(path, nullptr);
    if (!opened) return opened;
    fd = *opened;
  }
  const std::string real = DescriptorPath(fd);
  if (confine_to != nullptr && (real.empty() || !read::PathWithin(real, *confine_to))) {
    ::close(fd);
    if (untrusted != nullptr) *untrusted = true;
    return MakeError(ErrorCode::kPermission, path + ": lies outside the watched roots (real path " +
                                                 real +
                                                 "): not read; serve --follow-symlinks allows it");
  }
  if (!real.empty() && read::PathWithin(real, trust->inside)) return fd;
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!via_link && stated && trust->owner != UINT32_MAX && st.st_uid == trust->owner) return fd;
  ::close(fd);
  if (untrusted != nullptr) *untrusted = true;
  const std::string run_owner =
      trust->owner == UINT32_MAX ? std::string("unknown") : std::to_string(trust->owner);
  if (via_link) {
    return MakeError(
        ErrorCode::kPermission,
        path + ": not the run's log: a link leading out of the run's directory (to " + real + ")");
  }
  return MakeError(ErrorCode::kPermission,
                   path + ": not the run's log: owned by uid " +
                       (stated ? std::to_string(st.st_uid) : std::string("unknown")) +
                       ", the run's owner is " + run_owner +
                       ", and it lies outside the run's directory");
}

std::string TailerState::Serialize() const {
  return "v1 dev=" + std::to_string(dev) + " inode=" + std::to_string(inode) +
         " offset=" + std::to_string(offset) + " fp_len=" + std::to_string(fingerprint_len) +
         " fp=" + std::to_string(fingerprint) + " overlong=" + (in_overlong_line ? "1" : "0") +
         " newlines=" + std::to_string(newlines);
}

Result<TailerState> TailerState::Parse(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  auto bad = [&] {
    return MakeError(ErrorCode::kCorrupt,
                     "tailer state: cannot parse \"" + std::string(text.substr(0, 200)) + "\"");
  };
  std::string_view rest = text;
  if (rest.substr(0, 2) != "v1") return bad();
  rest.remove_prefix(2);
  uint64_t dev = 0, inode = 0, offset = 0, fp_len = 0, fp = 0, overlong = 0, newlines = 0;
  if (!ParseField(rest, "dev=", dev) || !ParseField(rest, "inode=", inode) ||
      !ParseField(rest, "offset=", offset) || !ParseField(rest, "fp_len=", fp_len) ||
      !ParseField(rest, "fp=", fp) || !ParseField(rest, "overlong=", overlong)) {
    return bad();
  }
  // Written since line numbers; older text has none.
  if (!rest.empty() && !ParseField(rest, "newlines=", newlines)) return bad();
  if (!rest.empty() || fp_len > kMaxFingerprintBytes || fp > UINT32_MAX || overlong > 1 ||
      fp_len > offset || newlines > offset) {
    return bad();
  }
  TailerState s;
  s.dev = dev;
  s.inode = inode;
  s.offset = offset;
  s.fingerprint_len = static_cast<uint32_t>(fp_len);
  s.fingerprint = static_cast<uint32_t>(fp);
  s.in_overlong_line = overlong == 1;
  s.newlines = newlines;
  return s;
}

LogTailer::LogTailer(std::string path, TailerOptions options)
    : path_(std::move(path)), options_(options) {
  options_.chunk_bytes = std::max<size_t>(options_.chunk_bytes, 1);
  options_.max_line_bytes = std::max<size_t>(options_.max_line_bytes, 1);
  // A poll must be able to re-read a held partial line and still progress.
  options_.max_bytes_per_poll =
      std::max(options_.max_bytes_per_poll, 2 * options_.max_line_bytes + options_.chunk_bytes);
  options_.fingerprint_bytes = std::min<size_t>(options_.fingerprint_bytes, kMaxFingerprintBytes);
}

LogTailer::LogTailer(std::string path, TailerState resume, TailerOptions options)
    : LogTailer(std::move(path), options) {
  state_ = resume;
  resume_pending_ = true;
  if (state_.fingerprint_len > state_.offset || state_.fingerprint_len > kMaxFingerprintBytes) {
    // Not a state this class wrote: keep the identity, re-read from the start.
    state_.offset = 0;
    state_.fingerprint_len = 0;
    state_.fingerprint = 0;
    state_.in_overlong_line = false;
    state_.newlines = 0;
  }
  if (state_.newlines > state_.offset) state_.newlines = 0;
}

LogTailer::~LogTailer() { Close(); }

void LogTailer::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void LogTailer::StartFile(int fd, uint64_t dev, uint64_t inode) {
  fd_ = fd;
  if (resume_pending_ && state_.dev == dev && state_.inode == inode) {
    // Same file as the persisted state: CheckTruncation() verifies the rest.
    resume_pending_ = false;
    return;
  }
  if (resume_pending_) ++counters_.rotations;
  resume_pending_ = false;
  state_ = TailerState{};
  state_.dev = dev;
  state_.inode = inode;
}

Result<std::vector<std::string>> LogTailer::Poll(const read::Confinement* confine_to,
                                                 size_t max_bytes) {
  std::vector<std::string> out;
  at_eof_ = false;
  untrusted_ = false;
  last_write_time_.reset();
  line_numbers_.clear();
  budget_ = std::min(options_.max_bytes_per_poll, max_bytes);

  struct stat ps {};
  bool path_exists = ::stat(path_.c_str(), &ps) == 0;
  if (!path_exists && errno != ENOENT && errno != ENOTDIR) {
    int err = errno;
    return MakeError(CodeForErrno(err), Errno("stat", path_, err));
  }

  if (fd_ >= 0) {
    bool same = path_exists && static_cast<uint64_t>(ps.st_dev) == state_.dev &&
                static_cast<uint64_t>(ps.st_ino) == state_.inode;
    if (!same) {
      // Rotated, renamed away or deleted: the path no longer names this
      // file. Its last lines are drained within this poll's budget, then it
      // is closed, whatever is left in it.
      if (auto st = ReadLines(out, /*final=*/true); !st) return tl::unexpected(st.error());
      Close();
      if (path_exists) ++counters_.rotations;
      state_ = TailerState{};
      at_eof_ = false;
    }
  }

  if (fd_ < 0) {
    if (!path_exists) {
      at_eof_ = true;
      return out;
    }
    Result<int> opened = OpenRunLog(path_, confine_to, trust_ ? &*trust_ : nullptr, &untrusted_);
    if (!opened) {
      if (opened.error().code == ErrorCode::kNotFound) {  // vanished between stat and open
        at_eof_ = true;
        return out;
      }
      if (!out.empty()) return out;  // keep drained lines; the error recurs next poll
      return tl::unexpected(opened.error());
    }
    const int fd = *opened;
    struct stat fs {};
    if (::fstat(fd, &fs) != 0 || !S_ISREG(fs.st_mode)) {
      ::close(fd);
      if (!out.empty()) return out;
      return MakeError(ErrorCode::kUnsupported, "log " + path_ + ": not a regular file");
    }
    StartFile(fd, static_cast<uint64_t>(fs.st_dev), static_cast<uint64_t>(fs.st_ino));
  }

  // No budget left (the caller's is spent): the path was checked, nothing
  // is read.
  if (budget_ == 0) return out;
  if (auto st = CheckTruncation(); !st) {
    if (!out.empty()) return out;
    return tl::unexpected(st.error());
  }
  if (auto st = ReadLines(out, /*final=*/false); !st) {
    if (!out.empty()) return out;
    return tl::unexpected(st.error());
  }
  return out;
}

Status LogTailer::CheckTruncation() {
  struct stat fs {};
  if (::fstat(fd_, &fs) != 0) {
    int err = errno;
    return MakeError(ErrorCode::kIo, Errno("fstat", path_, err));
  }
  bool rewritten = static_cast<uint64_t>(fs.st_size) < state_.offset;
  if (!rewritten && state_.fingerprint_len > 0) {
    auto fp = Fingerprint(state_.offset, state_.fingerprint_len);
    if (!fp) return tl::unexpected(fp.error());
    rewritten = *fp != state_.fingerprint;
  }
  if (rewritten) {
    ++counters_.truncations;
    uint64_t dev = state_.dev, inode = state_.inode;
    state_ = TailerState{};
    state_.dev = dev;
    state_.inode = inode;
  }
  return {};
}

Result<uint32_t> LogTailer::Fingerprint(uint64_t end, uint32_t len) const {
  std::string bytes(len, '\0');
  auto n = PreadFull(fd_, bytes.data(), len, end - len);
  if (!n) return tl::unexpected(n.error().Wrap(path_));
  // A short read means the file shrank under us: hash what is there, which
  // cannot match a full-length fingerprint.
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(*n));
  if (*n < len) crc ^= 0xffffffffu;
  return static_cast<uint32_t>(crc);
}

void LogTailer::UpdateFingerprint() {
  uint32_t len =
      static_cast<uint32_t>(std::min<uint64_t>(state_.offset, options_.fingerprint_bytes));
  state_.fingerprint_len = 0;
  state_.fingerprint = 0;
  if (len == 0) return;
  auto fp = Fingerprint(state_.offset, len);
  if (!fp) return;
  state_.fingerprint_len = len;
  state_.fingerprint = *fp;
}

Status LogTailer::ReadLines(std::vector<std::string>& out, bool final) {
  at_eof_ = false;
  const size_t first_new = out.size();
  uint64_t pos = state_.offset;
  uint64_t committed = state_.offset;
  bool skipping = state_.in_overlong_line;
  uint64_t overlong = 0;
  uint64_t newlines = state_.newlines;  // '\n's before `pos + i`'s line
  uint64_t committed_newlines = newlines;
  std::string line;
  buffer_.resize(options_.chunk_bytes);

  auto emit = [&](std::string&& l) {
    if (l.empty()) return;
    out.push_back(std::move(l));
    line_numbers_.push_back(newlines + 1);
  };

  while (true) {
    if (budget_ == 0) break;
    size_t want = std::min(options_.chunk_bytes, budget_);
    ssize_t n = ::pread(fd_, buffer_.data(), want, static_cast<off_t>(pos));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      out.resize(first_new);  // the state does not advance: they will be re-read
      line_numbers_.resize(out.size());
      return MakeError(ErrorCode::kIo, Errno("read", path_, err));
    }
    if (n == 0) {
      at_eof_ = true;
      break;
    }
    size_t got = static_cast<size_t>(n);
    budget_ -= got;
    counters_.bytes_read += got;
    const char* data = buffer_.data();
    size_t i = 0;
    while (i < got) {
      const char* end =
          std::find_if(data + i, data + got, [](char c) { return c == '\n' || c == '\r'; });
      size_t j = static_cast<size_t>(end - data);
      size_t piece = j - i;
      if (!skipping && line.size() + piece > options_.max_line_bytes) {
        ++overlong;
        line.clear();
        skipping = true;
      }
      if (!skipping) line.append(data + i, piece);
      if (j == got) {
        if (skipping) committed = pos + got;  // dropped bytes count as consumed
        break;
      }
      if (skipping) {
        skipping = false;
      } else {
        emit(std::move(line));
      }
      line.clear();
      if (data[j] == '\n') ++newlines;
      committed = pos + j + 1;
      committed_newlines = newlines;
      i = j + 1;
    }
    pos += got;
  }

  if (final && at_eof_ && !skipping && !line.empty()) {
    emit(std::move(line));
    committed = pos;
  }
  counters_.lines += out.size() - first_new;
  counters_.overlong_lines += overlong;
  if (out.size() > first_new) {
    // Stat after reading, so the time bounds every line just returned.
    struct stat fs {};
    if (::fstat(fd_, &fs) == 0) {
      last_write_time_ = TimePoint{} + std::chrono::duration_cast<TimePoint::duration>(
                                           std::chrono::seconds(fs.st_mtim.tv_sec) +
                                           std::chrono::nanoseconds(fs.st_mtim.tv_nsec));
    }
  }
  if (committed != state_.offset || skipping != state_.in_overlong_line) {
    state_.offset = committed;
    state_.newlines = committed_newlines;
    state_.in_overlong_line = skipping;
    UpdateFingerprint();
  }
  return {};
}

}  // namespace profwatch::steplog
