#include "aggregate/interval_spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace profwatch::aggregate {
namespace {

constexpr size_t kIntervalBytes = sizeof(Interval);
static_assert(kIntervalBytes == 16);

}  // namespace

Result<std::unique_ptr<SpillFile>> SpillFile::Create(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    // Filesystems without O_TMPFILE: create, then unlink at once.
    std::string templ = dir + "/profwatch-spill-XXXXXX";
    fd = ::mkostemp(templ.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(templ.c_str());
  }
  if (fd < 0) {
    return MakeError(ErrorCode::kIo, "cannot create an interval spill file in " + dir + ": " +
                                         std::strerror(errno));
  }
  return std::unique_ptr<SpillFile>(new SpillFile(fd));
}

SpillFile::~SpillFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<SpillFile::Run> SpillFile::Write(const Interval* v, size_t n) {
  // Reserve the range first: concurrent writers (Finish's device threads
  // merging runs) each fill their own.
  const Run run{Reserve(n), n};
  Status st = WriteAt(run.offset, v, n);
  if (!st) return tl::unexpected(st.error());
  return run;
}

Status SpillFile::WriteAt(uint64_t index, const Interval* v, size_t n) {
  const char* p = reinterpret_cast<const char*>(v);
  size_t left = n * kIntervalBytes;
  off_t at = static_cast<off_t>(index * kIntervalBytes);
  while (left > 0) {
    ssize_t w = ::pwrite(fd_, p, left, at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return MakeError(ErrorCode::kIo, std::string("interval spill file write failed: ") +
                                           (w < 0 ? std::strerror(errno) : "no space"));
    }
    p += w;
    at += w;
    left -= static_cast<size_t>(w);
  }
  return {};
}

Status SpillFile::Read(uint64_t index, Interval* out, size_t n) const {
  char* p = reinterpret_cast<char*>(out);
  size_t left = n * kIntervalBytes;
  off_t at = static_cast<off_t>(index * kIntervalBytes);
  while (left > 0) {
    ssize_t r = ::pread(fd_, p, left, at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      return MakeError(ErrorCode::kIo, std::string("interval spill file read failed: ") +
                                           (r < 0 ? std::strerror(errno) : "short read"));
    }
    p += r;
    at += r;
    left -= static_cast<size_t>(r);
  }
  return {};
}

RunCursor RunCursor::Memory(const std::vector<Interval>* v) {
  RunCursor c;
  c.in_memory_ = true;
  c.mem_ = v->data();
  c.end_ = v->size();
  return c;
}

RunCursor RunCursor::File(const SpillFile* file, SpillFile::Run run, size_t buffer_intervals) {
  RunCursor c;
  c.file_ = file;
  c.file_offset_ = run.offset;
  c.end_ = run.count;
  // Never larger than the run: many short runs must not cost full buffers.
  c.buffer_intervals_ = std::max<size_t>(1, std::min<uint64_t>(buffer_intervals, run.count));
  return c;
}

bool RunCursor::NextFromFile(Interval* out) {
  if (pos_ >= end_ || error_) return false;
  if (buf_pos_ == buf_len_) {
    // Allocated at the first read, not with the cursor: a merge holds all its
    // runs' cursors but reads at most max_fan_in of them at a time, so memory
    // stays bounded however many runs a huge trace spilled.
    if (buf_.empty()) buf_.resize(buffer_intervals_);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf_.size(), end_ - pos_));
    if (auto st = file_->Read(file_offset_ + pos_, buf_.data(), n); !st) {
      error_ = st.error();
      return false;
    }
    buf_pos_ = 0;
    buf_len_ = n;
  }
  *out = buf_[buf_pos_++];
  ++pos_;
  return true;
}

