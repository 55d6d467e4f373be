// Deferred timing's state for one HIP device (gpu/device_timing.hpp over HIP's runtime).
#pragma once

#include "backend/gpu/device_timing.hpp"
#include "hip_runtime.hpp"

namespace launchwatch::detail::hip {

/// Deferred timing's state for one HIP device: its slots, its clock and the keeper.
using device_timing = gpu::device_timing<hip_runtime>;

}  // namespace launchwatch::detail::hip
