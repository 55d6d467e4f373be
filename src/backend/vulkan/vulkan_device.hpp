// One Vulkan device: its queues, memory and pipelines (its clock, timing slots, streams and graphs
// have headers of their own).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <launchwatch/profile.hpp>

#include "backend/vulkan/device_clock.hpp"
#include "backend/vulkan/timing_slots.hpp"
#include "backend/vulkan/vulkan_api.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::vulkan {

/// A buffer in host-visible, coherent memory (device-local too where the device offers it), mapped
/// for its life, with its buffer device address: what a launchwatch buffer and a batch's argument
/// arena are.
struct mapped_buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  std::byte* mapped = nullptr;
  VkDeviceAddress address = 0;
  std::size_t bytes = 0;
};


/// One hardware queue, shared by the streams mapped onto it (vkQueueSubmit needs the lock).
struct queue_slot {
  VkQueue queue = VK_NULL_HANDLE;
  std::mutex mutex;
};

/// One Vulkan device, as the runtime sees it (backend.hpp's `device`).
class vulkan_device final : public device, public std::enable_shared_from_this<vulkan_device> {
 public:
  /// Opens `physical`, the `index`-th usable device. Throws backend_unavailable.
  vulkan_device(int index, VkPhysicalDevice physical);
  ~vulkan_device() override;

  std::string_view backend() const noexcept override { return "vulkan"; }
  int index() const noexcept override { return index_; }
  std::string name() const override { return name_; }
  const device_limits& limits() const noexcept override { return limits_; }

  void* allocate(std::size_t bytes, stream& on) override;
  void deallocate(void* memory, std::size_t bytes,
                  std::span<const stream_point> after) noexcept override;
  void zero(void* memory, std::size_t bytes, stream& on) override;
  void copy_to_device(void* destination, const void* source, std::size_t bytes,
                      stream& on) override;
  void copy_to_host(void* destination, const void* source, std::size_t bytes,
                    stream& on) override;
  std::shared_ptr<stream> create_stream() override;

  const device_api& api() const noexcept { return api_; }
  VkDevice handle() const noexcept { return device_; }
  std::uint32_t queue_family() const noexcept { return queue_family_; }
  VkPipelineLayout layout() const noexcept { return layout_; }
  /// The push-constant bytes every pipeline's layout declares: the device's limit, up to 256.
  std::uint32_t push_bytes() const noexcept { return push_bytes_; }
  /// The timing slots; none (every measurement `system`) without calibrated timestamps.
  timing_slots* slots() noexcept { return slots_.get(); }
  device_clock* clock() noexcept { return clock_.get(); }
  /// Whether a timestamp is taken only when the driver next flushes its work, so a barrier must
  /// follow each one: Mesa's lavapipe bins timestamps into its next scene, and flushes at barriers.
  bool flush_after_stamps() const noexcept { return flush_after_stamps_; }
  /// The hardware queue for a new stream: the device's queues in turn.
  queue_slot& next_queue() noexcept {
    return *queues_[next_queue_.fetch_add(1, std::memory_order_relaxed) % queues_.size()];
  }

  /// The pipeline that runs `shader` (its `ring` form when `ring`) with cubes of `dim`, created on
  /// first use. Throws invalid_launch naming `kernel` when the driver refuses the shader.
  VkPipeline pipeline(const vulkan_shader& shader, bool ring, cube_dim dim, std::string_view kernel);

  /// A new mapped buffer of at least `bytes`. Throws device_error when no memory is left.
  mapped_buffer create_buffer(std::size_t bytes);
  void destroy(mapped_buffer& buffer) noexcept;

 private:
  std::byte* host_address(const void* device_address, std::size_t bytes, std::string_view what);

  int index_;
  std::string name_;
  device_limits limits_;
  device_api api_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  std::uint32_t queue_family_ = 0;
  std::vector<std::unique_ptr<queue_slot>> queues_;
  std::atomic<std::size_t> next_queue_{0};
  std::vector<std::uint32_t> memory_types_;  // host-visible, coherent; device-local first
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  std::uint32_t push_bytes_ = 128;
  bool flush_after_stamps_ = false;
  std::unique_ptr<device_clock> clock_;
  std::unique_ptr<timing_slots> slots_;

  std::shared_mutex pipelines_mutex_;
  std::map<std::tuple<const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>, VkPipeline>
      pipelines_;
  std::map<const std::uint32_t*, VkShaderModule> modules_;

  std::mutex buffers_mutex_;
  std::map<VkDeviceAddress, mapped_buffer> buffers_;  // by address: what allocate() handed out
};

}  // namespace launchwatch::detail::vulkan
