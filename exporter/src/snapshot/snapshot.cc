// RunState's shared window stats and figures (see snapshot.h).
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

void RefreshFigures(RunState& rs) {
  if (!rs.has_window) {
    rs.figures.reset();
    return;
  }
  const figures::StepTime step = rs.step();
  if (rs.figures && rs.figures->stats == rs.stats && rs.figures->step == step) return;
  rs.figures = std::make_shared<const figures::WindowFigures>(figures::FiguresOf(rs.stats, step));
}

}  // namespace profwatch::snapshot
