// A captured GPU graph, instantiated and replayed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "device_guard.hpp"
#include "gpu_device.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::gpu {

template <class R>
class gpu_stream;

/// A captured graph, instantiated (backend.hpp's `recorded_graph`).
template <class R>
class gpu_graph final : public recorded_graph {
 public:
  gpu_graph(std::shared_ptr<gpu_device<R>> owner, typename R::graph_handle graph,
            typename R::graph_exec_handle executable, std::size_t launches)
      : owner_{std::move(owner)}, graph_{graph}, executable_{executable}, launches_{launches} {}

  ~gpu_graph() override {
    device_guard<R> on{owner_->index()};
    (void)R::graph_exec_destroy(executable_);
    (void)R::graph_destroy(graph_);
  }

  std::size_t size() const noexcept override { return launches_; }

  std::uint64_t replay(stream& on) override {
    auto* target = dynamic_cast<gpu_stream<R>*>(&on);
    if (target == nullptr || &target->owner() != owner_.get()) {
      throw invalid_launch{fmt::format(
          "launchwatch: a graph recorded on {} device {} can only be replayed on a stream of that "
          "device",
          R::wording.api, owner_->index())};
    }
    return target->replay(executable_);
  }

 private:
  std::shared_ptr<gpu_device<R>> owner_;
  typename R::graph_handle graph_;
  typename R::graph_exec_handle executable_;
  std::size_t launches_;
};

}  // namespace launchwatch::detail::gpu
