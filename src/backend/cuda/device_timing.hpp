// Deferred timing's state for one CUDA device (gpu/device_timing.hpp over the CUDA runtime).
#pragma once

#include "backend/gpu/device_timing.hpp"
#include "cuda_runtime.hpp"

namespace launchwatch::detail::cuda {

/// Deferred timing's state for one CUDA device: its slots, its clock and the keeper.
using device_timing = gpu::device_timing<cuda_runtime>;

}  // namespace launchwatch::detail::cuda
