// Whether a CUDA device is still usable, and the fault that ended it.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>

namespace launchwatch::detail::cuda {

/// Whether a device's CUDA context is still usable, and if not, the fault that ended it.
///
/// A sticky fault (an illegal address, say) leaves the context unusable for the rest of the process.
/// CUDA repeats the error on every later call, but launchwatch also remembers the first one, so the
/// exception every later operation throws says which fault ended the device, and no code path can
/// read a stale buffer or a timing record as if nothing had happened.
///
/// Thread safety: every member may be called from any thread.
class device_health {
 public:
  explicit device_health(int device) : device_{device} {}

  /// Throws device_error describing the first sticky fault, if there was one.
  /// Cost: one relaxed load while healthy.
  void throw_if_failed() const {
    if (failed_.load(std::memory_order_acquire)) [[unlikely]] throw_failed();
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

  /// Throws for `status` from `call` (naming `kernel` when one is involved), remembering a sticky
  /// fault first. Use for every failed CUDA call on this device.
  [[noreturn]] void fail(cudaError_t status, std::string_view call, std::string_view kernel = {});

  /// Remembers `status` if it is sticky; returns the description of the failure either way.
  std::string note(cudaError_t status, std::string_view call, std::string_view kernel = {});

  /// Checks `status`; throws through fail() unless it is cudaSuccess.
  void check(cudaError_t status, std::string_view call, std::string_view kernel = {}) {
    if (status != cudaSuccess) [[unlikely]] fail(status, call, kernel);
  }

 private:
  [[noreturn]] void throw_failed() const;

  int device_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string first_fault_;
};

}  // namespace launchwatch::detail::cuda
