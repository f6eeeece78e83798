// Bounded-memory interval merging: sorted runs of intervals spilled to an
// unlinked temp file, and a streaming k-way merge over runs in memory or on
// disk. Lets FileAggregator sweep every kernel of a device in time order
// (device_sweep.h) for a trace of any size while holding at most a budget of
// intervals in RAM.
//
// Internal to aggregate/. SpillFile's Write and Read are thread-safe (a
// written run never moves); cursors and streams are not, one per thread.
// Cursors borrow the SpillFile / vectors they read: those must outlive them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "aggregate/intervals.h"
#include "core/result.h"

namespace profwatch::aggregate {

// An unlinked temp file in $TMPDIR (else /tmp) of 16-byte intervals: the
// disk space goes away with the descriptor, even on a crash.
class SpillFile {
 public:
  // A run: `count` intervals from interval index `offset`.
  struct Run {
    uint64_t offset = 0;
    uint64_t count = 0;
  };

  // An unlinked file in `dir` (the CLI's --spill-dir).
  static Result<std::unique_ptr<SpillFile>> Create(const std::string& dir = "/tmp");
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // Appends `n` intervals at the end of the file.
  Result<Run> Write(const Interval* v, size_t n);
  // Reserves room for `n` intervals at the end and returns its first index;
  // WriteAt then fills it, in pieces if need be.
  uint64_t Reserve(uint64_t n) { return end_.fetch_add(n); }
  Status WriteAt(uint64_t index, const Interval* v, size_t n);
  // Reads `n` intervals from index `index`. kIo on a short or failed read.
  Status Read(uint64_t index, Interval* out, size_t n) const;
  // Intervals reserved so far (the file's size / 16 once writes are done).
  uint64_t size() const { return end_.load(); }

 private:
  explicit SpillFile(int fd) : fd_(fd) {}
  int fd_ = -1;
  std::atomic<uint64_t> end_{0};
};

// Reads one sorted run, from memory (no copy) or from a SpillFile through a
// fixed buffer. Within a run intervals are sorted by start.
class RunCursor {
 public:
  static RunCursor Memory(const std::vector<Interval>* v);
  static RunCursor File(const SpillFile* file, SpillFile::Run run, size_t buffer_intervals);

  // False at the end of the run or on a read error (see error()).
  bool Next(Interval* out) {
    if (in_memory_) {  // inline: Finish reads every interval of a file through here
      if (pos_ >= end_) return false;
      *out = mem_[pos_++];
      return true;
    }
    return NextFromFile(out);
  }
  // Intervals not yet returned.
  uint64_t remaining() const { return end_ - pos_; }
  const std::optional<Error>& error() const { return error_; }
  // Intervals of read buffer held now (file runs allocate it at the first read).
  size_t buffered() const { return buf_.size(); }
  // Caps the read buffer of a file run (before its first read).
  void LimitBuffer(size_t intervals);

 private:
  bool NextFromFile(Interval* out);

  bool in_memory_ = false;
  const Interval* mem_ = nullptr;
  const SpillFile* file_ = nullptr;
  uint64_t pos_ = 0;  // next interval of the run
  uint64_t end_ = 0;  // run length
  uint64_t file_offset_ = 0;
  size_t buffer_intervals_ = 0;  // file runs: the read buffer's size
  std::vector<Interval> buf_;
  size_t buf_pos_ = 0;
  size_t buf_len_ = 0;
  std::optional<Error> error_;
};

// A run and its tag (the kernel name slot of its intervals).
struct TaggedRun {
  RunCursor cursor;
  uint32_t tag = 0;
};

// Every interval of several tagged runs in start order, each with its run's
// tag; nothing is joined or dropped. When more than `max_fan_in` runs are
// given, runs of the same tag are first merged into one run appended to
// `file` (external merge passes), and the read buffers are shrunk so all
// open runs together hold about max_fan_in * buffer_intervals intervals.
class MergeStream {
 public:
  // `file` may be null when every run is in memory.
  MergeStream(std::vector<TaggedRun> runs, SpillFile* file, size_t max_fan_in = 128,
              size_t buffer_intervals = 4096);
  bool Next(Interval* out, uint32_t* tag);
  // First read/write error met, if any (the stream then ends early).
  const std::optional<Error>& error() const { return error_; }

 private:
  // Merges `group` (one tag) into one run of `file`, in passes of at most
  // `fan_in` runs.
  std::optional<TaggedRun> MergeGroup(std::vector<TaggedRun> group, SpillFile* file, size_t fan_in,
                                      size_t buffer_intervals);
  void Init();
  void SiftDownTop();  // restores the heap after its top changed

  std::vector<TaggedRun> runs_;
  std::vector<std::pair<int64_t, uint32_t>> heap_;  // (start, run) min-heap
  std::vector<Interval> head_;                      // current interval of each run
  std::optional<Error> error_;
};

}  // namespace profwatch::aggregate
