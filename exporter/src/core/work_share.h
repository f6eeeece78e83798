// WorkShare: lets a thread that would otherwise wait lend its time to
// another stage. The read-ahead thread, whose buffers are full because the
// parser is behind, decodes JSON events for the parser instead of sleeping;
// read/ and parse/ only know this class, not each other.
//
// The consumer (the stage with work to hand out) offers one chore: a
// function that does one unit of work and returns false when there was none.
// It calls Notify() whenever new work is queued. The lender (the thread with
// time) registers a wake callback, and calls RunOne() when it is idle. All
// calls are thread-safe. Offer({}) waits for a chore in progress to finish,
// so the consumer may be destroyed right after it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

namespace profwatch {

class WorkShare {
 public:
  using Chore = std::function<bool()>;

  // Consumer: offers `chore`, or withdraws the offer with an empty function.
  void Offer(Chore chore);
  // Consumer: new work may be there; wakes the lender.
  void Notify();
  // Lender: runs one unit of offered work. False when nothing was done.
  bool RunOne();
  // Lender: called (from the consumer's thread) on Notify; empty to clear.
  // It must not call back into this WorkShare.
  void SetWake(std::function<void()> wake);
  // Counts Notify() calls: a lender that saw generation G, then found no
  // work, may sleep until it changes.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  std::mutex chore_mu_;  // held while a chore runs
  Chore chore_;
  std::mutex wake_mu_;
  std::function<void()> wake_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace profwatch
