// The thread that keeps time for cuda_bridge_options::timing_windows: opens a window (kernel
// records on), waits `on`, closes it (records off), waits `off`, and again, until stopped.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include <launchwatch/cuda_bridge.hpp>

#include "bridge_core.hpp"

namespace launchwatch::detail::cuda_bridge {

/// Throws configuration_error unless both of `windows`' durations are positive. The bridge asks
/// before it subscribes to CUPTI, so a refusal leaves nothing held.
void require_positive(const cuda_timing_windows& windows);

/// Alternates `core`'s timing windows on a thread of its own from construction until stop() (or
/// destruction), which closes an open window first. A window CUPTI refuses to open is skipped: its
/// launches go untimed, and the next window tries again.
///
/// Thread safety: construct and stop on one thread; stop() returns once the thread has ended.
class timing_windows {
 public:
  /// `core` must outlive the thread: stop() before it goes. Throws as require_positive().
  timing_windows(bridge_core& core, const cuda_timing_windows& windows);
  ~timing_windows();
  timing_windows(const timing_windows&) = delete;
  timing_windows& operator=(const timing_windows&) = delete;

  /// Ends the alternation with the window closed. Idempotent.
  void stop() noexcept;

 private:
  void alternate();
  /// Waits `span` unless stopped first; returns whether it was stopped.
  bool stopped_within(std::chrono::milliseconds span);

  bridge_core& core_;
  const cuda_timing_windows windows_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace launchwatch::detail::cuda_bridge
