// Event pairs for `resolved` timing (resolved_timing.hpp).
#include "resolved_timing.hpp"

#include <cuda_runtime.h>

#include <chrono>

namespace launchwatch::detail::cuda_bridge {
namespace {

/// A thread's pair of events, on the context they were made in; reused by every launch of the
/// thread, since a resolved measurement is read before the launch returns. Not destroyed at thread
/// exit (CUDA may be gone by then): two events a thread. Trivially destructible.
struct event_pair {
  void* context = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
};

thread_local event_pair this_thread_events;

/// A `resolved` measurement: two events on the launch's stream, read at once.
struct event_resolver {
  cudaEvent_t start;
  cudaEvent_t end;
  std::optional<profile_ticks> operator()() const noexcept {
    float milliseconds = 0;
    if (cudaEventSynchronize(end) != cudaSuccess ||
        cudaEventElapsedTime(&milliseconds, start, end) != cudaSuccess) {
      (void)cudaGetLastError();
      return std::nullopt;
    }
    // Events give a length on the device; the window is placed where the host saw it end.
    const instant closed = std::chrono::steady_clock::now();
    const auto length = std::chrono::duration_cast<instant::duration>(
        std::chrono::duration<double, std::milli>{milliseconds});
    return profile_ticks::from_start_end(closed - length, closed);
  }
};

}  // namespace

bool open_resolved_window(void* context, void* stream) noexcept {
  event_pair& events = this_thread_events;
  if (events.context != context || events.start == nullptr) {
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    if (cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&end) == cudaSuccess) {
      events.start = start;
      events.end = end;
      events.context = context;
    } else {
      (void)cudaGetLastError();
      events.start = events.end = nullptr;
    }
  }
  if (events.start == nullptr ||
      cudaEventRecord(events.start, static_cast<cudaStream_t>(stream)) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

std::optional<profile_duration> close_resolved_window(void* stream) {
  const event_pair& events = this_thread_events;
  if (cudaEventRecord(events.end, static_cast<cudaStream_t>(stream)) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return profile_duration{event_resolver{events.start, events.end}, timing_method::device};
}

}  // namespace launchwatch::detail::cuda_bridge
