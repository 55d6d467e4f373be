// Anchoring a GPU's nanosecond timer to the host's steady clock, by a probe kernel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "clock_mapping.hpp"
#include "clock_probe.hpp"
#include "device_guard.hpp"
#include "device_health.hpp"

namespace launchwatch::detail::gpu {

/// A clock_mapping whose anchors are taken by a probe kernel on device `device`.
///
/// Kernels are stamped with the device's nanosecond timer (CUDA's `%globaltimer`; on AMD GPUs the
/// constant-rate `wall_clock64` counter scaled to nanoseconds), which runs on its own epoch and its
/// own oscillator. The probe reads it while the host reads its steady clock, over pinned memory
/// both can see; the exchange with the shortest round trip of a burst is kept as an anchor.
///
/// Thread safety: every member may be called from any thread.
template <class R>
class device_clock : public clock_mapping {
 public:
  /// A clock for `device`; takes no anchor yet.
  explicit device_clock(int device);
  ~device_clock();
  device_clock(const device_clock&) = delete;
  device_clock& operator=(const device_clock&) = delete;

  /// Loads the probe kernel onto `device` now. CUDA loads a kernel's module at its first use (lazy
  /// loading), which waits for the device and holds the context's lock meanwhile: a first anchor
  /// taken while a kernel holds every multiprocessor would stall every launch of the process, the
  /// keeper's thread notwithstanding. Called when the device is opened, before any such kernel
  /// runs.
  static void load_probe(int device);

  /// Takes an anchor now and extends the mapping with it, waiting at most `wait` for the probe
  /// kernel to start (the device may be busy with other streams' work). Returns whether one was
  /// taken. Cost: a kernel launch and 16 host-device round trips over the bus (tens of µs).
  bool anchor(std::chrono::nanoseconds wait);

  /// Takes a first anchor if there is none, waiting for the device as long as it takes.
  void ensure_anchored();

 private:
  std::optional<clock_anchor> probe(std::chrono::nanoseconds wait);
  void wait_for_probe_start(std::chrono::steady_clock::time_point deadline, bool& started);

  int device_;
  std::mutex probe_mutex_;  // one probe at a time: they share the mailbox
  typename R::stream_handle stream_ = nullptr;
  clock_probe_mailbox* mailbox_ = nullptr;  // pinned, mapped
  clock_probe_mailbox* mailbox_on_device_ = nullptr;
  bool probe_in_flight_ = false;
};

namespace clock_detail {

inline constexpr int exchanges_per_anchor = 16;
// The probe gives up on its own after this long (clock_probe.hpp).
inline constexpr std::uint64_t probe_budget_ns = 50'000'000;

inline std::uint64_t load(std::uint64_t& word) {
  return std::atomic_ref<std::uint64_t>{word}.load(std::memory_order_acquire);
}

inline void store(std::uint64_t& word, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>{word}.store(value, std::memory_order_release);
}

}  // namespace clock_detail

template <class R>
device_clock<R>::device_clock(int device) : device_{device} {
  device_guard<R> on{device_};
  check<R>(R::stream_create(&stream_), "StreamCreateWithFlags", device_);
  void* host = nullptr;
  const auto status = R::host_alloc_mapped(&host, sizeof(clock_probe_mailbox));
  if (status != R::success) {
    (void)R::stream_destroy(stream_);
    check<R>(status, "HostAlloc", device_);
  }
  mailbox_ = static_cast<clock_probe_mailbox*>(host);
  *mailbox_ = clock_probe_mailbox{};
  void* on_device = nullptr;
  check<R>(R::host_device_pointer(&on_device, host), "HostGetDevicePointer", device_);
  mailbox_on_device_ = static_cast<clock_probe_mailbox*>(on_device);
  // Loaded now, while the caller creates deferred timing: under lazy module loading the probe's
  // first launch would load it then, and a load can wait for kernels already running.
  load_probe(device_);
}

template <class R>
device_clock<R>::~device_clock() {
  device_guard<R> on{device_};
  if (mailbox_ != nullptr) clock_detail::store(mailbox_->request, stop_request);
  (void)R::stream_synchronize(stream_);
  (void)R::stream_destroy(stream_);
  (void)R::free_host(mailbox_);
}

template <class R>
void device_clock<R>::load_probe(int device) {
  device_guard<R> on{device};
  check<R>(R::load_clock_probe(), "FuncGetAttributes", device, "launchwatch clock probe");
}

template <class R>
void device_clock<R>::wait_for_probe_start(std::chrono::steady_clock::time_point deadline,
                                           bool& started) {
  started = false;
  while (clock_detail::load(mailbox_->started) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      clock_detail::store(mailbox_->request, stop_request);
      return;
    }
    const auto status = R::stream_query(stream_);
    if (status != R::not_ready && clock_detail::load(mailbox_->started) == 0) {
      check<R>(status, "StreamQuery", device_, "launchwatch clock probe");
      return;  // ended without starting: cannot happen unless the device misbehaves
    }
    std::this_thread::yield();
  }
  started = true;
}

template <class R>
std::optional<clock_anchor> device_clock<R>::probe(std::chrono::nanoseconds wait) {
  std::lock_guard lock{probe_mutex_};
  device_guard<R> on{device_};
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (probe_in_flight_) {
    // The last probe was told to stop; until it has ended, the mailbox is its.
    const auto status = R::stream_query(stream_);
    if (status == R::success) {
      probe_in_flight_ = false;
    } else if (status != R::not_ready) {
      check<R>(status, "StreamQuery", device_, "launchwatch clock probe");
    } else if (std::chrono::steady_clock::now() > deadline) {
      return std::nullopt;
    } else {
      std::this_thread::yield();
    }
  }
  *mailbox_ = clock_probe_mailbox{};
  std::atomic_thread_fence(std::memory_order_seq_cst);
  check<R>(R::launch_clock_probe(stream_, mailbox_on_device_, clock_detail::probe_budget_ns),
           "LaunchKernel", device_, "launchwatch clock probe");
  probe_in_flight_ = true;
  bool started = false;
  wait_for_probe_start(deadline, started);
  if (!started) return std::nullopt;

  std::optional<clock_anchor> best;
  for (std::uint64_t exchange = 1; exchange <= clock_detail::exchanges_per_anchor; ++exchange) {
    const std::int64_t sent = steady_now_ns();
    clock_detail::store(mailbox_->request, exchange);
    bool answered = true;
    while (clock_detail::load(mailbox_->answered) != exchange) {
      if (steady_now_ns() - sent > 5'000'000) {  // the probe ran out of budget: keep what we have
        answered = false;
        break;
      }
    }
    if (!answered) break;
    const std::int64_t received = steady_now_ns();
    const clock_anchor sample{clock_detail::load(mailbox_->device_ns), sent + (received - sent) / 2,
                              (received - sent) / 2};
    if (!best || sample.uncertainty_ns < best->uncertainty_ns) best = sample;
  }
  clock_detail::store(mailbox_->request, stop_request);
  return best;
}

template <class R>
bool device_clock<R>::anchor(std::chrono::nanoseconds wait) {
  const std::optional<clock_anchor> taken = probe(wait);
  return taken && extend(*taken);
}

template <class R>
void device_clock<R>::ensure_anchored() {
  while (!anchored() && !anchor(std::chrono::milliseconds{100})) {
    // The device is busy with other work; the probe runs once it frees a multiprocessor.
  }
}

}  // namespace launchwatch::detail::gpu
