// Timing slots for a Vulkan device: a query pool of timestamp pairs, lent to timed launches.
//
// "Timing slots" is one concept in every backend (cuda/timing_slots.hpp, cpu/timing_slots.hpp):
// the bounded places where the device writes a timed launch's two stamps, lent to the launch from
// its submission until its measurement is read (or, dropped unread, until the launch has run). Here
// a slot is a pair of timestamp queries, and their number is the device's timestamp budget
// (LAUNCHWATCH_VULKAN_TIMESTAMPS), so the fallback to `system` timing can be forced and tested.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backend/vulkan/vulkan_api.hpp"

namespace launchwatch::detail::vulkan {

class vulkan_stream;

/// A device's timing slots: a query pool of 2 x `pairs` queries, a pair lent to each measured
/// launch from the moment it is recorded until its measurement is read (or, dropped unread, until
/// its launch has run). `pairs` is the timestamp budget.
/// Thread safety: every member may be called from several threads at once.
class timing_slots {
 public:
  timing_slots(const device_api& api, VkDevice device, std::uint32_t pairs,
               std::uint32_t valid_bits);
  ~timing_slots();
  timing_slots(const timing_slots&) = delete;
  timing_slots& operator=(const timing_slots&) = delete;

  /// A free pair, or nothing when every pair is lent. Cost: a lock; when none is free, a check of
  /// the pairs dropped unread whose launches may have run since.
  std::optional<std::uint32_t> acquire();
  /// Hands `pair` back after its measurement was read.
  void release(std::uint32_t pair) noexcept;
  /// Hands `pair` back once `on` has passed `point`: its measurement was dropped unread, and the
  /// device may still write it.
  void release_after(std::uint32_t pair, std::shared_ptr<vulkan_stream> on,
                     std::uint64_t point) noexcept;
  /// The pair's two timestamps, in ticks. Precondition: its launch has run.
  std::array<std::uint64_t, 2> read(std::uint32_t pair) const;

  VkQueryPool pool() const noexcept { return pool_; }
  std::uint32_t pairs() const noexcept { return pairs_; }

 private:
  struct dropped {
    std::uint32_t pair;
    std::shared_ptr<vulkan_stream> on;
    std::uint64_t point;
  };
  void reset(std::uint32_t pair) noexcept;

  const device_api& api_;
  VkDevice device_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  std::uint32_t pairs_;
  std::uint64_t mask_;
  std::mutex mutex_;
  std::vector<std::uint32_t> free_;  // guarded by mutex_
  std::vector<dropped> dropped_;     // guarded by mutex_
};

}  // namespace launchwatch::detail::vulkan
