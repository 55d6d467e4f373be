// A captured HIP graph, instantiated and replayed (backend/gpu/gpu_graph.hpp over HIP's graphs).
#pragma once

#include "backend/gpu/gpu_graph.hpp"
#include "hip_runtime.hpp"

namespace launchwatch::detail::hip {

/// A captured HIP graph, instantiated (backend.hpp's `recorded_graph`).
using hip_graph = gpu::gpu_graph<hip_runtime>;

}  // namespace launchwatch::detail::hip
