#include "cuda_check.hpp"

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/gpu/runtime_api.hpp"

namespace launchwatch::detail::cuda {

bool is_sticky(cudaError_t status) noexcept {
  switch (status) {
    case cudaErrorECCUncorrectable:
    case cudaErrorContained:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
      return true;
    default:
      return false;
  }
}

namespace {

bool means_no_device(cudaError_t status) noexcept {
  return status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver ||
         status == cudaErrorInvalidDevice || status == cudaErrorDevicesUnavailable ||
         status == cudaErrorInitializationError || status == cudaErrorStubLibrary ||
         status == cudaErrorCallRequiresNewerDriver || status == cudaErrorSystemDriverMismatch ||
         status == cudaErrorCompatNotSupportedOnDevice;
}

}  // namespace

std::string describe_failure(cudaError_t status, std::string_view call, std::string_view kernel,
                             int device) {
  std::string text = fmt::format("CUDA call {} failed", call);
  if (!kernel.empty()) text += fmt::format(" for kernel '{}'", kernel);
  if (device >= 0) text += fmt::format(" on device {}", device);
  text += fmt::format(": {} ({})", cudaGetErrorName(status), cudaGetErrorString(status));
  if (is_sticky(status)) {
    text +=
        ". This fault is sticky: CUDA's context on this device is unusable for the rest of the "
        "process, every later operation on it fails, and no result computed since can be trusted. "
        "Restart the process; run it under compute-sanitizer to find the faulting access";
  } else if (status == cudaErrorNoKernelImageForDevice || status == cudaErrorInvalidDeviceFunction) {
    text +=
        ". The kernel was not compiled for this GPU's architecture: rebuild with "
        "CMAKE_CUDA_ARCHITECTURES naming it (90 for an H100 or H200)";
  } else if (status == cudaErrorMemoryAllocation) {
    text += ". Free buffers or use smaller ones";
  }
  return text;
}

std::string describe_out_of_memory(std::size_t bytes, std::size_t free_bytes,
                                   std::size_t total_bytes, int device) {
  return gpu::describe_out_of_memory("CUDA", "cudaErrorMemoryAllocation", bytes, free_bytes,
                                     total_bytes, device);
}

void throw_failure(cudaError_t status, std::string_view call, std::string_view kernel, int device) {
  // A failed call leaves CUDA's last-error state set; clear it so the next unrelated check does not
  // report this failure a second time (a sticky fault stays whatever this does).
  (void)cudaGetLastError();
  std::string message = describe_failure(status, call, kernel, device);
  if (means_no_device(status)) throw backend_unavailable{message};
  if (!kernel.empty() && is_sticky(status)) throw kernel_failure{kernel, message};
  throw device_error{message};
}

}  // namespace launchwatch::detail::cuda
