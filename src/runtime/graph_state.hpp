// What a capture recorded, as the public `graph` holds it.
#pragma once

#include <memory>
#include <vector>

#include "runtime/allocation.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail {

struct graph_state {
  /// The stream the capture recorded on, where replays run.
  std::shared_ptr<stream> on;
  std::unique_ptr<recorded_graph> recorded;
  /// Every allocation a recorded launch references: kept alive while the graph can replay, and
  /// told of each replay so a read of one waits for it.
  std::vector<std::shared_ptr<allocation>> references;
};

}  // namespace launchwatch::detail
