// One CUDA stream: launches from the issuing thread straight to cudaLaunchKernel, ordering points,
// faults, captures (backend/gpu/gpu_stream.hpp over the CUDA runtime).
#pragma once

#include "backend/gpu/gpu_stream.hpp"
#include "cuda_device.hpp"

namespace launchwatch::detail::cuda {

/// One CUDA stream (backend.hpp's `stream`).
using cuda_stream = gpu::gpu_stream<cuda_runtime>;

}  // namespace launchwatch::detail::cuda

extern template class launchwatch::detail::gpu::gpu_stream<launchwatch::detail::cuda::cuda_runtime>;
