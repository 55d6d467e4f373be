// Timing slots for a Vulkan device's shader clock: the slots' buffer, lending and handing back.
#include "backend/vulkan/clock_slots.hpp"

#include <cstring>

#include "backend/vulkan/vulkan_device.hpp"

namespace launchwatch::detail::vulkan {

clock_slots::clock_slots(vulkan_device& device, std::uint32_t count)
    : device_{device}, count_{count} {
  lanes_ = device_.create_buffer(std::size_t{count} * clock_slot_bytes, memory_use::shared);
  free_.reserve(count);
  for (std::uint32_t s = count; s > 0; --s) free_.push_back(s - 1);
}

clock_slots::~clock_slots() {
  device_.destroy(lanes_);
}

std::optional<std::uint32_t> clock_slots::acquire() {
  std::lock_guard lock{mutex_};
  if (free_.empty()) return std::nullopt;
  const std::uint32_t slot = free_.back();
  free_.pop_back();
  if (slot >= zeroed_) {
    // Empty lanes are all zeros (a cube folds by maximum); after this, the fold zeroes a slot after
    // each use. Never-used slots come in ascending order, so this is the next one.
    std::memset(lanes_.mapped + std::size_t{slot} * clock_slot_bytes, 0, clock_slot_bytes);
    zeroed_ = slot + 1;
  }
  return slot;
}

void clock_slots::release(std::span<const std::uint32_t> slots) noexcept {
  std::lock_guard lock{mutex_};
  // Reserved for every slot at construction: never allocates.
  free_.insert(free_.end(), slots.begin(), slots.end());
}

}  // namespace launchwatch::detail::vulkan
