// Stream captures in progress anywhere in the process, so the bridge never synchronises a device
// while one records (review 2026-12-01b, U1, settled on the H200: flush()'s cudaDeviceSynchronize
// during another thread's global-mode capture invalidates that capture, relaxed capture mode
// notwithstanding). CUPTI-free: the bridge tells it of every capture begun and ended (the
// driver's cuStreamBeginCapture*, cuStreamBeginCaptureToGraph* and cuStreamEndCapture*
// callbacks), and asks it to run a device synchronisation only while none is in progress.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace launchwatch::detail::cuda_bridge {

/// The captures in progress, and the synchronisations the bridge runs outside them.
///
/// The two exclude each other: a synchronisation starts only while no capture is in progress, and
/// a capture that begins meanwhile waits (in its begin call's ENTER callback, before the driver
/// starts it) until the synchronisation returned, at most `longest_wait`. So a capture is never
/// recording while a synchronisation of the bridge is in flight. The bound keeps a program whose
/// device work waits for that very thread (a kernel spinning on a host flag it sets after the
/// capture begins) from hanging: past it the capture goes ahead, said once.
///
/// Thread safety: every member is safe from any thread.
class capture_gate {
 public:
  explicit capture_gate(std::chrono::milliseconds longest_wait) noexcept
      : longest_wait_{longest_wait} {}
  capture_gate(const capture_gate&) = delete;
  capture_gate& operator=(const capture_gate&) = delete;

  /// A capture on `stream` (a key unique to the stream while it lives) is about to begin: counted
  /// in progress from now; returns once no synchronisation of the bridge is in flight.
  /// Cost: a lock; a wait only while a synchronisation runs.
  void beginning(std::uint64_t stream);
  /// The capture on `stream` ended (its end call returned, or its begin call failed). A capture
  /// this gate never saw begin (it began before the bridge subscribed) is ignored. Cost: a lock.
  void ended(std::uint64_t stream) noexcept;

  /// Runs `synchronise` unless a capture is in progress. Returns whether the devices may be taken
  /// as idle: it ran (an empty one stands for a caller with nothing to wait for) with no capture
  /// in progress. Exceptions from `synchronise` propagate, the gate opened again first.
  bool synchronise_outside_captures(const std::function<void()>& synchronise);

  /// Captures in progress now, of those this gate saw begin: where it saw every capture begin,
  /// zero means no stream is capturing. Cost: one load, no lock (a launch asks it).
  [[nodiscard]] std::size_t in_progress() const noexcept {
    return count_.load(std::memory_order_acquire);
  }

 private:
  const std::chrono::milliseconds longest_wait_;
  mutable std::mutex mutex_;
  std::condition_variable synchronised_;
  /// Captures in progress by stream (a count: a begin whose failure is told after a new begin on
  /// the same stream must not end the new one early).
  std::map<std::uint64_t, std::size_t> captures_;
  /// Their number: changed under mutex_ (with captures_), read without it.
  std::atomic<std::size_t> count_{0};
  /// Synchronisations in flight.
  std::size_t synchronising_ = 0;
};

}  // namespace launchwatch::detail::cuda_bridge
