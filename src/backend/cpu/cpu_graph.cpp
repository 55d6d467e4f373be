// A CPU graph's replay.
#include "backend/cpu/cpu_graph.hpp"

#include <launchwatch/errors.hpp>

namespace launchwatch::detail {

std::uint64_t cpu_graph::replay(stream& on) {
  auto* cpu = dynamic_cast<cpu_stream*>(&on);
  if (cpu == nullptr || &cpu->owner() != owner_) {
    throw invalid_launch{"a graph replays only on a stream of the device that recorded it"};
  }
  return cpu->submit_replay(launches_);
}

}  // namespace launchwatch::detail
