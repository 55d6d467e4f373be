// Whether a HIP device is still usable, and the fault that ended it (gpu/device_health.hpp).
#pragma once

#include "backend/gpu/device_health.hpp"
#include "hip_runtime.hpp"

namespace launchwatch::detail::hip {

/// Whether a HIP device's context is still usable, and if not, the fault that ended it.
using device_health = gpu::device_health<hip_runtime>;

}  // namespace launchwatch::detail::hip
