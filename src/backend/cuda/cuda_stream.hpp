// One CUDA stream: launches from the issuing thread straight to cudaLaunchKernel, ordering points,
// faults, captures.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "cuda_device.hpp"
#include "device_timing.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::cuda {

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
  stream_failure failure_;  // guarded by mutex_: at the earliest launch it can have come from

  // The names of the last launches, by ordering point, so a fault found at a wait can name the
  // kernels that may have caused it.
  static constexpr std::size_t recent_capacity = 32;
  std::array<std::string_view, recent_capacity> recent_{};
};

}  // namespace launchwatch::detail::cuda
