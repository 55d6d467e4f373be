// client::cuda(): the CUDA backend's entry point.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/runtime/client.hpp>
#include <launchwatch/errors.hpp>

#include "cuda_device.hpp"

namespace launchwatch {

client client::cuda(int device_index) {
  if (device_index < 0) {
    throw std::invalid_argument{fmt::format(
        "launchwatch::client::cuda({}): a device index counts from 0", device_index)};
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw backend_unavailable{fmt::format(
        "launchwatch::client::cuda({}): no usable CUDA device: cudaGetDeviceCount failed with {} "
        "({}). This machine has no NVIDIA GPU, or its driver is missing or older than the CUDA "
        "runtime launchwatch was built with; use client::cpu() here",
        device_index, cudaGetErrorName(status), cudaGetErrorString(status))};
  }
  if (count == 0) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::cuda({}): the CUDA driver sees no device (is CUDA_VISIBLE_DEVICES "
        "empty?); use client::cpu() here",
        device_index)};
  }
  if (device_index >= count) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::cuda({}): this machine has {} CUDA device{} (indices 0 to {})",
        device_index, count, count == 1 ? "" : "s", count - 1)};
  }
  // One device object per index for the whole process, as the backend contract asks. Never
  // destroyed: CUDA's runtime tears itself down at exit in an order a static destructor cannot
  // rely on, and the devices' streams and pools go with the process anyway.
  static std::mutex mutex;
  static auto* devices = new std::vector<std::shared_ptr<detail::cuda::cuda_device>>();
  std::lock_guard lock{mutex};
  if (devices->size() < static_cast<std::size_t>(count)) devices->resize(static_cast<std::size_t>(count));
  auto& slot = (*devices)[static_cast<std::size_t>(device_index)];
  if (!slot) {
    auto opened = std::make_shared<detail::cuda::cuda_device>(device_index);
    detail::start_device_runtime();  // may throw configuration_error: then nothing is cached
    slot = std::move(opened);
  }
  return client{std::static_pointer_cast<detail::device>(slot)};
}

}  // namespace launchwatch
