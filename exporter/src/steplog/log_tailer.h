// LogTailer: follows one growing text file (a training log) by path and hands
// back complete lines. Not thread-safe: one owner polls it (the daemon's log
// thread, or `analyze --log` once). Holds at most one open descriptor.
//
// Identity: the file is keyed by dev+inode+offset plus a CRC-32 of the bytes
// just before the offset (up to TailerOptions::fingerprint_bytes). Each Poll()
// re-stats the path and re-checks that fingerprint, which detects:
//   - a path that no longer names the open file (rotated: a new file at the
//     path; renamed away or deleted: nothing there): the old file is drained
//     through the still-open descriptor within that Poll()'s byte budget
//     (its last unterminated line is returned too when the drain reaches its
//     end), then closed; a new file at the path is read from offset 0. What
//     the old file holds beyond that budget, and writes to it after the
//     drain, are not read: the writer is expected to reopen the path soon
//     after the rename, and a file that is no longer the log (a link swapped
//     for another, a huge file unlinked) costs at most one budget more.
//   - copy-truncate / truncate-and-rewrite (same inode, size below the
//     offset, or fingerprint changed): restarts at offset 0; a partial line
//     held from before is dropped.
//   - a file that appears late: Poll() returns no lines until it exists.
// Confinement: with Poll()'s `confine_to`, a file is read only when the
// real path of the opened descriptor lies under one of its directories
// (read::OpenReadOnly, the check traces get), and only a regular file.
// Ownership: with SetTrust(), every open (the first, and each after a
// rotation) must find the file to be the run's (OpenRunLog below), else
// Poll() fails with kPermission and untrusted() is true.
// Line numbers: line_numbers() gives each returned line's number in its
// file ('\n's before it, plus one), for messages that must name a line
// rather than quote it.
// Lines: '\n' and '\r' both end a line (CRLF files, progress bars that redraw
// with '\r'); empty lines are skipped. A partial last line is not returned
// until its terminator arrives. A line longer than max_line_bytes is dropped
// whole (its bytes skipped up to the next terminator) and counted in
// Counters::overlong_lines, so memory stays bounded by the options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "read/byte_source.h"

namespace profwatch::steplog {

struct TailerOptions {
  size_t max_line_bytes = 64 * 1024;    // longer lines are dropped and counted
  size_t chunk_bytes = 64 * 1024;       // one read() size
  size_t max_bytes_per_poll = 8 << 20;  // bounds the work and output of one Poll()
  size_t fingerprint_bytes = 4096;      // bytes before the offset that are hashed
};

// Where the tailer is, serializable so the daemon can persist it and resume
// without re-reading a whole log. `offset` is always at a line boundary (or
// inside a line being skipped as overlong): a held partial line is re-read.
struct TailerState {
  uint64_t dev = 0;
  uint64_t inode = 0;
  uint64_t offset = 0;
  uint32_t fingerprint_len = 0;   // bytes [offset - len, offset) hashed
  uint32_t fingerprint = 0;       // CRC-32 of those bytes
  bool in_overlong_line = false;  // skipping the rest of a dropped line
  uint64_t newlines = 0;          // '\n' bytes in [0, offset): line numbers

  // One line of text: "v1 dev=.. inode=.. offset=.. fp_len=.. fp=.. overlong=0|1
  // newlines=.." (newlines= may be absent: older text reads as 0).
  std::string Serialize() const;
  // kCorrupt when `text` is not what Serialize() writes.
  static Result<TailerState> Parse(std::string_view text);

  bool operator==(const TailerState&) const = default;
};

// Whose a log found by a pattern may be (serve's --log-glob discovery; a
// log named by --log is read where it lies): the file is the run's when
// the real path of the opened descriptor lies under one of `inside` (the
// run's and the job's real directories), or when it is owned by `owner`
// (the uid that created the run directory) and was opened without
// following a symlink as its last component (O_NOFOLLOW, then fstat of that
// descriptor: no check of a path that a link swap could change after it).
// A link as the last component is the run's only by where it leads.
struct LogTrust {
  uint32_t owner = UINT32_MAX;  // UINT32_MAX: no owner is trusted
  std::vector<std::string> inside;
};

// Opens `path` as OpenReadOnly(path, confine_to) does and, with `trust`,
// keeps the descriptor only when the file is the run's (LogTrust) and lies
// under `confine_to`; else kPermission naming why, and `*untrusted` (when
// not null) set true. Other failures (missing, unreadable) leave it false.
// The caller closes the descriptor.
Result<int> OpenRunLog(const std::string& path, const read::Confinement* confine_to,
                       const LogTrust* trust, bool* untrusted = nullptr);

class LogTailer {
 public:
  struct Counters {
    uint64_t bytes_read = 0;      // bytes read from files (re-reads included)
    uint64_t lines = 0;           // lines returned
    uint64_t overlong_lines = 0;  // lines dropped for exceeding max_line_bytes
    uint64_t rotations = 0;       // a different file appeared at the path
    uint64_t truncations = 0;     // same file shrank or was rewritten
  };

