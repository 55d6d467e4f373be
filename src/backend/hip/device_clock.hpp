// Mapping a HIP device's nanosecond timer onto the host's steady clock (gpu/device_clock.hpp over
// HIP's runtime; the probe kernel is in device_clock.hip).
#pragma once

#include "backend/gpu/device_clock.hpp"
#include "hip_runtime.hpp"

namespace launchwatch::detail::hip {

/// A HIP device's timer (hip_entry.hpp says which), anchored to the host's steady clock.
using device_clock = gpu::device_clock<hip_runtime>;

}  // namespace launchwatch::detail::hip
