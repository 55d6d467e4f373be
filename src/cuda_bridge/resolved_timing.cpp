// Event pairs for `resolved` timing (resolved_timing.hpp).
#include "resolved_timing.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cuda_common/capture_mode.hpp"

namespace launchwatch::detail::cuda_bridge {
namespace {

/// A pair of events of one context.
struct event_pair {
  void* context = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
};

std::atomic<std::uint64_t> pairs_created{0};
std::atomic<std::uint64_t> pairs_destroyed{0};

void destroy(const event_pair& pair) noexcept {
  (void)cudaEventDestroy(pair.start);
  (void)cudaEventDestroy(pair.end);
  (void)cudaGetLastError();
  pairs_destroyed.fetch_add(1, std::memory_order_relaxed);
}

struct thread_pairs;

/// Every thread's pairs, so the bridge's end can destroy them all. Never destroyed: a thread may
/// end (and unregister) while the process's statics go.
struct registry {
  std::mutex mutex;
  std::unordered_set<thread_pairs*> threads;
};
registry& threads() {
  static registry* const all = new registry;
  return *all;
}

/// A thread's pairs, one per context, and the one its open launch uses.
struct thread_pairs {
  std::vector<event_pair> pairs;
  const event_pair* open = nullptr;
  bool registered = false;
  bool ended = false;

  ~thread_pairs() {
    ended = true;
    if (!registered) return;
    registry& all = threads();
    std::lock_guard lock{all.mutex};
    for (const event_pair& pair : pairs) destroy(pair);
    pairs.clear();
    all.threads.erase(this);
  }

  /// The pair of `context`, made now if the thread has none there; null when CUDA could not.
  const event_pair* of(void* context) noexcept {
    for (const event_pair& pair : pairs) {
      if (pair.context == context) return &pair;
    }
    event_pair made{context, nullptr, nullptr};
    if (cudaEventCreate(&made.start) != cudaSuccess || cudaEventCreate(&made.end) != cudaSuccess) {
      if (made.start != nullptr) (void)cudaEventDestroy(made.start);
      (void)cudaGetLastError();
      return nullptr;
    }
    pairs_created.fetch_add(1, std::memory_order_relaxed);
    try {
      registry& all = threads();
      std::lock_guard lock{all.mutex};
      if (!registered) all.threads.insert(this);
      registered = true;
      pairs.push_back(made);
    } catch (...) {
      destroy(made);
      return nullptr;
    }
    return &pairs.back();
  }
};

thread_local thread_pairs this_thread_pairs;

/// A `resolved` measurement: two events on the launch's stream, read at once.
struct event_resolver {
  cudaEvent_t start;
  cudaEvent_t end;
  std::optional<profile_ticks> operator()() const noexcept {
    // Waiting for an event is no part of another thread's capture (review U1).
    const cuda::relaxed_capture_mode relaxed;
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
  thread_pairs& mine = this_thread_pairs;
  mine.open = nullptr;
  if (mine.ended) return false;  // a launch from another thread-local's destructor
  const cuda::relaxed_capture_mode relaxed;
  const event_pair* pair = mine.of(context);
  if (pair == nullptr ||
      cudaEventRecord(pair->start, static_cast<cudaStream_t>(stream)) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  mine.open = pair;
  return true;
}

std::optional<profile_duration> close_resolved_window(void* stream) {
  const event_pair* pair = std::exchange(this_thread_pairs.open, nullptr);
  if (pair == nullptr) return std::nullopt;
  if (cudaEventRecord(pair->end, static_cast<cudaStream_t>(stream)) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return profile_duration{event_resolver{pair->start, pair->end}, timing_method::device};
}

void release_resolved_windows() noexcept {
  registry& all = threads();
  std::lock_guard lock{all.mutex};
  for (thread_pairs* thread : all.threads) {
    for (const event_pair& pair : thread->pairs) destroy(pair);
    thread->pairs.clear();
    thread->open = nullptr;
    thread->registered = false;
  }
  all.threads.clear();
}

resolved_event_counts resolved_events() noexcept {
  return {pairs_created.load(std::memory_order_relaxed),
          pairs_destroyed.load(std::memory_order_relaxed)};
}

}  // namespace launchwatch::detail::cuda_bridge
