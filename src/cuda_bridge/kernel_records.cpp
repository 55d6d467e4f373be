// The awaited table of kernel records and its collector thread (kernel_records.hpp); CUPTI-free.
#include "kernel_records.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "diagnostics.hpp"

namespace launchwatch::detail::cuda_bridge {
profile_ticks steady_window(std::uint64_t start, std::uint64_t end) noexcept {
  const auto at = [](std::uint64_t nanoseconds) {
    return instant{std::chrono::duration_cast<instant::duration>(
        std::chrono::nanoseconds{static_cast<std::int64_t>(nanoseconds)})};
  };
  return profile_ticks::from_start_end(at(start), at(end));
}

kernel_records::kernel_records(std::chrono::milliseconds flush_period,
                               std::chrono::milliseconds timeout, flusher flush,
                               std::function<void(const kernel_record&)> others,
                               std::function<bool()> others_pending)
    : flush_period_{flush_period},
      timeout_{timeout},
      flush_{std::move(flush)},
      others_{std::move(others)},
      others_pending_{std::move(others_pending)} {}

kernel_records::~kernel_records() {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  wake_collector_.notify_all();
  if (collector_.joinable()) collector_.join();
}

void kernel_records::start() { collector_ = std::thread{[this] { collect(); }}; }

kernel_records::awaited* kernel_records::find_locked(std::uint32_t correlation) noexcept {
  slot& s = ring_[correlation & (ring_size - 1)];
  if (s.taken && s.correlation == correlation) return &s.entry;
  const auto found = overflow_.find(correlation);
  return found != overflow_.end() ? &found->second : nullptr;
}

void kernel_records::erase_locked(std::uint32_t correlation) noexcept {
  slot& s = ring_[correlation & (ring_size - 1)];
  if (s.taken && s.correlation == correlation) {
    s.taken = false;
    return;
  }
  overflow_.erase(correlation);
}

void kernel_records::await(std::uint32_t correlation) {
  std::lock_guard lock{mutex_};
  slot& s = ring_[correlation & (ring_size - 1)];
  if (!s.taken) {
    s = slot{correlation, true, awaited{}};
  } else {
    overflow_.try_emplace(correlation);
  }
  ++outstanding_;
}

void kernel_records::forget(std::uint32_t correlation) noexcept {
  std::lock_guard lock{mutex_};
  const awaited* entry = find_locked(correlation);
  if (entry == nullptr) return;
  if (!entry->arrived) --outstanding_;
  erase_locked(correlation);
}

std::optional<profile_ticks> kernel_records::take(std::uint32_t correlation) {
  std::unique_lock lock{mutex_};
  awaited* found = find_locked(correlation);
  if (found == nullptr) {
    ++counts_.missing;
    lock.unlock();
    warn_missing(correlation, "was never awaited");
    return std::nullopt;
  }
  awaited& entry = *found;  // stays valid until erased below: only its owner erases it
  if (!entry.arrived && !closed_) {
    urgent_ = true;
    ++waiting_;
    wake_collector_.notify_one();
    (void)arrived_.wait_for(lock, timeout_, [&] { return entry.arrived || closed_; });
    --waiting_;
  }
  const awaited got = entry;
  if (!got.arrived) --outstanding_;
  erase_locked(correlation);
  if (!got.arrived || got.start == 0 || got.end == 0 || got.end < got.start) {
    ++counts_.missing;
    lock.unlock();
    warn_missing(correlation, got.arrived ? "carried no timestamps (the kernel was still running "
                                            "when CUPTI was forced to hand its record over)"
                                          : "did not arrive in time");
    return std::nullopt;
  }
  ++counts_.delivered;
  return steady_window(got.start, got.end);
}

void kernel_records::warn_missing(std::uint32_t correlation, const char* why) {
  const record_counts now = counts();
  const auto level = first_time(once_warning::cupti_record_missing) ? spdlog::level::warn
                                                                    : spdlog::level::debug;
  diagnostics().log(
      level,
      "Skipped timing a CUDA launch (CUPTI correlation {}) for its observer: its kernel record {}; "
      "a zero would report a launch that was never timed. So far {} measurement(s) missing, {} "
      "record(s) dropped by CUPTI. Another CUPTI client registering activity buffers takes the "
      "records; a kernel running past cuda_bridge_options::record_timeout holds every record in "
      "its buffer.",
      correlation, why, now.missing, now.dropped);
}

void kernel_records::on_records(std::span<const kernel_record> kernels, std::size_t dropped) {
  // Applied in short locked steps: launching threads take the same lock to await their records,
  // and must not stall behind a whole buffer (its reader parsed it without the lock).
  constexpr std::size_t step = 256;
  std::vector<kernel_record> unawaited;
  bool any = false;
  for (std::size_t first = 0; first < kernels.size() || first == 0; first += step) {
    std::lock_guard lock{mutex_};
    if (first == 0) counts_.dropped += dropped;
    const std::size_t last = std::min(kernels.size(), first + step);
    for (std::size_t i = first; i < last; ++i) {
      const kernel_record& k = kernels[i];
      awaited* found = find_locked(k.correlation);
      if (found != nullptr && !found->arrived) {
        *found = awaited{true, k.start, k.end};
        --outstanding_;
        any = true;
      } else if (others_ && k.graph_node != 0) {
        unawaited.push_back(k);
      }
    }
    if (last >= kernels.size()) break;
  }
  if (any) arrived_.notify_all();
  for (const kernel_record& r : unawaited) others_(r);
}

void kernel_records::collect() {
  std::unique_lock lock{mutex_};
  while (!stopping_) {
    (void)wake_collector_.wait_for(lock, flush_period_, [&] { return urgent_ || stopping_; });
    if (stopping_) break;
    // While any awaited record is missing, not only while a resolve waits: measured on the H200
    // (20 000 empty launches, docs/benchmarks.md), a deferred launch cost +1.35 µs host with these
    // flushes and +2.1-2.2 µs without them, when CUPTI's buffers fill before they are handed over.
    bool wanted = urgent_ || waiting_ > 0 || outstanding_ > 0;
    urgent_ = false;
    lock.unlock();
    if (!wanted && others_pending_) wanted = others_pending_();
    if (!wanted) {
      lock.lock();
      continue;
    }
    // Never FORCED here: a forced flush hands back a running kernel's record with zero timestamps,
    // and CUPTI never delivers it again.
    flush_(false);
    lock.lock();
  }
}

void kernel_records::flush_completed() { flush_(false); }

void kernel_records::flush_until_delivered(std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    flush_completed();
    bool delivered = false;
    {
      std::lock_guard lock{mutex_};
      delivered = outstanding_ == 0;
    }
    if (delivered && (!others_pending_ || !others_pending_())) return;
    if (std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
}

void kernel_records::close() {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  wake_collector_.notify_all();
  if (collector_.joinable()) collector_.join();
  // The devices are idle: whatever is still in a buffer is complete, and only a forced flush
  // returns a buffer that is not full.
  flush_(true);
  {
    std::lock_guard lock{mutex_};
    closed_ = true;
  }
  arrived_.notify_all();
}

record_counts kernel_records::counts() const noexcept {
  std::lock_guard lock{mutex_};
  return counts_;
}

}  // namespace launchwatch::detail::cuda_bridge
