// A captured CUDA graph, instantiated and replayed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cuda_device.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::cuda {

/// A captured CUDA graph, instantiated (backend.hpp's `recorded_graph`).
class cuda_graph final : public recorded_graph {
 public:
  cuda_graph(std::shared_ptr<cuda_device> owner, cudaGraph_t graph, cudaGraphExec_t executable,
             std::size_t launches);
  ~cuda_graph() override;
  std::size_t size() const noexcept override { return launches_; }
  std::uint64_t replay(stream& on) override;

 private:
  std::shared_ptr<cuda_device> owner_;
  cudaGraph_t graph_;
  cudaGraphExec_t executable_;
  std::size_t launches_;
};

}  // namespace launchwatch::detail::cuda
