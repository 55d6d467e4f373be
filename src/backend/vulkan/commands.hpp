// What the Vulkan backend records and submits the same way wherever it does: a barrier after
// shaders' writes, and a submission that signals a timeline semaphore.
#pragma once

#include <cstdint>
#include <string_view>

#include "backend/vulkan/vulkan_api.hpp"

namespace launchwatch::detail::vulkan {

struct queue_slot;

/// Where what shaders wrote before a barrier must be visible after it.
enum class visible_to { shaders, host };

/// Records a barrier after every earlier command's shader writes, before the later commands'
/// shaders (`shaders`) or the host (`host`) read them.
void record_barrier(const device_api& api, VkCommandBuffer commands, visible_to reader);

/// Submits `commands` on `queue` (under its lock), signalling `timeline` to `value` when they
/// have run. Throws device_error naming `what` when the driver refuses.
void submit_signalling(const device_api& api, queue_slot& queue, VkCommandBuffer commands,
                       VkSemaphore timeline, std::uint64_t value, std::string_view what);

}  // namespace launchwatch::detail::vulkan
