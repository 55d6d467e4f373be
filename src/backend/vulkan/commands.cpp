// Barriers and timeline submissions, recorded the same way by streams and the clock's probes.
#include "backend/vulkan/commands.hpp"

#include <mutex>

#include "backend/vulkan/vulkan_device.hpp"

namespace launchwatch::detail::vulkan {

void record_barrier(const device_api& api, VkCommandBuffer commands, visible_to reader) {
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  const bool host = reader == visible_to::host;
  barrier.dstAccessMask =
      host ? VK_ACCESS_HOST_READ_BIT : VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  api.vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           host ? VK_PIPELINE_STAGE_HOST_BIT : VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           0, 1, &barrier, 0, nullptr, 0, nullptr);
}

void submit_signalling(const device_api& api, queue_slot& queue, VkCommandBuffer commands,
                       VkSemaphore timeline, std::uint64_t value, std::string_view what) {
  VkTimelineSemaphoreSubmitInfo signal{};
  signal.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  signal.signalSemaphoreValueCount = 1;
  signal.pSignalSemaphoreValues = &value;
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.pNext = &signal;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  submit.signalSemaphoreCount = 1;
  submit.pSignalSemaphores = &timeline;
  std::lock_guard queue_lock{queue.mutex};
  check(api.vkQueueSubmit(queue.queue, 1, &submit, VK_NULL_HANDLE), what);
}

}  // namespace launchwatch::detail::vulkan
