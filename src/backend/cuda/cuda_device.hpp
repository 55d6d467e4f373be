// One CUDA device: its memory, its kernels' attributes, its health and timing state
// (backend/gpu/gpu_device.hpp over the CUDA runtime; its streams, graphs, clock and timing slots
// have headers of their own).
#pragma once

#include "backend/gpu/gpu_device.hpp"
#include "cuda_runtime.hpp"

namespace launchwatch::detail::cuda {

/// One CUDA device, as the runtime sees it (backend.hpp's `device`).
using cuda_device = gpu::gpu_device<cuda_runtime>;

}  // namespace launchwatch::detail::cuda

extern template class launchwatch::detail::gpu::gpu_device<launchwatch::detail::cuda::cuda_runtime>;
