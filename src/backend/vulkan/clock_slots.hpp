// Timing slots for a Vulkan device's shader clock: where a timed launch's cubes fold their stamps,
// and the host records that hold each launch's window once its batch has been read back.
//
// "Timing slots" is one concept in every backend (timing_slots.hpp here holds the timestamp query
// pairs, the fallback; cuda/timing_slots.hpp is the model for this file): the bounded places where
// the device writes a timed launch's two stamps. Here a slot is 32 lanes of device memory that the
// launch's own shader stamps with the device clock (launchwatch.glsl's timed entry), lent from the
// launch's recording until its batch has been folded; the window then lives in a host record until
// the measurement is read or dropped, so unread measurements cost host memory only.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include <launchwatch/profile.hpp>

#include "backend/vulkan/mapped_buffer.hpp"

namespace launchwatch::detail::vulkan {

class vulkan_device;

/// Bytes of one slot: 32 lanes, each alone on a 128-byte line (launchwatch.glsl's lw_timing_lane).
inline constexpr std::size_t clock_slot_bytes = 4096;

/// One timed launch's window as its cubes stamped it, in raw shader-clock ticks (only the low 32
/// bits on a narrow clock), once its batch has been folded and read back.
struct clock_record {
  enum : std::uint32_t { pending = 0, collected = 1, no_window = 2 };
  std::atomic<std::uint32_t> state{pending};
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  /// The end of the window collected before this one on the same stream, if any: a window widened
  /// by the device's grid overhead never starts before it.
  std::uint64_t previous_end = 0;
  bool has_previous = false;
  /// When the launch was submitted, on the host: a window never starts before it.
  instant submitted{};
};

/// The records of one batch's timed launches, in the order they were recorded.
///
/// Held by the batch until its windows are collected, and by each measurement until it is read or
/// dropped; the last holder frees it. About 10 KiB for up to 256 launches.
/// Thread safety: hold() and release() from any thread; a record is written once, before its state
/// is published with release order, and read after an acquire load of its state.
class clock_records {
 public:
  static constexpr std::uint32_t capacity = 256;

  clock_records() = default;
  clock_records(const clock_records&) = delete;
  clock_records& operator=(const clock_records&) = delete;

  std::array<clock_record, capacity> records;

  /// One more holder (a measurement). Never throws.
  void hold() noexcept { holders_.fetch_add(1, std::memory_order_relaxed); }
  /// One holder less; the last frees the records. Never throws.
  void release() noexcept {
    if (holders_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  ~clock_records() = default;
  std::atomic<std::uint32_t> holders_{1};  // the batch's share
};

/// A device's slots for its shader clock: one buffer of `count` slots whose address every timed
/// pipeline is specialised with, each zeroed by the host before its first use (zeroing them all at
/// once took 160 ms on lavapipe, inside the first timed launch). A slot is lent to a timed launch
/// when it is recorded and comes back once its batch was folded (the fold zeroes it on the device);
/// when every slot is lent, the launch is timed with a timestamp query pair instead. Thread safety:
/// every member may be called from several threads at once.
class clock_slots {
 public:
  /// Allocates and zeroes `count` slots on `device`. Throws device_error when memory runs out.
  clock_slots(vulkan_device& device, std::uint32_t count);
  ~clock_slots();
  clock_slots(const clock_slots&) = delete;
  clock_slots& operator=(const clock_slots&) = delete;

  /// A free slot, or nothing when every slot is lent. Cost: a lock; at a slot's first use, zeroing
  /// its 4 KiB.
  std::optional<std::uint32_t> acquire();
  /// Hands `slots` back, zeroed (their batch's fold has run). Cost: a lock.
  void release(std::span<const std::uint32_t> slots) noexcept;

  /// The first slot's device address.
  VkDeviceAddress address() const noexcept { return lanes_.address; }
  std::uint32_t count() const noexcept { return count_; }

 private:
  vulkan_device& device_;
  std::uint32_t count_;
  mapped_buffer lanes_;
  std::mutex mutex_;
  std::vector<std::uint32_t> free_;  // guarded by mutex_; never-used slots pop in ascending order
  std::uint32_t zeroed_ = 0;         // guarded by mutex_: slots below it have been zeroed
};

}  // namespace launchwatch::detail::vulkan
