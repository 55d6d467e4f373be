// One CUDA stream: the shared GPU stream over the CUDA runtime, instantiated once here.

#include "cuda_stream.hpp"

#include "backend/gpu/gpu_stream_impl.hpp"

template class launchwatch::detail::gpu::gpu_stream<launchwatch::detail::cuda::cuda_runtime>;
