// Turning CUDA's error codes into launchwatch's exceptions.
#pragma once

#include <cuda_runtime_api.h>

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

/// Makes `device` current on the calling thread for its lifetime and puts the previous one back.
///
/// CUDA keeps a current device per thread, and a client may be used from a thread whose current
/// device is another client's: every backend entry point that calls CUDA sets its own first.
/// Never throws (destructors use it too): if the device cannot be made current, the CUDA call that
/// follows fails and reports why. Cost: a thread-local read inside CUDA when it is current already.
class [[nodiscard]] device_guard {
 public:
  explicit device_guard(int device) noexcept;
  ~device_guard();
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  device_guard(device_guard&&) = delete;
  device_guard& operator=(device_guard&&) = delete;

 private:
  int previous_ = -1;
  int device_;
};

}  // namespace launchwatch::detail::cuda
