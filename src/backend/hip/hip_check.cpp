#include "hip_check.hpp"

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/gpu/runtime_api.hpp"

namespace launchwatch::detail::hip {

bool is_sticky(hipError_t status) noexcept {
  switch (status) {
    case hipErrorECCNotCorrectable:
    case hipErrorIllegalAddress:
    case hipErrorLaunchTimeOut:
    case hipErrorAssert:
    case hipErrorLaunchFailure:
      return true;
    default:
      return false;
  }
}

namespace {

bool means_no_device(hipError_t status) noexcept {
  return status == hipErrorNoDevice || status == hipErrorInsufficientDriver ||
         status == hipErrorInvalidDevice || status == hipErrorNotInitialized;
}

}  // namespace

std::string describe_failure(hipError_t status, std::string_view call, std::string_view kernel,
                             int device) {
  std::string text = fmt::format("HIP call {} failed", call);
  if (!kernel.empty()) text += fmt::format(" for kernel '{}'", kernel);
  if (device >= 0) text += fmt::format(" on device {}", device);
  text += fmt::format(": {} ({})", hipGetErrorName(status), hipGetErrorString(status));
  if (is_sticky(status)) {
    text +=
        ". This fault is sticky: the device's context is unusable for the rest of the process, "
        "every later operation on it fails, and no result computed since can be trusted. Restart "
        "the process; run it under a memory checker (compute-sanitizer on NVIDIA GPUs, "
        "AMD_LOG_LEVEL=4 and rocgdb on AMD GPUs) to find the faulting access";
  } else if (status == hipErrorNoBinaryForGpu || status == hipErrorInvalidDeviceFunction) {
    text +=
        ". The kernel was not compiled for this GPU's architecture: rebuild with "
        "CMAKE_HIP_ARCHITECTURES naming it (gfx90a for an MI200), or CMAKE_CUDA_ARCHITECTURES on "
        "HIP's NVIDIA platform";
  } else if (status == hipErrorOutOfMemory) {
    text += ". Free buffers or use smaller ones";
  }
  return text;
}

std::string describe_out_of_memory(std::size_t bytes, std::size_t free_bytes,
                                   std::size_t total_bytes, int device) {
  return gpu::describe_out_of_memory("HIP", "hipErrorOutOfMemory", bytes, free_bytes, total_bytes,
                                     device);
}

void throw_failure(hipError_t status, std::string_view call, std::string_view kernel, int device) {
  // A failed call leaves HIP's last-error state set; clear it so the next unrelated check does not
  // report this failure a second time (a sticky fault stays whatever this does).
  (void)hipGetLastError();
  std::string message = describe_failure(status, call, kernel, device);
  if (means_no_device(status)) throw backend_unavailable{message};
  if (!kernel.empty() && is_sticky(status)) throw kernel_failure{kernel, message};
  throw device_error{message};
}

}  // namespace launchwatch::detail::hip
