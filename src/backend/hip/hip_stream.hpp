// One HIP stream: launches from the issuing thread straight to hipLaunchKernel, ordering points,
// faults, captures (backend/gpu/gpu_stream.hpp over HIP's runtime).
#pragma once

#include "backend/gpu/gpu_stream.hpp"
#include "hip_device.hpp"

namespace launchwatch::detail::hip {

/// One HIP stream (backend.hpp's `stream`).
using hip_stream = gpu::gpu_stream<hip_runtime>;

}  // namespace launchwatch::detail::hip

extern template class launchwatch::detail::gpu::gpu_stream<launchwatch::detail::hip::hip_runtime>;
