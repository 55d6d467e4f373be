// One HIP stream: the shared GPU stream over HIP's runtime, instantiated once here.

#include "hip_stream.hpp"

#include "backend/gpu/gpu_stream_impl.hpp"

template class launchwatch::detail::gpu::gpu_stream<launchwatch::detail::hip::hip_runtime>;
