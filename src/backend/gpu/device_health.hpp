// Whether a GPU device is still usable, and the fault that ended it.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>

#include <launchwatch/errors.hpp>

#include "runtime_api.hpp"

namespace launchwatch::detail::gpu {

/// The whole name of the API call the shared code calls `call` ("StreamSynchronize" becomes
/// "cudaStreamSynchronize" or "hipStreamSynchronize"; words after the name are kept).
template <class R>
std::string api_call(std::string_view call) {
  return std::string{R::wording.prefix}.append(call);
}

/// Throws the exception R says `status` from `call` deserves, unless it is success.
/// Cost: one compare when the call succeeded.
template <class R>
void check(typename R::error status, std::string_view call, int device,
           std::string_view kernel = {}) {
  if (status != R::success) [[unlikely]]
    R::throw_failure(status, api_call<R>(call), kernel, device);
}

/// Whether a device's context is still usable, and if not, the fault that ended it.
///
/// A sticky fault (an illegal address, say) leaves the context unusable for the rest of the
/// process. The API repeats the error on every later call, but launchwatch also remembers the first
/// one, so the exception every later operation throws says which fault ended the device, and no
/// code path can read a stale buffer or a timing record as if nothing had happened.
///
/// Thread safety: every member may be called from any thread.
template <class R>
class device_health {
 public:
  using error = typename R::error;

  explicit device_health(int device) : device_{device} {}

  /// Throws device_error describing the first sticky fault, if there was one.
  /// Cost: one relaxed load while healthy.
  void throw_if_failed() const {
    if (failed_.load(std::memory_order_acquire)) [[unlikely]]
      throw_failed();
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

  /// Throws for `status` from `call` (naming `kernel` when one is involved), remembering a sticky
  /// fault first. Use for every failed call on this device.
  [[noreturn]] void fail(error status, std::string_view call, std::string_view kernel = {}) {
    if (R::is_sticky(status)) {
      (void)note(status, call, kernel);
      R::clear_error();
      std::lock_guard lock{mutex_};
      throw device_error{describe_call_after_fault(R::wording.api, api_call<R>(call), kernel,
                                                   device_, first_fault_)};
    }
    R::throw_failure(status, api_call<R>(call), kernel, device_);
  }

  /// Remembers `status` if it is sticky; returns the description of the failure either way.
  std::string note(error status, std::string_view call, std::string_view kernel = {}) {
    std::string message = R::describe_failure(status, api_call<R>(call), kernel, device_);
    if (R::is_sticky(status)) {
      std::lock_guard lock{mutex_};
      if (!failed_.load(std::memory_order_relaxed)) {
        first_fault_ = message;
        failed_.store(true, std::memory_order_release);
      }
    }
    return message;
  }

  /// Checks `status`; throws through fail() unless it is success.
  void check(error status, std::string_view call, std::string_view kernel = {}) {
    if (status != R::success) [[unlikely]]
      fail(status, call, kernel);
  }

 private:
  [[noreturn]] void throw_failed() const {
    std::lock_guard lock{mutex_};
    throw device_error{describe_unusable_device(R::wording.api, device_, first_fault_)};
  }

  int device_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string first_fault_;
};

}  // namespace launchwatch::detail::gpu
