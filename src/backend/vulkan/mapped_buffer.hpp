// A Vulkan buffer mapped into the host's address space for its whole life.
#pragma once

#include <cstddef>

#include "backend/vulkan/vulkan_api.hpp"

namespace launchwatch::detail::vulkan {

/// A buffer in host-visible, coherent memory (device-local too where the device offers it, or
/// host-cached for what the host reads back), mapped for its life, with its buffer device address:
/// what a launchwatch buffer, a batch's argument arena and the timing slots are.
struct mapped_buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  std::byte* mapped = nullptr;
  VkDeviceAddress address = 0;
  std::size_t bytes = 0;
};

/// What a buffer is for, which decides the memory it is made in.
enum class memory_use {
  /// Read and written by kernels, reached by the host now and then: device-local first.
  shared,
  /// Written by the device, read by the host: host-cached first, so the host reads at memory speed
  /// rather than across the bus, uncached (NVIDIA's device-local mappable memory).
  readback,
};

}  // namespace launchwatch::detail::vulkan
