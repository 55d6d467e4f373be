// Deferred timing's state for one CUDA device.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include <launchwatch/profile.hpp>

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
  device_timing(int device, std::shared_ptr<device_health> health,
                std::chrono::nanoseconds grid_overhead, std::uint32_t slots);
  /// Stops the keeper.
  ~device_timing();
  device_timing(const device_timing&) = delete;
  device_timing& operator=(const device_timing&) = delete;

  /// Notes that a launch is being timed. Cost: one relaxed load, except once per anchor interval.
  void note_timed_launch() noexcept {
    if (!active_.load(std::memory_order_relaxed)) [[unlikely]] mark_active();
  }

  /// The window of `record` on the host's steady clock, once read back: the in-kernel window
  /// widened by the grid's launch and retire that no in-kernel stamp sees (`grid_overhead`, half
  /// on each side), mapped through one segment of the clock, and never placed before the launch
  /// was submitted. Nothing when the launch left no window. Blocks until the batch is read back
  /// (and, the first time, until the clock has an anchor); throws device_error naming `kernel`
  /// when the device failed first.
  /// `at_once`: read just this launch's slot rather than wait for its batch (resolved timing).
  std::optional<profile_ticks> read(timing_record& record, std::string_view kernel, bool at_once);

  /// Stops every device's keeper and collector: at exit, before CUDA's runtime tears itself down.
  static void stop_all_keepers() noexcept;

  const int device;
  const std::shared_ptr<device_health> health;
  /// The grid launch and retire time an in-kernel window misses, for this device (grid_overhead.hpp).
  const std::chrono::nanoseconds grid_overhead;
  timing_collector collector;
  device_clock clock;

 private:
  void mark_active() noexcept;
  void keep();
  void stop() noexcept;

  std::atomic<bool> active_{false};
  std::atomic<bool> idle_{true};
  std::mutex keeper_mutex_;
  std::condition_variable keeper_wake_;
  bool woken_ = false;
  bool stopping_ = false;
  std::thread keeper_;
};

}  // namespace launchwatch::detail::cuda
