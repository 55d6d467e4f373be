// Deferred timing's per-device state: its slots, its clock and the keeper that re-anchors it.

#include "cuda_device.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "cuda_common/capture_mode.hpp"
#include "cuda_check.hpp"

namespace launchwatch::detail::cuda {

namespace {

// Every device_timing alive, so the keepers can be stopped at exit while CUDA still works.
struct keeper_registry {
  std::mutex mutex;
  std::vector<device_timing*> timings;
  static keeper_registry& get() {
    static auto* const instance = new keeper_registry;  // never destroyed: used at exit
    return *instance;
  }
};

}  // namespace

device_timing::device_timing(int index, std::shared_ptr<device_health> device_health,
                             std::chrono::nanoseconds overhead, std::uint32_t slots)
    : device{index},
      health{std::move(device_health)},
      grid_overhead{overhead},
      collector{index, health, slots},
      clock{index} {
  // No anchor is taken here: the first timed launch would wait for the device (behind a
  // persistent kernel, forever). The keeper anchors as soon as timing starts, and a read that
  // comes first takes the anchor itself.
  keeper_ = std::thread{[this] { keep(); }};
  auto& registry = keeper_registry::get();
  std::lock_guard lock{registry.mutex};
  // Registered after CUDA started, so this runs before CUDA's own teardown at exit.
  static const bool registered = (std::atexit(&device_timing::stop_all_keepers), true);
  (void)registered;
  registry.timings.push_back(this);
}

device_timing::~device_timing() {
  {
    auto& registry = keeper_registry::get();
    std::lock_guard lock{registry.mutex};
    std::erase(registry.timings, this);
  }
  stop();
}

void device_timing::stop_all_keepers() noexcept {
  auto& registry = keeper_registry::get();
  std::lock_guard lock{registry.mutex};
  for (device_timing* t : registry.timings) t->stop();
}

void device_timing::stop() noexcept {
  {
    std::lock_guard lock{keeper_mutex_};
    stopping_ = true;
  }
  keeper_wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  collector.stop();
}

void device_timing::mark_active() noexcept {
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

void device_timing::keep() {
  std::unique_lock lock{keeper_mutex_};
  while (!stopping_) {
    keeper_wake_.wait_for(lock, device_clock::reanchor_interval,
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

std::optional<profile_ticks> device_timing::read(timing_record& record, std::string_view kernel,
                                                 bool at_once) {
  std::optional<device_window> window;
  if (at_once) window = collector.read_alone(record);
  if (!window) window = collector.wait(record, kernel);
  if (!window) return std::nullopt;
  {
    relaxed_capture_mode relaxed;
    clock.ensure_anchored();
  }
  const auto before = static_cast<std::uint64_t>(grid_overhead.count() / 2);
  const auto after = static_cast<std::uint64_t>(grid_overhead.count()) - before;
  profile_ticks ticks = clock.to_ticks(window->start - std::min(before, window->start),
                                       window->end + after);
  // A mapping extrapolated across an idle spell can place a kernel before its own launch; the
  // length is right, so move it, never shorten it.
  if (ticks.start() < record.submitted) {
    ticks = profile_ticks::from_start_end(record.submitted, record.submitted + ticks.length());
  }
  return ticks;
}

}  // namespace launchwatch::detail::cuda
