// One HIP device: its memory, its kernels' attributes, its health and timing state
// (backend/gpu/gpu_device.hpp over HIP's runtime; its streams, graphs, clock and timing slots have
// headers of their own).
#pragma once

#include "backend/gpu/gpu_device.hpp"
#include "hip_runtime.hpp"

namespace launchwatch::detail::hip {

/// One HIP device, as the runtime sees it (backend.hpp's `device`).
using hip_device = gpu::gpu_device<hip_runtime>;

}  // namespace launchwatch::detail::hip

extern template class launchwatch::detail::gpu::gpu_device<launchwatch::detail::hip::hip_runtime>;