  explicit LogTailer(std::string path, TailerOptions options = {});
  // Resumes from a persisted state: used only if the file at `path` still has
  // that dev+inode, is at least `offset` long and the fingerprint matches;
  // otherwise the file is read from offset 0 (counted as a rotation or
  // truncation).
  LogTailer(std::string path, TailerState resume, TailerOptions options = {});
  ~LogTailer();
  LogTailer(const LogTailer&) = delete;
  LogTailer& operator=(const LogTailer&) = delete;

  // Reads what was appended since the last call (at most max_bytes_per_poll,
  // and at most `max_bytes` when smaller; with 0 it only checks the path:
  // a file no longer at it is closed) and returns the complete lines,
  // oldest first, without terminators. A missing file is not an error: the
  // result is empty and present() is false. `confine_to` (borrowed for the
  // call; null: anywhere) bounds where a file may be opened (see above).
  // Errors: kPermission (cannot open, or outside `confine_to`), kUnsupported
  // (not a regular file), kIo (stat/read failed). On an error the state does
  // not advance and the next Poll() retries; lines already drained from a
  // rotated-away file in the same call are returned instead of the error
  // (which recurs next call).
  Result<std::vector<std::string>> Poll(const read::Confinement* confine_to = nullptr,
                                        size_t max_bytes = SIZE_MAX);
  // From now on a file is opened only when it is the run's (LogTrust).
  void SetTrust(LogTrust trust) { trust_ = std::move(trust); }
  // True when the last Poll() failed because the file at the path is not
  // the run's (SetTrust).
  bool untrusted() const { return untrusted_; }
  // The line number of each line the last Poll() returned, in order.
  const std::vector<uint64_t>& line_numbers() const { return line_numbers_; }

  // True when the last Poll() read up to the end of the file (false when it
  // stopped at max_bytes_per_poll: call again for the rest).
  bool at_eof() const { return at_eof_; }
  // True while a file is open (it existed at the last Poll()).
  bool present() const { return fd_ >= 0; }
  // The modification time of the file the last Poll()'s lines came from, read
  // after them: every one of those lines was written at or before it. nullopt
  // when that Poll() returned no lines. A log read from its start after a
  // restart is old; this tells how old.
  std::optional<TimePoint> last_write_time() const { return last_write_time_; }
  const TailerState& state() const { return state_; }
  const Counters& counters() const { return counters_; }
  const std::string& path() const { return path_; }

 private:
  void Close();
  // Re-checks size and fingerprint of the open file; resets to 0 if rewritten.
  Status CheckTruncation();
  // Reads from state_.offset up to EOF or the byte budget, appending lines.
  // With `final` the file cannot grow any more and an unterminated last line
  // is returned as well.
  Status ReadLines(std::vector<std::string>& out, bool final);
  Result<uint32_t> Fingerprint(uint64_t end, uint32_t len) const;
  // Hashes the bytes before state_.offset; on a read error the fingerprint is
  // cleared (one poll without rewrite detection beats re-reading the log).
  void UpdateFingerprint();
  void StartFile(int fd, uint64_t dev, uint64_t inode);

  std::string path_;
  TailerOptions options_;
  TailerState state_;
  bool resume_pending_ = false;  // state_ came from the constructor, unverified
  int fd_ = -1;
  bool at_eof_ = false;
  std::optional<TimePoint> last_write_time_;
  size_t budget_ = 0;  // bytes the current Poll() may still read
  Counters counters_;
  std::vector<uint64_t> line_numbers_;
  std::string buffer_;  // read chunk, reused
  std::optional<LogTrust> trust_;
  bool untrusted_ = false;
};

}  // namespace profwatch::steplog
