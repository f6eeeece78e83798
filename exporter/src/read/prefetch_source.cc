#include "read/prefetch_source.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/byte_buffer.h"
#include "read/gzip_check.h"

namespace profwatch::read {
namespace {

class PrefetchSource final : public ByteSource {
 public:
  PrefetchSource(std::unique_ptr<ByteSource> inner, size_t buffer_bytes, size_t buffers,
                 std::shared_ptr<WorkShare> share)
      : inner_(std::move(inner)), name_(inner_->Name()), slots_(buffers), share_(std::move(share)) {
    for (Slot& s : slots_) s.data.resize(buffer_bytes);
  }

  ~PrefetchSource() override {
    if (share_) share_->SetWake({});
    if (producer_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
      }
      space_.notify_all();
      producer_.join();
    }
  }

  // Starts the producer. False when no thread could be created.
  bool Start() {
    if (share_) {
      share_->SetWake([this] {
        std::lock_guard<std::mutex> lock(mu_);
        space_.notify_all();
      });
    }
    try {
      producer_ = std::thread([this] { Produce(); });
    } catch (const std::system_error&) {
      if (share_) share_->SetWake({});
      return false;
    }
    return true;
  }

  std::unique_ptr<ByteSource> ReleaseInner() { return std::move(inner_); }

  Result<size_t> Read(char* buf, size_t n) override {
    if (terminal_error_) return tl::unexpected(*terminal_error_);
    if (terminal_eof_) return size_t{0};
    for (;;) {
      if (have_slot_) {
        Slot& s = slots_[head_];
        if (pos_ < s.len) {
          const size_t k = std::min(n, s.len - pos_);
          std::memcpy(buf, s.data.data() + pos_, k);
          pos_ += k;
          return k;
        }
        // Slot drained: its end state (if any) comes right after its bytes.
        raw_ = s.raw_after;
        if (s.error) {
          terminal_error_ = s.error;
          return tl::unexpected(*terminal_error_);
        }
        if (s.eof) {
          terminal_eof_ = true;
          return size_t{0};
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          head_ = (head_ + 1) % slots_.size();
          --filled_;
        }
        space_.notify_one();
        have_slot_ = false;
      }
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [&] { return filled_ > 0; });
      }
      have_slot_ = true;
      pos_ = 0;
      raw_ = slots_[head_].raw_before;
      if (slots_[head_].check_here) CheckGzipMembers(slots_[head_]);
    }
  }

  uint64_t RawBytesRead() const override { return raw_; }
  std::string_view Name() const override { return name_; }

 private:
  struct Slot {
    ByteBuffer data;  // written by the producer before the reader sees it
    size_t len = 0;
    uint64_t raw_before = 0;     // inner RawBytesRead() before the slot's bytes
    uint64_t raw_after = 0;      // ... and after them
    bool eof = false;            // the inner source ended after these bytes
    std::optional<Error> error;  // ... or failed after them
    // With the gzip checks handed over: the reader checks this slot's bytes
    // against the members that end in it.
    bool check_here = false;
    uint64_t out_before = 0;  // inner bytes before this slot's
    std::vector<GzipMemberCheck> checks;
  };

  // The reader's side of HandOverGzipChecks (read/gzip_check.h), on the
  // parsing thread, which has time to spare, rather than on the read-ahead
  // thread, whose inflating is the one stage nothing else can do.
  void CheckGzipMembers(Slot& s) {
    checker_.Check(s.data.data(), s.out_before, s.checks, s.len, s.eof, s.error, s.raw_after);
  }

  void Produce() {
    // Here, not in Start: once the thread runs, nothing reads `inner_` but it.
    const bool check_here = inner_->HandOverGzipChecks();
    size_t tail = 0;
    uint64_t raw = inner_->RawBytesRead();
    uint64_t out = 0;
    for (;;) {
      if (!AwaitSpace()) return;
      // The slot at `tail` is the producer's until it is published.
      Slot& s = slots_[tail];
      s.len = 0;
      s.eof = false;
      s.error.reset();
      s.raw_before = raw;
      s.check_here = check_here;
      s.out_before = out;
      s.checks.clear();
      bool last = false;
      while (s.len < s.data.size()) {
        Result<size_t> got = inner_->Read(s.data.data() + s.len, s.data.size() - s.len);
        if (check_here) inner_->TakeGzipChecks(s.checks);
        if (!got) {
          s.error = got.error();
          last = true;
          break;
        }
        if (*got == 0) {
          s.eof = true;
          last = true;
          break;
        }
        s.len += *got;
        out += *got;
        if (stop_.load(std::memory_order_relaxed)) return;  // reader gone
      }
      raw = inner_->RawBytesRead();
      s.raw_after = raw;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++filled_;
      }
      ready_.notify_one();
      if (last) {
        // The reader still has the ring's buffers to parse: help with that
        // until stopped rather than end (the end of a file is otherwise one
        // thread's).
        if (share_) LendUntil([] { return false; });
        return;
      }
      tail = (tail + 1) % slots_.size();
    }
  }

  // Waits for a free slot; while the ring is full, does the reader's spare
  // work (WorkShare) instead of sleeping, and goes back to inflating as soon
  // as a slot frees: inflating is the one stage nothing else can do. False
  // on stop.
  bool AwaitSpace() {
    return LendUntil([this] { return filled_ < slots_.size(); });
  }

  // Runs the reader's offered chores (or, without a WorkShare, sleeps) until
  // `ready()` holds, checked under mu_ between chores. False on stop.
  template <class Ready>
  bool LendUntil(Ready ready) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (stop_) return false;
      if (ready()) return true;
      if (!share_) {
        space_.wait(lock, [&] { return stop_ || ready(); });
        continue;
      }
      const uint64_t seen = share_->generation();
      lock.unlock();
      bool worked = false;
      while (share_->RunOne()) {
        worked = true;
        std::lock_guard<std::mutex> check(mu_);
        if (stop_ || ready()) break;
      }
      lock.lock();
      if (worked) continue;
      space_.wait(lock, [&] { return stop_ || ready() || share_->generation() != seen; });
    }
  }

  std::unique_ptr<ByteSource> inner_;
  std::string name_;
  std::vector<Slot> slots_;
  std::shared_ptr<WorkShare> share_;  // may be null

  std::mutex mu_;
  std::condition_variable ready_;  // a slot was published
  std::condition_variable space_;  // a slot was freed, or stop
  size_t filled_ = 0;              // published slots not yet released (guarded)
  std::atomic<bool> stop_{false};  // set under mu_ (for the waits)
  std::thread producer_;

  // Reader-side state (reader thread only).
  size_t head_ = 0;  // written under mu_ too: the producer never reads it
  bool have_slot_ = false;
  size_t pos_ = 0;
  uint64_t raw_ = 0;
  bool terminal_eof_ = false;
  std::optional<Error> terminal_error_;
  GzipMemberChecker checker_;
};

}  // namespace

std::unique_ptr<ByteSource> MakePrefetchSource(std::unique_ptr<ByteSource> inner,
                                               size_t buffer_bytes, size_t buffers,
                                               std::shared_ptr<WorkShare> share) {
  auto p = std::make_unique<PrefetchSource>(std::move(inner), std::max<size_t>(1, buffer_bytes),
                                            std::max<size_t>(2, buffers), std::move(share));
  if (!p->Start()) return p->ReleaseInner();
  return p;
}

}  // namespace profwatch::read
