// Timing slots for a Vulkan device: a query pool of timestamp pairs, lent to timed launches.
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

/// The device's timestamp budget: a query pool of 2 x `pairs` queries, a pair lent to each measured
/// launch from the moment it is recorded until its measurement is read (or, dropped unread, until
/// its launch has run). Mirrors the CUDA backend's timing slots, with a bound the program sets
/// (LAUNCHWATCH_VULKAN_TIMESTAMPS) so the fallback to `system` timing can be forced and tested.
/// Thread safety: every member may be called from several threads at once.
class timestamp_budget {
 public:
  timestamp_budget(const device_api& api, VkDevice device, std::uint32_t pairs,
                   std::uint32_t valid_bits);
  ~timestamp_budget();
  timestamp_budget(const timestamp_budget&) = delete;
  timestamp_budget& operator=(const timestamp_budget&) = delete;

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
