// client::hip(): the HIP backend's entry point.

#include <launchwatch/runtime/client.hpp>

#include "backend/gpu/gpu_client.hpp"
#include "hip_device.hpp"

namespace launchwatch {

client client::hip(int device_index) {
  return detail::gpu::open_client<detail::hip::hip_runtime>(device_index);
}

}  // namespace launchwatch
