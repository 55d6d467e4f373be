// Deferred timing's storage for one HIP device (gpu/timing_slots.hpp over HIP's runtime): slots
// stamped with the device's nanosecond timer by the launch's own kernel (hip_entry.hpp), read back
// in bulk.
#pragma once

#include "backend/gpu/timing_slots.hpp"
#include "device_health.hpp"
#include "hip_runtime.hpp"

namespace launchwatch::detail::hip {

using timing_record = gpu::timing_record<hip_runtime>;
using timing_batch = gpu::timing_batch<hip_runtime>;
using timing_collector = gpu::timing_collector<hip_runtime>;

}  // namespace launchwatch::detail::hip
