// The Vulkan backend: a device, its streams, its graphs, and the timestamp budget they share.
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

#include "backend/vulkan/vulkan_api.hpp"
#include "runtime/backend.hpp"
#include "runtime/capture_window.hpp"

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

/// Maps device timestamps onto the steady clock (CLOCK_MONOTONIC on Linux).
///
/// Anchored by VK_EXT_calibrated_timestamps, re-anchored when a reading finds the last anchor over
/// a second old, with the slope between the last two anchors: NVIDIA's device clock is the global
/// timer, which drifts about 6 ppm against CLOCK_MONOTONIC (research/vulkan.md); an anchor that
/// jumps by more than a millisecond (the clock was stepped) starts over at the nominal period.
/// Thread safety: every member may be called from several threads at once.
class device_clock {
 public:
  device_clock(const device_api& api, VkDevice device, double period_ns);
  /// Where device timestamp `ticks` lies on the steady clock.
  instant to_host(std::uint64_t ticks);
  /// The uncertainty the driver reported for the last anchor.
  std::chrono::nanoseconds deviation() const;

 private:
  struct anchor {
    double device_ns = 0;
    std::int64_t host_ns = 0;
    std::chrono::steady_clock::time_point taken{};
  };
  anchor calibrate();

  const device_api& api_;
  VkDevice device_;
  double period_ns_;
  mutable std::mutex mutex_;
  anchor anchor_;                  // guarded by mutex_
  double slope_ = 1.0;             // guarded by mutex_: host ns per device ns
  std::uint64_t deviation_ns_ = 0; // guarded by mutex_
};

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
  /// The timestamp budget; none (every measurement `system`) without calibrated timestamps.
  timestamp_budget* budget() noexcept { return budget_.get(); }
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
  std::unique_ptr<timestamp_budget> budget_;

  std::shared_mutex pipelines_mutex_;
  std::map<std::tuple<const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>, VkPipeline>
      pipelines_;
  std::map<const std::uint32_t*, VkShaderModule> modules_;

  std::mutex buffers_mutex_;
  std::map<VkDeviceAddress, mapped_buffer> buffers_;  // by address: what allocate() handed out
};

/// A launch as a Vulkan stream keeps it for a graph: the kernel's bytes, owned.
struct recorded_launch {
  std::string_view name;
  const vulkan_shader* shader = nullptr;
  launch_geometry geometry;
  std::vector<std::byte> bytes;
};

/// One stream (backend.hpp's `stream`): launches recorded into the open command buffer on the
/// issuing thread, submitted in batches on one of the device's queues; ordering points are the
/// values of a timeline semaphore the batches signal.
class vulkan_stream final : public stream, public std::enable_shared_from_this<vulkan_stream> {
 public:
  explicit vulkan_stream(std::shared_ptr<vulkan_device> owner);
  ~vulkan_stream() override;

  void validate(const launch_descriptor& launch) override;
  void prepare(const launch_descriptor& launch) override;
  std::uint64_t submit(const launch_descriptor& launch) override;
  profiled_submission submit_profiled(const launch_descriptor& launch,
                                      launch_path::read_when when) override;
  bool record(const launch_descriptor& launch) override;
  void wait(std::uint64_t point) override;
  std::uint64_t last_point() const noexcept override;
  bool passed(std::uint64_t point) const noexcept override;
  std::exception_ptr take_failure() noexcept override;
  std::exception_ptr failure_through(std::uint64_t point) const noexcept override;
  void begin_capture() override;
  std::unique_ptr<recorded_graph> end_capture() override;
  bool capturing() const noexcept override { return capture_.open(); }

  /// Records `launches` (a graph's) untimed and unreported; returns the point after the last.
  std::uint64_t replay(const std::vector<recorded_launch>& launches);
  vulkan_device& owner() const noexcept { return *owner_; }

 private:
  struct batch {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    mapped_buffer arena;  // [0, 16): the failure word; then the fields of `ring` launches
    std::size_t used = 0;
    std::vector<std::pair<std::string_view, std::uint64_t>> launches;  // name, point
    bool open = false;
  };
  struct pending_launch {
    std::string_view name;
    const vulkan_shader* shader;
    launch_geometry geometry;
    const void* bytes;
    std::size_t size;
  };

  static pending_launch pending(const launch_descriptor& launch) noexcept;
  /// Records one launch into the open batch (opening one, or submitting a full one, first) with
  /// its timestamps around it when `pair` is given; returns its point. Holds mutex_.
  std::uint64_t encode(const pending_launch& launch, std::optional<std::uint32_t> pair);
  /// Submits the open batch, if it holds a launch. Holds mutex_.
  void flush();
  /// Takes a batch to record into: a spare one, or a new one. Holds mutex_.
  std::unique_ptr<batch> take_batch();
  /// Hands back the batches the device has finished, noting a failure they report. Holds mutex_.
  void reap();
  void record_locked(const pending_launch& launch);
  std::uint64_t completed() const noexcept;

  std::shared_ptr<vulkan_device> owner_;
  queue_slot* queue_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;

  mutable std::mutex mutex_;
  std::unique_ptr<batch> open_;                // guarded by mutex_
  std::deque<std::unique_ptr<batch>> flying_;  // guarded by mutex_: submitted, in point order
  std::vector<std::unique_ptr<batch>> spare_;  // guarded by mutex_
  std::atomic<std::uint64_t> issued_{0};       // written under mutex_: the last point given out
  std::uint64_t flushed_ = 0;                  // guarded by mutex_: the last point submitted
  mutable std::atomic<std::uint64_t> completed_{0};
  capture_window<recorded_launch> capture_;    // guarded by mutex_ (its open() is not)
  std::exception_ptr failure_;                 // guarded by mutex_
  std::uint64_t failure_point_ = 0;            // guarded by mutex_
};

/// A captured sequence of launches (backend.hpp's `recorded_graph`): replayed by recording them
/// again into the replaying stream's open batch, as wgpu's software graphs do.
class vulkan_graph final : public recorded_graph {
 public:
  vulkan_graph(const vulkan_device& owner, std::vector<recorded_launch> launches)
      : owner_{&owner}, launches_{std::move(launches)} {}
  std::size_t size() const noexcept override { return launches_.size(); }
  std::uint64_t replay(stream& on) override;

 private:
  const vulkan_device* owner_;
  std::vector<recorded_launch> launches_;
};

}  // namespace launchwatch::detail::vulkan
