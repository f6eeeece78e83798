#include "core/work_share.h"

#include <utility>

namespace profwatch {

void WorkShare::Offer(Chore chore) {
  std::lock_guard lock(chore_mu_);
  chore_ = std::move(chore);
}

void WorkShare::Notify() {
  // The increment comes before the wake, so a lender checking generation()
  // under its own lock either sees it or is woken.
  generation_.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard lock(wake_mu_);
  if (wake_) wake_();
}

bool WorkShare::RunOne() {
  std::lock_guard lock(chore_mu_);
  return chore_ && chore_();
}

void WorkShare::SetWake(std::function<void()> wake) {
  std::lock_guard lock(wake_mu_);
  wake_ = std::move(wake);
}

}  // namespace profwatch
