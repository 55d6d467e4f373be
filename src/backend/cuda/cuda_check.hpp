// Turning CUDA's error codes into launchwatch's exceptions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace launchwatch::detail::cuda {

/// Whether `status` is one of the faults after which CUDA's context is unusable for the rest of the
/// process: every later call returns the same error, and no result computed since can be trusted.
///
/// Listed from CUDA's own descriptions of its error codes ("the process must be terminated").
bool is_sticky(cudaError_t status) noexcept;

/// The text an exception carries for a failed call: the call, the kernel when one is involved,
/// CUDA's name and description of the error, and what to do about it.
std::string describe_failure(cudaError_t status, std::string_view call, std::string_view kernel,
                             int device);

/// The text of the device_error thrown when a buffer of `bytes` does not fit on `device`
/// (gpu::describe_out_of_memory, naming cudaErrorMemoryAllocation).
std::string describe_out_of_memory(std::size_t bytes, std::size_t free_bytes,
                                   std::size_t total_bytes, int device);

/// Throws the exception that `status` from `call` deserves: backend_unavailable when there is no
/// usable device or driver, kernel_failure when a kernel is named and the fault is the device's,
/// device_error otherwise. Sticky faults say that they are sticky.
[[noreturn]] void throw_failure(cudaError_t status, std::string_view call, std::string_view kernel,
                                int device);

/// Throws for anything but cudaSuccess. `call` is the CUDA function's name, spelled as in CUDA.
///
/// Cost: one compare when the call succeeded.
inline void check(cudaError_t status, std::string_view call, int device,
                  std::string_view kernel = {}) {
  if (status != cudaSuccess) [[unlikely]] {
    throw_failure(status, call, kernel, device);
  }
}

}  // namespace launchwatch::detail::cuda
