// A captured CUDA graph, instantiated and replayed (backend/gpu/gpu_graph.hpp over CUDA's graphs).
#pragma once

#include "backend/gpu/gpu_graph.hpp"
#include "cuda_runtime.hpp"

namespace launchwatch::detail::cuda {

/// A captured CUDA graph, instantiated (backend.hpp's `recorded_graph`).
using cuda_graph = gpu::gpu_graph<cuda_runtime>;

}  // namespace launchwatch::detail::cuda
