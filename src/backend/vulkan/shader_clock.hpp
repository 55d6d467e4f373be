// A Vulkan device's shader clock placed on the host's steady clock, by calibration probes.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

#include <launchwatch/profile.hpp>

#include "backend/vulkan/clock_calibration.hpp"
#include "backend/vulkan/clock_slots.hpp"
#include "backend/vulkan/mapped_buffer.hpp"
#include "backend/vulkan/vulkan_api.hpp"

namespace launchwatch::detail::vulkan {

class vulkan_device;
struct queue_slot;

/// Maps the stamps of timed launches (the device clock read in their shaders) onto the steady
/// clock: submits clock_calibration's probes and folds them in.
///
/// A probe is one submission of its own on the queue of the stream being timed or read: a timestamp
/// query, a one-unit dispatch that reads the shader clock, another query. The first, which only
/// warms the probe's pipeline (a driver may compile it between the timestamps), goes when the
/// device's first launch is timed, and nothing waits for it; the first read completes the
/// calibration (waits for it, then two probes at least 20 ms apart: a few tens of ms, once);
/// after that, a read that finds the last anchor older than a second submits a probe and uses it
/// once it has run, so no read waits for one again. The grid overhead added to each window is the
/// calibration's (the median over the last probes), or LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS's.
///
/// Thread safety: every member may be called from several threads at once.
class shader_clock {
 public:
  /// A clock for `device`, whose shader clock keeps only its low 32 bits when `narrow`. Creates the
  /// probe's pipeline and resources; throws device_error (or invalid_launch) when the driver
  /// refuses them.
  shader_clock(vulkan_device& device, bool narrow,
               std::optional<std::chrono::nanoseconds> overhead);
  ~shader_clock();
  shader_clock(const shader_clock&) = delete;
  shader_clock& operator=(const shader_clock&) = delete;

  /// Submits the first probe on `queue`, unless one was. Cost: a lock; once, a queue submission.
  void start(queue_slot& queue);

  /// `record`'s window on the steady clock (clock_calibration::window). The first call waits for
  /// the first two probes; later ones may submit a probe on `queue` and never wait for one. Throws
  /// device_error when a probe cannot be submitted or waited for.
  profile_ticks window(const clock_record& record, queue_slot& queue);

  /// The grid overhead each window is widened by now.
  std::chrono::nanoseconds overhead() const;
  /// Host nanoseconds per shader-clock tick, as calibrated so far.
  double ns_per_tick() const;
  /// Whether the clock keeps only its low 32 bits.
  bool narrow() const noexcept { return narrow_; }

 private:
  void release_resources() noexcept;
  void submit_probe(queue_slot& queue);  // holds mutex_
  /// Folds the probe in flight in if it has run (waiting for it when `wait`). Holds mutex_.
  bool collect_probe(bool wait);
  void calibrate(queue_slot& queue);  // holds mutex_: the first two probes

  vulkan_device& device_;
  const bool narrow_;
  const std::optional<std::chrono::nanoseconds> overhead_override_;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  VkSemaphore done_ = VK_NULL_HANDLE;  // a timeline: probe n signals n
  mapped_buffer readings_;             // the probe's two readings
  std::uint64_t stamp_mask_ = ~std::uint64_t{0};

  mutable std::mutex mutex_;
  clock_calibration calibration_;  // guarded by mutex_
  std::uint64_t probes_ = 0;       // guarded by mutex_: probes submitted
  bool in_flight_ = false;         // guarded by mutex_
};

}  // namespace launchwatch::detail::vulkan
