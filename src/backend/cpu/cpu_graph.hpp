// A CPU graph: the launches a capture recorded, replayed as one work item of a stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/cpu_stream.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail {

class cpu_device;

/// A captured sequence of launches (backend.hpp's `recorded_graph`), replayed on any stream of the
/// device that recorded it.
class cpu_graph final : public recorded_graph {
 public:
  cpu_graph(const cpu_device& owner, std::vector<cpu_launch> launches)
      : owner_{&owner},
        launches_{std::make_shared<const std::vector<cpu_launch>>(std::move(launches))} {}

  std::size_t size() const noexcept override { return launches_->size(); }
  std::uint64_t replay(stream& on) override;

 private:
  const cpu_device* owner_;
  std::shared_ptr<const std::vector<cpu_launch>> launches_;
};

}  // namespace launchwatch::detail
