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

void RunCursor::LimitBuffer(size_t intervals) {
  if (!in_memory_ && buf_.empty()) {
    buffer_intervals_ = std::max<size_t>(1, std::min(buffer_intervals_, intervals));
  }
}

MergeStream::MergeStream(std::vector<TaggedRun> runs, SpillFile* file, size_t max_fan_in,
                         size_t buffer_intervals) {
  max_fan_in = std::max<size_t>(2, max_fan_in);
  if (file != nullptr && runs.size() > max_fan_in) {
    // Merge passes only within a tag, so every interval keeps its tag.
    std::stable_sort(runs.begin(), runs.end(),
                     [](const TaggedRun& a, const TaggedRun& b) { return a.tag < b.tag; });
    std::vector<TaggedRun> merged;
    for (size_t i = 0; i < runs.size();) {
      size_t end = i + 1;
      while (end < runs.size() && runs[end].tag == runs[i].tag) ++end;
      std::vector<TaggedRun> group(
          std::make_move_iterator(runs.begin() + static_cast<ptrdiff_t>(i)),
          std::make_move_iterator(runs.begin() + static_cast<ptrdiff_t>(end)));
      auto one = MergeGroup(std::move(group), file, max_fan_in, buffer_intervals);
      if (!one) return;  // stream ends empty; error() tells
      merged.push_back(std::move(*one));
      i = end;
    }
    runs = std::move(merged);
    // Still more runs than the fan-in (many tags): smaller buffers each, so
    // the total stays bounded.
    if (runs.size() > max_fan_in) {
      const size_t each = max_fan_in * buffer_intervals / runs.size();
      for (TaggedRun& r : runs) r.cursor.LimitBuffer(std::max<size_t>(64, each));
    }
  }
  runs_ = std::move(runs);
  Init();
}

std::optional<TaggedRun> MergeStream::MergeGroup(std::vector<TaggedRun> group, SpillFile* file,
                                                 size_t fan_in, size_t buffer_intervals) {
  const uint32_t tag = group.front().tag;
  while (group.size() > 1) {
    std::vector<TaggedRun> next;
    for (size_t i = 0; i < group.size(); i += fan_in) {
      const size_t end = std::min(group.size(), i + fan_in);
      if (end - i == 1) {
        next.push_back(std::move(group[i]));
        continue;
      }
      uint64_t total = 0;
      for (size_t k = i; k < end; ++k) total += group[k].cursor.remaining();
      std::vector<TaggedRun> part(
          std::make_move_iterator(group.begin() + static_cast<ptrdiff_t>(i)),
          std::make_move_iterator(group.begin() + static_cast<ptrdiff_t>(end)));
      MergeStream in(std::move(part), nullptr, fan_in, buffer_intervals);
      // Reserved up front, so the run is contiguous while other threads
      // append theirs.
      const uint64_t start = file->Reserve(total);
      uint64_t written = 0;
      std::vector<Interval> out;
      out.reserve(buffer_intervals);
      Interval iv;
      uint32_t unused = 0;
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
      while (ok && in.Next(&iv, &unused)) {
        out.push_back(iv);
        if (out.size() == buffer_intervals) ok = flush();
      }
      if (ok) ok = flush();
      if (in.error() && !error_) error_ = in.error();
      if (!ok || error_) return std::nullopt;
      next.push_back(TaggedRun{RunCursor::File(file, {start, written}, buffer_intervals), tag});
    }
    group = std::move(next);
  }
  return std::move(group.front());
}

void MergeStream::Init() {
  head_.resize(runs_.size());
  heap_.clear();
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (runs_[i].cursor.Next(&head_[i])) {
      heap_.emplace_back(head_[i].start, static_cast<uint32_t>(i));
    } else if (runs_[i].cursor.error() && !error_) {
      error_ = runs_[i].cursor.error();
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
}

bool MergeStream::Next(Interval* out, uint32_t* tag) {
  if (heap_.empty()) return false;
  // The top run's next interval replaces it in place and sinks: a run often
  // stays on top for several intervals, and one sift costs half of a pop
  // plus a push.
  const uint32_t r = heap_.front().second;
  *out = head_[r];
  *tag = runs_[r].tag;
  if (runs_[r].cursor.Next(&head_[r])) {
    heap_.front().first = head_[r].start;
  } else {
    if (runs_[r].cursor.error() && !error_) error_ = runs_[r].cursor.error();
    heap_.front() = heap_.back();
    heap_.pop_back();
  }
  if (heap_.size() > 1) SiftDownTop();
  return true;
}

void MergeStream::SiftDownTop() {
  const size_t n = heap_.size();
  const std::pair<int64_t, uint32_t> moving = heap_[0];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    // By start alone: the sweep settles equal starts itself.
    if (child + 1 < n && heap_[child + 1].first < heap_[child].first) ++child;
    if (!(heap_[child].first < moving.first)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = moving;
}

}  // namespace profwatch::aggregate
