// A captured CUDA graph, instantiated and replayed.

#include "cuda_graph.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "cuda_common/capture_mode.hpp"
#include "cuda_check.hpp"
#include "cuda_stream.hpp"

namespace launchwatch::detail::cuda {

cuda_graph::cuda_graph(std::shared_ptr<cuda_device> owner, cudaGraph_t graph,
                       cudaGraphExec_t executable, std::size_t launches)
    : owner_{std::move(owner)}, graph_{graph}, executable_{executable}, launches_{launches} {}

cuda_graph::~cuda_graph() {
  device_guard on{owner_->index()};
  (void)cudaGraphExecDestroy(executable_);
  (void)cudaGraphDestroy(graph_);
}

std::uint64_t cuda_graph::replay(stream& on) {
  auto* target = dynamic_cast<cuda_stream*>(&on);
  if (target == nullptr || &target->owner() != owner_.get()) {
    throw invalid_launch{fmt::format(
        "launchwatch: a graph recorded on CUDA device {} can only be replayed on a stream of that "
        "device",
        owner_->index())};
  }
  return target->replay(executable_, "graph");
}

}  // namespace launchwatch::detail::cuda