UnionStream::UnionStream(std::vector<RunCursor> runs, SpillFile* file, size_t max_fan_in,
                         size_t buffer_intervals) {
  max_fan_in = std::max<size_t>(2, max_fan_in);
  // External merge passes: only file-backed cursors cost buffers, but keep it
  // simple and bound the number of runs open at once.
  while (file != nullptr && runs.size() > max_fan_in) {
    std::vector<RunCursor> next;
    for (size_t i = 0; i < runs.size(); i += max_fan_in) {
      const size_t end = std::min(runs.size(), i + max_fan_in);
      if (end - i == 1) {
        next.push_back(std::move(runs[i]));
        continue;
      }
      // The union is never longer than its inputs: reserve that much, so the
      // merged run is contiguous even while other threads append theirs.
      uint64_t capacity = 0;
      for (size_t k = i; k < end; ++k) capacity += runs[k].remaining();
      std::vector<RunCursor> group(
          std::make_move_iterator(runs.begin() + static_cast<ptrdiff_t>(i)),
          std::make_move_iterator(runs.begin() + static_cast<ptrdiff_t>(end)));
      UnionStream merged(std::move(group), nullptr, max_fan_in, buffer_intervals);
      const uint64_t start = file->Reserve(capacity);
      uint64_t written = 0;
      std::vector<Interval> out;
      out.reserve(buffer_intervals);
      Interval iv;
      auto flush = [&]() -> bool {
        if (out.empty()) return true;
        Status w = file->WriteAt(start + written, out.data(), out.size());
        if (!w) {
          error_ = w.error();
          return false;
        }
        written += out.size();
        out.clear();
        return true;
      };
      bool ok = true;
      while (ok && merged.Next(&iv)) {
        out.push_back(iv);
        if (out.size() == buffer_intervals) ok = flush();
      }
      if (ok) ok = flush();
      if (merged.error() && !error_) error_ = merged.error();
      if (!ok || error_) {
        runs_.clear();
        return;  // stream ends empty; error() tells
      }
      next.push_back(RunCursor::File(file, {start, written}, buffer_intervals));
    }
    runs = std::move(next);
  }
  runs_ = std::move(runs);
  Init();
}

void UnionStream::Init() {
  head_.resize(runs_.size());
  heap_.clear();
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (runs_[i].Next(&head_[i])) {
      heap_.emplace_back(head_[i].start, static_cast<uint32_t>(i));
    } else if (runs_[i].error() && !error_) {
      error_ = runs_[i].error();
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
}

bool UnionStream::NextRaw(Interval* out) {
  if (heap_.empty()) return false;
  // The top run's next interval replaces it in place and sinks: a run often
  // stays on top for several intervals, and one sift costs half of a pop
  // plus a push (a quarter of Finish went to this heap).
  const uint32_t r = heap_.front().second;
  *out = head_[r];
  if (runs_[r].Next(&head_[r])) {
    heap_.front().first = head_[r].start;
  } else {
    if (runs_[r].error() && !error_) error_ = runs_[r].error();
    heap_.front() = heap_.back();
    heap_.pop_back();
  }
  if (heap_.size() > 1) SiftDownTop();
  return true;
}

void UnionStream::SiftDownTop() {
  const size_t n = heap_.size();
  if (n < 2) return;
  const std::pair<int64_t, uint32_t> moving = heap_[0];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    // By start alone: which of two equal starts comes first does not change a union.
    if (child + 1 < n && heap_[child + 1].first < heap_[child].first) ++child;
    if (!(heap_[child].first < moving.first)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = moving;
}

bool UnionStream::Next(Interval* out) {
  Interval iv;
  while (NextRaw(&iv)) {
    if (iv.end <= iv.start) continue;
    if (!have_pending_) {
      pending_ = iv;
      have_pending_ = true;
    } else if (iv.start <= pending_.end) {
      pending_.end = std::max(pending_.end, iv.end);
    } else {
      *out = pending_;
      pending_ = iv;
      return true;
    }
  }
  if (have_pending_) {
    *out = pending_;
    have_pending_ = false;
    return true;
  }
  return false;
}

BusyExposed BusyAndExposed(UnionStream& compute, UnionStream& comm) {
  BusyExposed r;
  Interval c;
  bool have_c = compute.Next(&c);
  int64_t compute_len = 0;
  if (have_c) compute_len += c.end - c.start;
  auto advance = [&] {
    have_c = compute.Next(&c);
    if (have_c) compute_len += c.end - c.start;
  };
  Interval m;
  while (comm.Next(&m)) {
    int64_t cur = m.start;
    while (cur < m.end) {
      while (have_c && c.end <= cur) advance();
      if (!have_c || c.start >= m.end) {
        r.exposed += m.end - cur;
        break;
      }
      if (c.start > cur) r.exposed += c.start - cur;
      cur = c.end;
    }
  }
  while (have_c) advance();  // the rest of compute counts towards busy
  r.busy = compute_len + r.exposed;
  return r;
}

}  // namespace profwatch::aggregate
