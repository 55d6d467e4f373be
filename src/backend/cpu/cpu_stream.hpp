// One CPU stream: an in-order queue of launches run by a worker thread, each launch's cubes spread
// over the pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/cpu/timing_slots.hpp"
#include "runtime/backend.hpp"
#include "runtime/capture_window.hpp"

namespace launchwatch::detail {

/// A kernel object's bytes, copied out of the launch so the launch can return before it runs.
/// Inline up to a few cache lines, on the heap (with the kernel's alignment) beyond.
class kernel_copy {
 public:
  kernel_copy() noexcept = default;
  kernel_copy(const void* bytes, std::size_t size, std::size_t alignment);
  kernel_copy(kernel_copy&& other) noexcept;
  kernel_copy& operator=(kernel_copy&& other) noexcept;
  kernel_copy(const kernel_copy&) = delete;
  kernel_copy& operator=(const kernel_copy&) = delete;
  ~kernel_copy();

  const void* data() const noexcept { return heap_ != nullptr ? heap_ : inline_; }

 private:
  static constexpr std::size_t inline_size = 192;
  void release() noexcept;

  alignas(std::max_align_t) std::byte inline_[inline_size];
  void* heap_ = nullptr;
  std::size_t size_ = 0;
  std::size_t alignment_ = 0;
};

/// A launch as a CPU stream keeps it: everything its entry needs, owned.
struct cpu_launch {
  std::string_view name;
  launch_geometry geometry;
  cpu_entry_function entry = nullptr;
  kernel_copy kernel;

  static cpu_launch copy_of(const launch_descriptor& launch);
};

class cpu_device;

/// An in-order queue of launches run by one worker thread, each launch's cubes spread over the pool.
class cpu_stream final : public stream {
 public:
  explicit cpu_stream(std::shared_ptr<cpu_device> owner);
  /// Runs what is queued, then stops the worker.
  ~cpu_stream() override;

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
  bool capturing() const noexcept override;

  /// Queues a replay of `launches`; returns its ordering point.
  std::uint64_t submit_replay(std::shared_ptr<const std::vector<cpu_launch>> launches);

  const cpu_device& owner() const noexcept { return *owner_; }

 private:
  struct work_item {
    cpu_launch launch;
    std::shared_ptr<const std::vector<cpu_launch>> replay;
    cpu_timing_slots::record* timing = nullptr;
    std::uint64_t point = 0;
  };

  /// Queues `item` (or records its launch while capturing); returns its point, 0 when recorded.
  std::uint64_t enqueue(work_item item);
  void run_worker();
  void run(work_item& item);
  void execute(const cpu_launch& launch, std::uint64_t point) noexcept;
  /// Whether this stream was made in this process, not inherited through fork() (its worker is not
  /// in the child).
  bool inherited_through_fork() const noexcept;

  std::shared_ptr<cpu_device> owner_;
  std::shared_ptr<cpu_timing_slots> timings_ = std::make_shared<cpu_timing_slots>();
  const std::uint64_t generation_;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable progressed_;
  std::vector<work_item> queue_;         // guarded by mutex_
  std::uint64_t submitted_ = 0;          // guarded by mutex_
  std::uint64_t completed_ = 0;          // guarded by mutex_
  stream_failure failure_;               // guarded by mutex_
  capture_window<cpu_launch> capture_;   // guarded by mutex_ (its open() is not)
  bool stopping_ = false;                // guarded by mutex_
  std::atomic<std::uint64_t> completed_relaxed_{0};  // completed_, for passed() without the lock
  std::thread worker_;                   // started by the first submission
};

}  // namespace launchwatch::detail
