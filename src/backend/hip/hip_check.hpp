// Turning HIP's error codes into launchwatch's exceptions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "hip_api.hpp"

namespace launchwatch::detail::hip {

/// Whether `status` is one of the faults after which the device's context is unusable for the rest
/// of the process: every later call returns the same error, and no result computed since can be
/// trusted (on HIP's NVIDIA platform, CUDA's sticky faults as HIP names them).
bool is_sticky(hipError_t status) noexcept;

/// The text an exception carries for a failed call: the call, the kernel when one is involved,
/// HIP's name and description of the error, and what to do about it.
std::string describe_failure(hipError_t status, std::string_view call, std::string_view kernel,
                             int device);

/// The text of the device_error thrown when a buffer of `bytes` does not fit on `device`
/// (gpu::describe_out_of_memory, naming hipErrorOutOfMemory).
std::string describe_out_of_memory(std::size_t bytes, std::size_t free_bytes,
                                   std::size_t total_bytes, int device);

/// Throws the exception that `status` from `call` deserves: backend_unavailable when there is no
/// usable device or driver, kernel_failure when a kernel is named and the fault is the device's,
/// device_error otherwise. Sticky faults say that they are sticky.
[[noreturn]] void throw_failure(hipError_t status, std::string_view call, std::string_view kernel,
                                int device);

}  // namespace launchwatch::detail::hip
