// Deferred timing's state for one CUDA device.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include "device_clock.hpp"
#include "device_health.hpp"
#include "timing_slots.hpp"

namespace launchwatch::detail::cuda {

/// Deferred timing's state for one device: the slots launches stamp, the clock that maps their
/// stamps onto the host's steady clock, and the keeper thread that re-anchors that clock once a
/// second while launches are being timed (so no launch and no read ever waits for an anchor, and
/// the mapping's error does not grow with the length of a run). Created at the device's first timed
/// launch and shared with every unread measurement, which may outlive the client that made it.
class device_timing {
 public:
  device_timing(int device, std::shared_ptr<device_health> health);
  /// Stops the keeper.
  ~device_timing();
  device_timing(const device_timing&) = delete;
  device_timing& operator=(const device_timing&) = delete;

  /// Notes that a launch is being timed. Cost: one relaxed load, except once per anchor interval.
  void note_timed_launch() noexcept {
    if (!active_.load(std::memory_order_relaxed)) [[unlikely]] mark_active();
  }

  /// Blocks until the launch holding `taken` has written its window; throws the device's fault
  /// (naming `kernel`) instead of waiting forever when the device failed.
  device_window wait(const timing_slot_pool::lease& taken, std::string_view kernel);

  /// Stops every device's keeper: at exit, before CUDA's runtime tears itself down.
  static void stop_all_keepers() noexcept;

  const int device;
  const std::shared_ptr<device_health> health;
  timing_slot_pool slots;
  device_clock clock;

 private:
  void mark_active() noexcept;
  void keep();
  void stop() noexcept;

  cudaStream_t watch_ = nullptr;  // an idle stream whose query reports a sticky fault
  std::atomic<bool> active_{false};
  std::atomic<bool> idle_{true};
  std::mutex keeper_mutex_;
  std::condition_variable keeper_wake_;
  bool woken_ = false;
  bool stopping_ = false;
  std::thread keeper_;
};

}  // namespace launchwatch::detail::cuda
