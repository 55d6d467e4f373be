// Deferred timing's state for one GPU device: its slots, its clock and the keeper that re-anchors
// it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <launchwatch/profile.hpp>

#include "core/interface/thread_name.hpp"
#include "device_clock.hpp"
#include "device_health.hpp"
#include "timing_slots.hpp"

namespace launchwatch::detail::gpu {

/// Deferred timing's state for one device: the slots launches stamp, the clock that maps their
/// stamps onto the host's steady clock, and the keeper thread that re-anchors that clock once a
/// second while launches are being timed (so no launch and no read ever waits for an anchor, and
/// the mapping's error does not grow with the length of a run). Created at the device's first timed
/// launch and shared with every unread measurement, which may outlive the client that made it.
template <class R>
class device_timing {
 public:
  device_timing(int device, std::shared_ptr<device_health<R>> health,
                std::chrono::nanoseconds grid_overhead, std::uint32_t slots);
  /// Stops the keeper.
  ~device_timing();
  device_timing(const device_timing&) = delete;
  device_timing& operator=(const device_timing&) = delete;

  /// Notes that a launch is being timed. Cost: one relaxed load, except once per anchor interval.
  void note_timed_launch() noexcept {
    if (!active_.load(std::memory_order_relaxed)) [[unlikely]]
      mark_active();
  }

  /// The window of `record` on the host's steady clock, once read back: the in-kernel window
  /// widened by the grid's launch and retire that no in-kernel stamp sees (`grid_overhead`, half
  /// on each side), mapped through one segment of the clock, and never placed before the launch
  /// was submitted, nor before the end of an earlier launch's window of its stream as that was
  /// handed out (one stream's kernels run one after another; moving a window to its submission,
  /// when the mapping's error places it earlier, must not make it overlap the next). A window is
  /// moved, never shortened. Nothing when the launch left no window. Blocks until the batch is read
  /// back (and, the first time, until the clock has an anchor); throws device_error naming
  /// `kernel` when the device failed first.
  /// `at_once`: read just this launch's slot rather than wait for its batch (resolved timing).
  std::optional<profile_ticks> read(timing_record<R>& record, std::string_view kernel,
                                    bool at_once);

  /// Stops every device's keeper and collector: at exit, before the runtime tears itself down.
  static void stop_all_keepers() noexcept;

  const int device;
  const std::shared_ptr<device_health<R>> health;
  /// The grid launch and retire time an in-kernel window misses, for this device
  /// (grid_overhead.hpp).
  const std::chrono::nanoseconds grid_overhead;
  timing_collector<R> collector;
  device_clock<R> clock;

 private:
  /// Every device_timing alive, so the keepers can be stopped at exit while the runtime works.
  struct keeper_registry {
    std::mutex mutex;
    std::vector<device_timing*> timings;
    static keeper_registry& get() {
      static auto* const instance = new keeper_registry;  // never destroyed: used at exit
      return *instance;
    }
  };

  void mark_active() noexcept;
  void keep();
  void stop() noexcept;

  std::atomic<bool> active_{false};
  std::atomic<bool> idle_{true};
  std::mutex keeper_mutex_;
  std::condition_variable keeper_wake_;
  bool woken_ = false;
  bool stopping_ = false;
  std::thread keeper_;
};

template <class R>
device_timing<R>::device_timing(int index, std::shared_ptr<device_health<R>> device_health,
                                std::chrono::nanoseconds overhead, std::uint32_t slots)
    : device{index},
      health{std::move(device_health)},
      grid_overhead{overhead},
      collector{index, health, slots},
      clock{index} {
  // No anchor is taken here: the first timed launch would wait for the device (behind a
  // persistent kernel, forever). The keeper anchors as soon as timing starts, and a read that
  // comes first takes the anchor itself.
  keeper_ = std::thread{[this] {
    name_this_thread("lw-clock");
    keep();
  }};
  auto& registry = keeper_registry::get();
  std::lock_guard lock{registry.mutex};
  // Registered after the runtime started, so this runs before the runtime's own teardown at exit.
  static const bool registered = (std::atexit(&device_timing::stop_all_keepers), true);
  (void)registered;
  registry.timings.push_back(this);
}

template <class R>
device_timing<R>::~device_timing() {
  {
    auto& registry = keeper_registry::get();
    std::lock_guard lock{registry.mutex};
    std::erase(registry.timings, this);
  }
  stop();
}

template <class R>
void device_timing<R>::stop_all_keepers() noexcept {
  auto& registry = keeper_registry::get();
  std::lock_guard lock{registry.mutex};
  for (device_timing* t : registry.timings) t->stop();
}

template <class R>
void device_timing<R>::stop() noexcept {
  {
    std::lock_guard lock{keeper_mutex_};
    stopping_ = true;
  }
  keeper_wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  collector.stop();
}

template <class R>
void device_timing<R>::mark_active() noexcept {
  if (active_.exchange(true)) return;
  // Timing resumed after a quiet spell: anchor now rather than at the next tick, so the first
  // launches of a pass are not mapped by extrapolating across the pause.
  if (idle_.load()) {
    {
      std::lock_guard lock{keeper_mutex_};
      woken_ = true;
    }
    keeper_wake_.notify_one();
  }
}

template <class R>
void device_timing<R>::keep() {
  std::unique_lock lock{keeper_mutex_};
  while (!stopping_) {
    keeper_wake_.wait_for(lock, clock_mapping::reanchor_interval,
                          [&] { return stopping_ || woken_; });
    if (stopping_) break;
    const bool woken = std::exchange(woken_, false);
    const bool was_active = active_.exchange(false);
    idle_.store(!was_active && !woken);
    if (!was_active && !woken) continue;
    lock.unlock();
    try {
      // Waits briefly: when the device is saturated, the probe tries again next tick.
      if (!health->failed()) (void)clock.anchor(std::chrono::milliseconds{20});
    } catch (...) {
      // A failed device reports itself to whoever waits on it; the keeper just stops anchoring.
    }
    lock.lock();
  }
}

template <class R>
std::optional<profile_ticks> device_timing<R>::read(timing_record<R>& record,
                                                    std::string_view kernel, bool at_once) {
  std::optional<device_window> window;
  if (at_once) window = collector.read_alone(record);
  if (!window) window = collector.wait(record, kernel);
  if (!window) return std::nullopt;
  {
    typename R::relaxed_capture_mode relaxed;
    clock.ensure_anchored();
  }
  const auto before = static_cast<std::uint64_t>(grid_overhead.count() / 2);
  const auto after = static_cast<std::uint64_t>(grid_overhead.count()) - before;
  profile_ticks ticks =
      clock.to_ticks(window->start - std::min(before, window->start), window->end + after);
  // A mapping extrapolated across an idle spell, or off by an anchor's uncertainty, can place a
  // kernel before its own launch, or before an earlier kernel of its stream ended as that window
  // was handed out (itself moved to its launch); the length is right, so move it, never shorten it.
  if (const auto& reads = record.batch->reads) {
    return reads->place(record.sequence, ticks, record.submitted);
  }
  stream_read_order alone;  // no stream's order given (a harness's batch): its submission alone
  return place_in_stream_order(alone, record.sequence, ticks, record.submitted);
}

}  // namespace launchwatch::detail::gpu
