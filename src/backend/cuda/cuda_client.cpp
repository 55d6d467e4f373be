// client::cuda(): the CUDA backend's entry point.

#include <launchwatch/runtime/client.hpp>

#include "backend/gpu/gpu_client.hpp"
#include "cuda_device.hpp"

namespace launchwatch {

client client::cuda(int device_index) {
  return detail::gpu::open_client<detail::cuda::cuda_runtime>(device_index);
}

}  // namespace launchwatch
