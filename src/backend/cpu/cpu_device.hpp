// The CPU backend: devices whose memory is host memory and whose streams are worker threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <launchwatch/profile.hpp>

#include "fork_generation.hpp"
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

/// Where a stream's worker stamps its timed launches' starts and ends, record by record.
///
/// Records are reused from launch to launch, so a timed launch allocates nothing once the stream has
/// timed a chunk's worth; a measurement holds its pool (not its stream, which it may outlive) and
/// its record. A record has two holders, the worker that stamps it and the measurement that reads
/// it, and goes back to the pool when the last of them is done, so a measurement dropped unread
/// before its kernel ran never frees a record the worker is about to write.
///
/// Thread safety: acquire and release from any thread.
class cpu_timing_pool {
 public:
  struct record {
    instant start{};
    instant end{};
    std::atomic<bool> done{false};
    std::atomic<int> holders{0};
    record* next_free = nullptr;
  };

  cpu_timing_pool() = default;
  cpu_timing_pool(const cpu_timing_pool&) = delete;
  cpu_timing_pool& operator=(const cpu_timing_pool&) = delete;

  /// A record for one launch, with both holders counted. Cost: a lock; an allocation of a chunk of
  /// records when none is free.
  record* acquire();
  /// Says one holder of `taken` is done with it; the last one hands it back.
  void let_go(record* taken) noexcept;
  /// Whether the pool was made before a fork() this process came out of: its stream's worker, which
  /// finishes its records, stayed with the parent.
  bool inherited_through_fork() const noexcept { return generation_ != fork_generation(); }

 private:
  static constexpr std::size_t chunk_size = 64;
  const std::uint64_t generation_ = fork_generation();
  std::mutex mutex_;
  std::vector<std::unique_ptr<record[]>> chunks_;
  record* free_ = nullptr;
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
    cpu_timing_pool::record* timing = nullptr;
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
  std::shared_ptr<cpu_timing_pool> timings_ = std::make_shared<cpu_timing_pool>();
  const std::uint64_t generation_;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable progressed_;
  std::vector<work_item> queue_;         // guarded by mutex_
  std::uint64_t submitted_ = 0;          // guarded by mutex_
  std::uint64_t completed_ = 0;          // guarded by mutex_
  std::exception_ptr failure_;           // guarded by mutex_
  std::uint64_t failure_point_ = 0;      // guarded by mutex_: the launch that failed
  capture_window<cpu_launch> capture_;   // guarded by mutex_ (its open() is not)
  bool stopping_ = false;                // guarded by mutex_
  std::atomic<std::uint64_t> completed_relaxed_{0};  // completed_, for passed() without the lock
  std::thread worker_;                   // started by the first submission
};

/// A CPU device: host memory with its own tag, and streams of worker threads.
class cpu_device final : public device, public std::enable_shared_from_this<cpu_device> {
 public:
  explicit cpu_device(int index);

  std::string_view backend() const noexcept override { return "cpu"; }
  int index() const noexcept override { return index_; }
  std::string name() const override;
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

 private:
  int index_;
  device_limits limits_;
};

}  // namespace launchwatch::detail
