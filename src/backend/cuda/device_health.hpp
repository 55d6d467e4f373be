// Whether a CUDA device is still usable, and the fault that ended it (gpu/device_health.hpp).
#pragma once

#include "backend/gpu/device_health.hpp"
#include "cuda_runtime.hpp"

namespace launchwatch::detail::cuda {

/// Whether a CUDA device's context is still usable, and if not, the fault that ended it.
using device_health = gpu::device_health<cuda_runtime>;

}  // namespace launchwatch::detail::cuda
