// Graphs: what a capture recorded, replayed.

#include <launchwatch/runtime/graph.hpp>

#include <launchwatch/dry_run.hpp>
#include <launchwatch/errors.hpp>

#include "runtime/graph_state.hpp"

namespace launchwatch {

void graph::replay() const {
  if (!state_ || !state_->recorded || state_->recorded->size() == 0) return;
  // A dry run leaves every buffer as it was, and a replay is launches: skipped like them. (Replays
  // are not reported, so there is nothing else to do.)
  if (dry_run()) return;
  auto& on = state_->on;
  if (on->capturing()) {
    throw capture_error{
        "graph::replay refused: the stream this graph replays on is recording a capture now; "
        "replay it after that capture ends"};
  }
  const std::uint64_t point = state_->recorded->replay(*on);
  for (const auto& a : state_->references) a->add_use(on, point);
}

std::size_t graph::size() const noexcept {
  return state_ && state_->recorded ? state_->recorded->size() : 0;
}

}  // namespace launchwatch
