// Making a device current on the calling thread for a while, and putting the previous one back.
#pragma once

namespace launchwatch::detail::gpu {

/// Makes `device` current on the calling thread for its lifetime and puts the previous one back.
///
/// CUDA and HIP keep a current device per thread, and a client may be used from a thread whose
/// current device is another client's: every backend entry point that calls the API sets its own
/// first. launchwatch tolerates a program that sets the device itself between launches, and leaves
/// each thread's current device as it found it, so the current device is asked of the API each time
/// rather than remembered per thread: a remembered one goes stale the moment the program switches.
/// Never throws (destructors use it too): if the device cannot be made current, the call that
/// follows fails and reports why.
/// Cost: a get_device (a runtime API call, which a CUPTI tool sees) when it is current already,
/// plus a set_device each way when it is not; nothing at all through the `only_device` constructor
/// when that says the process sees no other device.
template <class R>
class [[nodiscard]] device_guard {
 public:
  explicit device_guard(int device) noexcept : device_{device} { enter(); }
  /// As above, but asks the API nothing when `only_device` is true, meaning `device` is the only
  /// device this process sees: every thread's current device is then `device` already, since the
  /// API starts each thread on device 0 and refuses to make a device that does not exist current.
  /// The launch path uses this to keep a runtime call off every launch on a one-GPU machine.
  device_guard(int device, bool only_device) noexcept : previous_{device}, device_{device} {
    if (!only_device) enter();
  }
  ~device_guard() {
    if (previous_ >= 0 && previous_ != device_) (void)R::set_device(previous_);
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  device_guard(device_guard&&) = delete;
  device_guard& operator=(device_guard&&) = delete;

 private:
  void enter() noexcept {
    if (R::get_device(&previous_) != R::success) {
      R::clear_error();
      previous_ = -1;
    }
    if (previous_ != device_ && R::set_device(device_) != R::success) R::clear_error();
  }

  int previous_ = -1;
  int device_;
};

}  // namespace launchwatch::detail::gpu
