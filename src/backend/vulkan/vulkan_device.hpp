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

#include "backend/vulkan/clock_slots.hpp"
#include "backend/vulkan/device_clock.hpp"
#include "backend/vulkan/mapped_buffer.hpp"
#include "backend/vulkan/shader_clock.hpp"
#include "backend/vulkan/timing_slots.hpp"
#include "backend/vulkan/vulkan_api.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::vulkan {

/// One hardware queue, shared by the streams mapped onto it (vkQueueSubmit needs the lock).
struct queue_slot {
  VkQueue queue = VK_NULL_HANDLE;
  std::mutex mutex;
};

/// How a timed launch on a Vulkan device was measured, in the order the device tries them.
enum class timed_by : std::size_t {
  shader_clock,  ///< its shader stamped the device clock into a timing slot
  timestamps,    ///< a pair of timestamp queries around its dispatch
  system,        ///< host wall time around a blocking submit
  count_,
};

/// How many timed launches a device measured each way (timed_by), since it was opened.
struct timing_counts {
  std::uint64_t shader_clock = 0;
  std::uint64_t timestamps = 0;
  std::uint64_t system = 0;
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
  /// The timestamp query pairs; none (every measurement `system`) without calibrated timestamps.
  timing_slots* slots() noexcept { return slots_.get(); }
  device_clock* clock() noexcept { return clock_.get(); }
  /// The valid bits of the queue family's timestamps.
  std::uint32_t timestamp_valid_bits() const noexcept { return timestamp_valid_bits_; }

  /// Whether launches are timed by their shaders' clock (the first choice; see clock_slots.hpp):
  /// makes the slots, the calibration and the fold's pipeline at the first call, submitting the
  /// calibration's first probe on `queue`. False (and the launch is timed with timestamp queries)
  /// where the device has no VK_KHR_shader_clock device scope, 64-bit buffer atomics or calibrated
  /// timestamps, under LAUNCHWATCH_VULKAN_CLOCK_SLOTS=0, or when they could not be made (said
  /// once). Cost after the first call: one acquire load.
  bool shader_timing(queue_slot& queue);
  /// The shader clock's slots, calibration and fold pipeline. Precondition: shader_timing() said
  /// yes.
  clock_slots& shader_slots() noexcept { return *shader_slots_; }
  shader_clock& shader_time() noexcept { return *shader_clock_; }
  VkPipeline fold_pipeline() const noexcept { return fold_pipeline_; }
  /// Whether the shader clock keeps only its low 32 bits (Mesa's lavapipe).
  bool narrow_clock() const noexcept { return narrow_clock_; }
  /// Whether the device offers what timing by the shader clock needs (before shader_timing() has
  /// tried to set it up).
  bool shader_clock_offered() const noexcept { return shader_clock_offered_; }

  /// Counts a timed launch measured `how`. Cost: one relaxed increment.
  void note_timed(timed_by how) noexcept {
    timed_by_[static_cast<std::size_t>(how)].fetch_add(1, std::memory_order_relaxed);
  }
  /// The timed launches measured each way so far (for the bench and tests: every duration's method
  /// is `device` for both of the first two).
  timing_counts timed_counts() const noexcept;
  /// Whether a timestamp is taken only when the driver next flushes its work, so a barrier must
  /// follow each one: Mesa's lavapipe bins timestamps into its next scene, and flushes at barriers.
  bool flush_after_stamps() const noexcept { return flush_after_stamps_; }
  /// The hardware queue for a new stream: the device's queues in turn.
  queue_slot& next_queue() noexcept {
    return *queues_[next_queue_.fetch_add(1, std::memory_order_relaxed) % queues_.size()];
  }

  /// The pipeline that runs `shader` (its `ring` form when `ring`, its timed entry when `timed`)
  /// with cubes of `dim`, created on first use. Throws invalid_launch naming `kernel` when the
  /// driver refuses the shader. Precondition for `timed`: shader_timing() said yes.
  VkPipeline pipeline(const vulkan_shader& shader, bool ring, cube_dim dim, std::string_view kernel,
                      bool timed = false);

  /// A new mapped buffer of at least `bytes`, in the memory `use` asks for. Throws device_error
  /// when no memory is left.
  mapped_buffer create_buffer(std::size_t bytes, memory_use use = memory_use::shared);
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
  std::vector<std::uint32_t> readback_types_;  // host-visible, coherent; host-cached first
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  std::uint32_t push_bytes_ = 128;
  bool flush_after_stamps_ = false;
  std::uint32_t timestamp_valid_bits_ = 64;
  std::unique_ptr<device_clock> clock_;
  std::unique_ptr<timing_slots> slots_;

  // Timing by the shader clock: offered or not from the device's features, made at first use.
  bool shader_clock_offered_ = false;
  bool narrow_clock_ = false;
  std::uint32_t clock_slot_count_ = 0;
  std::optional<std::chrono::nanoseconds> grid_overhead_;
  std::mutex shader_timing_mutex_;
  std::atomic<int> shader_timing_state_{0};  // 0: not made yet, 1: made, 2: off
  std::unique_ptr<clock_slots> shader_slots_;
  std::unique_ptr<shader_clock> shader_clock_;
  VkPipeline fold_pipeline_ = VK_NULL_HANDLE;
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(timed_by::count_)> timed_by_{};

  std::shared_mutex pipelines_mutex_;
  std::map<std::tuple<const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>,
           VkPipeline>
      pipelines_;  // by code (each form of a shader is its own array), then cube size
  std::map<const std::uint32_t*, VkShaderModule> modules_;

  std::mutex buffers_mutex_;
  std::map<VkDeviceAddress, mapped_buffer> buffers_;  // by address: what allocate() handed out
};

/// The device client::vulkan(`index`) opened, or null when it opened none (for the bench and the
/// tests, which read its timed_counts()). Thread safety: safe from any thread.
std::shared_ptr<vulkan_device> opened_device(int index);

}  // namespace launchwatch::detail::vulkan
