// One GPU stream: launches from the issuing thread straight to the API's kernel launch, ordering
// points, faults, captures. Definitions in gpu_stream_impl.hpp.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "gpu_device.hpp"
#include "runtime/backend.hpp"
#include "runtime/stream_read_order.hpp"

namespace launchwatch::detail::gpu {

/// One GPU stream (backend.hpp's `stream`). Launches go from the calling thread straight to the
/// API's kernel launch; ordering points are counted here, and a wait is a stream synchronisation.
template <class R>
class gpu_stream final : public stream {
 public:
  explicit gpu_stream(std::shared_ptr<gpu_device<R>> owner);
  ~gpu_stream() override;

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

  typename R::stream_handle handle() const noexcept { return stream_; }
  gpu_device<R>& owner() const noexcept { return *owner_; }

  /// Whether the stream is known to have passed `point`, without asking the API.
  bool passed(std::uint64_t point) const noexcept override {
    return completed_.load(std::memory_order_acquire) >= point;
  }

  /// Makes `waiter` wait, on the device, for everything submitted here so far (for what was
  /// submitted before the window, while a capture is open). Never waits on the host.
  void order_before(typename R::stream_handle waiter);

  /// Runs `graph` on this stream; returns the ordering point after it.
  std::uint64_t replay(typename R::graph_exec_handle graph);

 private:
  void launch(const launch_descriptor& launch, const timing_target& timing);
  std::uint64_t note_submitted(std::string_view kernel);  // holds mutex_
  std::string pending_kernels(std::uint64_t after, std::uint64_t upto) const;
  void keep_failure(const std::string& cause, std::uint64_t done, std::uint64_t target);

  std::shared_ptr<gpu_device<R>> owner_;
  typename R::stream_handle stream_ = nullptr;

  mutable std::mutex mutex_;
  std::atomic<std::uint64_t> submitted_{0};  // written under mutex_
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<bool> capturing_{false};
  std::size_t captured_launches_ = 0;
  typename R::event_handle before_capture_ = nullptr;  // marks the work submitted before the window
  std::shared_ptr<timing_batch<R>> open_batch_;  // this stream's timed launches not yet beaconed
  // Its timed launches so far (guarded by mutex_), and the read order of their windows, shared with
  // its timing batches: a measurement's window is placed in stream order, even after the stream.
  std::uint64_t timed_launches_ = 0;
  const std::shared_ptr<stream_reads> reads_ = std::make_shared<stream_reads>();
  stream_failure failure_;  // guarded by mutex_: at the earliest launch it can have come from

  // The names of the last launches, by ordering point, so a fault found at a wait can name the
  // kernels that may have caused it.
  static constexpr std::size_t recent_capacity = 32;
  std::array<std::string_view, recent_capacity> recent_{};
};

}  // namespace launchwatch::detail::gpu
