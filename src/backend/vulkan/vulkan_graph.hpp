// A Vulkan graph: the launches a capture recorded, replayed into a stream's open batch.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/vulkan/vulkan_stream.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::vulkan {

/// A captured sequence of launches (backend.hpp's `recorded_graph`): replayed by recording them
/// again into the replaying stream's open batch, as wgpu's software graphs do.
class vulkan_graph final : public recorded_graph {
 public:
  vulkan_graph(const vulkan_device& owner, std::vector<recorded_launch> launches)
      : owner_{&owner}, launches_{std::move(launches)} {}
  std::size_t size() const noexcept override { return launches_.size(); }
  std::uint64_t replay(stream& on) override;

 private:
  const vulkan_device* owner_;
  std::vector<recorded_launch> launches_;
};

}  // namespace launchwatch::detail::vulkan
