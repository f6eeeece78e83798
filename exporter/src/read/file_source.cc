// POSIX file source: open(2)/read(2) with EINTR retry, no stdio buffering
// (the caller's buffer is the only one).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "read/byte_source.h"

namespace profwatch::read {
namespace {

std::string Errno(int err) { return std::strerror(err); }

ErrorCode OpenErrorCode(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:  // a path component vanished or is a file: same as missing
      return ErrorCode::kNotFound;
    case EACCES:
    case EPERM:
      return ErrorCode::kPermission;
    default:
      return ErrorCode::kIo;
  }
}

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  Result<size_t> Read(char* buf, size_t n) override {
    if (error_) return tl::unexpected(*error_);
    if (eof_) return size_t{0};
    for (;;) {
      ssize_t got = ::read(fd_, buf, n);
      if (got < 0) {
        if (errno == EINTR) continue;
        error_ = Error{ErrorCode::kIo,
                       path_ + ": read at offset " + std::to_string(pos_) + ": " + Errno(errno)};
        return tl::unexpected(*error_);
      }
      if (got == 0) eof_ = true;
      pos_ += static_cast<uint64_t>(got);
      return static_cast<size_t>(got);
    }
  }
  uint64_t RawBytesRead() const override { return pos_; }
  std::string_view Name() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  uint64_t pos_ = 0;
  bool eof_ = false;
  std::optional<Error> error_;
};

}  // namespace

bool PathWithin(const std::string& real, const Confinement& dirs) {
  for (const std::string& dir : dirs) {
    if (dir == "/" ||
        (real.size() > dir.size() && real.starts_with(dir) && real[dir.size()] == '/'))
      return true;
  }
  return false;
}

Result<int> OpenReadOnly(const std::string& path, const Confinement* confine_to) {
  int fd;
  // O_NONBLOCK so that opening a FIFO does not wait for a writer.
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int err = errno;
    return MakeError(OpenErrorCode(err), path + ": open: " + Errno(err));
  }
  if (confine_to == nullptr) return fd;
  // The kernel's name of the open file: every link resolved, whatever
  // happened to the path since.
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  char buf[PATH_MAX + 1];
  const ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
  if (n <= 0 || n >= PATH_MAX) {
    const int err = errno;
    ::close(fd);
    return MakeError(ErrorCode::kPermission, path + ": cannot tell where it lies (" + link + ": " +
                                                 Errno(err) +
                                                 "): not read outside the watched roots");
  }
  const std::string real(buf, static_cast<size_t>(n));
  if (!PathWithin(real, *confine_to)) {
    ::close(fd);
    return MakeError(ErrorCode::kPermission, path + ": lies outside the watched roots (real path " +
                                                 real +
                                                 "): not read; serve --follow-symlinks allows it");
  }
  return fd;
}

Result<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path,
                                                   const Confinement* confine_to) {
  Result<int> opened = OpenReadOnly(path, confine_to);
  if (!opened) return tl::unexpected(opened.error());
  const int fd = *opened;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return MakeError(ErrorCode::kIo, path + ": fstat: " + Errno(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return MakeError(ErrorCode::kUnsupported,
                     path + (S_ISDIR(st.st_mode) ? ": is a directory" : ": not a regular file"));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return std::unique_ptr<ByteSource>(new FileSource(fd, path));
}

}  // namespace profwatch::read
