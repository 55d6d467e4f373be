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

/// The text of the device_error thrown when a buffer of `bytes` does not fit on `device`: out of
/// memory, the size asked for, what the device had free of its total when the request failed
/// (`total_bytes` 0 when CUDA could not say), and that nothing was allocated, so freeing buffers
/// or asking for less is all it takes.
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

/// Makes `device` current on the calling thread for its lifetime and puts the previous one back.
///
/// CUDA keeps a current device per thread, and a client may be used from a thread whose current
/// device is another client's: every backend entry point that calls CUDA sets its own first.
/// launchwatch tolerates a program that calls cudaSetDevice itself between launches, and leaves
/// each thread's current device as it found it, so the current device is asked of CUDA each time
/// rather than remembered per thread: a remembered one goes stale the moment the program switches.
/// Never throws (destructors use it too): if the device cannot be made current, the CUDA call that
/// follows fails and reports why.
/// Cost: a cudaGetDevice (a runtime API call, which a CUPTI tool sees) when it is current already,
/// plus a cudaSetDevice each way when it is not; nothing at all through the `only_device`
/// constructor when that says the process sees no other device.
class [[nodiscard]] device_guard {
 public:
  explicit device_guard(int device) noexcept : device_{device} { enter(); }
  /// As above, but asks CUDA nothing when `only_device` is true, meaning `device` is the only
  /// device this process sees: every thread's current device is then `device` already, since CUDA
  /// starts each thread on device 0 and refuses to make a device that does not exist current. The
  /// launch path uses this to keep a runtime call off every launch on a one-GPU machine.
  device_guard(int device, bool only_device) noexcept : previous_{device}, device_{device} {
    if (!only_device) enter();
  }
  ~device_guard() {
    if (previous_ >= 0 && previous_ != device_) leave();
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  device_guard(device_guard&&) = delete;
  device_guard& operator=(device_guard&&) = delete;

 private:
  void enter() noexcept;
  void leave() noexcept;

  int previous_ = -1;
  int device_;
};

}  // namespace launchwatch::detail::cuda
