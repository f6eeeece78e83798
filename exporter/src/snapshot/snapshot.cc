// RunState's shared window stats (see snapshot.h).
#include "snapshot/snapshot.h"

namespace profwatch::snapshot {

std::shared_ptr<const aggregate::WindowStats> NoWindowStats() {
  static const auto* const empty =
      new std::shared_ptr<const aggregate::WindowStats>(std::make_shared<aggregate::WindowStats>());
  return *empty;
}

aggregate::WindowStats& RunState::MutableStats() {
  auto copy = std::make_shared<aggregate::WindowStats>(*stats);
  aggregate::WindowStats& edit = *copy;
  stats = std::move(copy);
  return edit;
}

}  // namespace profwatch::snapshot
