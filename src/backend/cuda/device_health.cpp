// Whether a CUDA device is still usable, and the fault that ended it.

#include "cuda_device.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "cuda_common/capture_mode.hpp"
#include "cuda_check.hpp"

namespace launchwatch::detail::cuda {

std::string device_health::note(cudaError_t status, std::string_view call, std::string_view kernel) {
  std::string message = describe_failure(status, call, kernel, device_);
  if (is_sticky(status)) {
    std::lock_guard lock{mutex_};
    if (!failed_.load(std::memory_order_relaxed)) {
      first_fault_ = message;
      failed_.store(true, std::memory_order_release);
    }
  }
  return message;
}

void device_health::fail(cudaError_t status, std::string_view call, std::string_view kernel) {
  if (is_sticky(status)) {
    (void)note(status, call, kernel);
    (void)cudaGetLastError();
    std::lock_guard lock{mutex_};
    throw device_error{fmt::format(
        "launchwatch: CUDA call {}{} on device {} failed because the device is unusable after a "
        "sticky fault: {}",
        call, kernel.empty() ? std::string{} : fmt::format(" for kernel '{}'", kernel), device_,
        first_fault_)};
  }
  throw_failure(status, call, kernel, device_);
}

void device_health::throw_failed() const {
  std::lock_guard lock{mutex_};
  throw device_error{fmt::format(
      "launchwatch: CUDA device {} is unusable for the rest of this process after a sticky fault: {}",
      device_, first_fault_)};
}

}  // namespace launchwatch::detail::cuda
