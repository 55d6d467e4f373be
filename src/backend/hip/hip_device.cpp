// One HIP device: the shared GPU device over HIP's runtime, instantiated once here.

#include "hip_device.hpp"

#include "backend/gpu/gpu_device_impl.hpp"

template class launchwatch::detail::gpu::gpu_device<launchwatch::detail::hip::hip_runtime>;
