// The CUDA backend: a device, its streams and its graphs (its health and timing state have headers
// of their own).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "device_health.hpp"
#include "device_timing.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::cuda {

class cuda_stream;

/// One CUDA device, as the runtime sees it (backend.hpp's `device`).
class cuda_device final : public device, public std::enable_shared_from_this<cuda_device> {
 public:
  /// Opens device `index`. Throws backend_unavailable when it cannot be used.
  explicit cuda_device(int index);
  ~cuda_device() override;

  std::string_view backend() const noexcept override { return "cuda"; }
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

  /// Checks a launch of `launch` against what nvcc compiled for its entry (threads per cube, shared
  /// memory), loading the entry's module on first use. Throws invalid_launch.
  void check_attributes(const launch_descriptor& launch);

  /// The timing state, created on first use (the clock's first anchor is taken then).
  const std::shared_ptr<device_timing>& timing();

  const std::shared_ptr<device_health>& health() const noexcept { return health_; }

  /// Whether this is the only device the process sees, so that no thread can have another one
  /// current: a launch then needs no device_guard (see its `only_device` constructor). Fixed for
  /// the process: CUDA's device count does not change once the runtime has started.
  bool only_device() const noexcept { return only_device_; }

 private:
  const cudaFuncAttributes& attributes_of(const launch_descriptor& launch);
  void finish_service_work(std::string_view call);

  int index_;
  bool only_device_ = false;
  std::string name_;
  device_limits limits_;
  std::size_t shared_memory_per_block_ = 0;
  std::size_t shared_memory_per_block_optin_ = 0;
  std::shared_ptr<device_health> health_;
  // Memory work runs here, not on the caller's stream: a buffer is created, filled and read
  // outside any capture window and without waiting behind the caller's queued kernels (the runtime
  // writes only new memory and reads only after waiting for its uses).
  cudaStream_t service_ = nullptr;
  // Frees wait here, on the device, for the launches that used the memory.
  cudaStream_t release_ = nullptr;
  std::mutex release_mutex_;
  cudaMemPool_t pool_ = nullptr;

  std::shared_mutex attributes_mutex_;
  std::unordered_map<const void*, cudaFuncAttributes> attributes_;

  std::chrono::nanoseconds grid_overhead_{0};
  std::uint32_t timing_slots_ = 0;
  std::once_flag timing_once_;
  std::shared_ptr<device_timing> timing_;
};

/// One CUDA stream (backend.hpp's `stream`). Launches go from the calling thread straight to
/// cudaLaunchKernel; ordering points are counted here, and a wait is a stream synchronisation.
class cuda_stream final : public stream {
 public:
  explicit cuda_stream(std::shared_ptr<cuda_device> owner);
  ~cuda_stream() override;

  void validate(const launch_descriptor& launch) override;
  void prepare(const launch_descriptor& launch) override;
  std::uint64_t submit(const launch_descriptor& launch) override;
  profiled_submission submit_profiled(const launch_descriptor& launch,
                                      launch_path::read_when when) override;
  bool record(const launch_descriptor& launch) override;

  void wait(std::uint64_t point) override;
  std::uint64_t last_point() const noexcept override;
  std::exception_ptr take_failure() noexcept override;
  std::exception_ptr failure_through(std::uint64_t point) const noexcept override;

  void begin_capture() override;
  std::unique_ptr<recorded_graph> end_capture() override;
  bool capturing() const noexcept override { return capturing_.load(std::memory_order_acquire); }

  cudaStream_t handle() const noexcept { return stream_; }
  cuda_device& owner() const noexcept { return *owner_; }

  /// Whether the stream is known to have passed `point`, without asking CUDA.
  bool passed(std::uint64_t point) const noexcept {
    return completed_.load(std::memory_order_acquire) >= point;
  }

  /// Makes `waiter` wait, on the device, for everything submitted here so far (for what was
  /// submitted before the window, while a capture is open). Never waits on the host.
  void order_before(cudaStream_t waiter);

  /// Runs `graph` on this stream; returns the ordering point after it.
  std::uint64_t replay(cudaGraphExec_t graph, std::string_view what);

 private:
  void launch(const launch_descriptor& launch, const cuda_timing_target& timing);
  std::uint64_t note_submitted(std::string_view kernel);  // holds mutex_
  std::string pending_kernels(std::uint64_t after, std::uint64_t upto) const;

  std::shared_ptr<cuda_device> owner_;
  cudaStream_t stream_ = nullptr;

  mutable std::mutex mutex_;
  std::atomic<std::uint64_t> submitted_{0};  // written under mutex_
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<bool> capturing_{false};
  std::size_t captured_launches_ = 0;
  cudaEvent_t before_capture_ = nullptr;  // marks the work submitted before the window
  std::shared_ptr<timing_batch> open_batch_;  // this stream's timed launches not yet beaconed
  std::exception_ptr failure_;
  std::uint64_t failure_point_ = 0;  // the earliest launch the failure can have come from

  // The names of the last launches, by ordering point, so a fault found at a wait can name the
  // kernels that may have caused it.
  static constexpr std::size_t recent_capacity = 32;
  std::array<std::string_view, recent_capacity> recent_{};
};

/// A captured CUDA graph, instantiated (backend.hpp's `recorded_graph`).
class cuda_graph final : public recorded_graph {
 public:
  cuda_graph(std::shared_ptr<cuda_device> owner, cudaGraph_t graph, cudaGraphExec_t executable,
             std::size_t launches);
  ~cuda_graph() override;
  std::size_t size() const noexcept override { return launches_; }
  std::uint64_t replay(stream& on) override;

 private:
  std::shared_ptr<cuda_device> owner_;
  cudaGraph_t graph_;
  cudaGraphExec_t executable_;
  std::size_t launches_;
};

}  // namespace launchwatch::detail::cuda
