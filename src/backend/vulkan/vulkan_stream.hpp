// One Vulkan stream: launches recorded into command buffers on the issuing thread and submitted in
// batches on one of the device's queues.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/vulkan/vulkan_device.hpp"
#include "runtime/backend.hpp"
#include "runtime/capture_window.hpp"
#include "runtime/stream_read_order.hpp"

namespace launchwatch::detail::vulkan {

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
  /// The hardware queue this stream submits to.
  queue_slot& queue() const noexcept { return *queue_; }
  /// `window`, read for the launch at ordering point `point`, placed so that this stream's windows
  /// read in stream order never overlap and none starts before its launch's `submitted`
  /// (place_in_stream_order). For the measurements' resolvers, on any thread. Cost: a lock.
  profile_ticks place_read(std::uint64_t point, profile_ticks window, instant submitted) {
    return reads_.place(point, window, submitted);
  }

 private:
  /// A batch's launches timed by the shader clock: their slots, their records, and where the fold
  /// that ends the batch writes their windows for the host.
  struct clock_part {
    clock_records* records = nullptr;  // the batch's share, until its windows are collected
    mapped_buffer readback;            // each launch's slot, then its {start inverted, end}
    std::vector<std::uint32_t> slots;  // in record order
  };
  struct batch {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    mapped_buffer arena;  // [0, 16): the failure word; then the fields of `ring` launches
    std::size_t used = 0;
    std::vector<std::pair<std::string_view, std::uint64_t>> launches;  // name, point
    clock_part clock;
    bool open = false;
  };
  struct pending_launch {
    std::string_view name;
    const vulkan_shader* shader;
    launch_geometry geometry;
    const void* bytes;
    std::size_t size;
  };
  /// How a launch is timed as it is recorded.
  struct launch_timing {
    timed_by how = timed_by::system;  // `system`: not timed on the device
    std::uint32_t slot = 0;           // the timestamp pair, or the clock slot
    instant submitted{};
  };
  /// Where a recorded launch is: its point, and for the shader clock its record.
  struct encoded {
    std::uint64_t point = 0;
    clock_records* records = nullptr;
    std::uint32_t record = 0;
  };

  static pending_launch pending(const launch_descriptor& launch) noexcept;
  /// Records one launch into the open batch (opening one, or submitting a full one, first), timed
  /// as `timing` says. Throws before the batch holds the launch, or not at all. Holds mutex_.
  encoded encode(const pending_launch& launch, const launch_timing& timing);
  /// The same, untimed.
  encoded encode(const pending_launch& launch);
  /// Submits the open batch, if it holds a launch, ending it with the fold of its shader-clock
  /// slots. Holds mutex_.
  void flush();
  /// Takes a batch to record into: a spare one, or a new one; sets how many launches it takes
  /// (batch_limit_): first_batch_launches when nothing is in flight and a sync or read submitted
  /// the batch before (`launching` false), else twice the last (`launching` true: the launch that
  /// found the batch before full submitted it). Holds mutex_.
  std::unique_ptr<batch> take_batch(bool launching);
  /// Hands back the batches the device has finished, noting a failure they report and collecting
  /// their shader-clock windows. Holds mutex_.
  void reap();
  /// Copies a finished batch's folded windows into its records and hands its slots back.
  void collect_clock(batch& finished) noexcept;  // holds mutex_
  /// Marks the records of a batch that will never run as carrying no window. Holds mutex_.
  void abandon_clock(batch& never_run) noexcept;
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
  std::size_t batch_limit_ = 0;                // guarded by mutex_: launches the open batch takes
  mutable std::atomic<std::uint64_t> completed_{0};
  capture_window<recorded_launch> capture_;    // guarded by mutex_ (its open() is not)
  stream_failure failure_;                     // guarded by mutex_
  // The end of the last shader-clock window collected here (raw ticks): the next one, widened by
  // the grid overhead, never starts before it.
  std::optional<std::uint64_t> last_clock_end_;  // guarded by mutex_
  stream_reads reads_;
};

}  // namespace launchwatch::detail::vulkan
