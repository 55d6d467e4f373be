// A Vulkan graph's replay: its launches recorded again into the replaying stream.
#include "backend/vulkan/vulkan_graph.hpp"

#include <launchwatch/errors.hpp>

namespace launchwatch::detail::vulkan {

std::uint64_t vulkan_graph::replay(stream& on) {
  auto* target = dynamic_cast<vulkan_stream*>(&on);
  if (target == nullptr || &target->owner() != owner_) {
    throw invalid_launch{"a graph replays only on a stream of the device that recorded it"};
  }
  return target->replay(launches_);
}

}  // namespace launchwatch::detail::vulkan
