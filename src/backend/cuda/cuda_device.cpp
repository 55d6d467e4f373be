// One CUDA device: the shared GPU device over the CUDA runtime, instantiated once here.

#include "cuda_device.hpp"

#include "backend/gpu/gpu_device_impl.hpp"

template class launchwatch::detail::gpu::gpu_device<launchwatch::detail::cuda::cuda_runtime>;
