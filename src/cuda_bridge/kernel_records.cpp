// CUPTI's concurrent-kernel records: delivery, the awaited table, the collector thread.
#include "kernel_records.hpp"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "diagnostics.hpp"

namespace launchwatch::detail::cuda_bridge {
namespace {

// Per-thread buffers are CUPTI 13's default, so each launching thread holds one of these while it
// launches timed work: 2 MiB holds about 8 000 kernel records, a pass's worth between two flushes.
constexpr std::size_t buffer_bytes = std::size_t{2} << 20;
constexpr std::size_t record_alignment = 8;  // ACTIVITY_RECORD_ALIGNMENT

// The buffer callbacks carry no user data: they find the table of the live bridge here.
std::mutex active_mutex;
std::shared_ptr<kernel_records> active;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(record_alignment, buffer_bytes));
  *size = *buffer != nullptr ? buffer_bytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                               size_t /*size*/, size_t valid_size) {
  std::shared_ptr<kernel_records> records;
  {
    std::lock_guard lock{active_mutex};
    records = active;
  }
  if (records) records->on_buffer(buffer, valid_size, context, stream_id);
  std::free(buffer);
}

/// The steady clock in nanoseconds, for CUPTI's timestamps: records then carry `instant`s, with no
/// mapping between clocks and nothing NTP can step.
uint64_t CUPTIAPI steady_nanoseconds() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

profile_ticks steady_window(std::uint64_t start, std::uint64_t end) noexcept {
  const auto at = [](std::uint64_t nanoseconds) {
    return instant{std::chrono::duration_cast<instant::duration>(
        std::chrono::nanoseconds{static_cast<std::int64_t>(nanoseconds)})};
  };
  return profile_ticks::from_start_end(at(start), at(end));
}

kernel_records::kernel_records(std::chrono::milliseconds flush_period,
                               std::chrono::milliseconds timeout,
                               std::function<void(const kernel_record&)> others,
                               std::function<bool()> others_pending)
    : flush_period_{flush_period},
      timeout_{timeout},
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

int kernel_records::start() {
  if (const CUptiResult r = cuptiActivityRegisterTimestampCallback(&steady_nanoseconds);
      r != CUPTI_SUCCESS) {
    return r;
  }
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
      r != CUPTI_SUCCESS) {
    return r;
  }
  {
    std::lock_guard lock{active_mutex};
    active = shared_from_this();
  }
  collector_ = std::thread{[this] { collect(); }};
  return CUPTI_SUCCESS;
}

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

void kernel_records::on_buffer(std::uint8_t* buffer, std::size_t valid_bytes, void* context,
                               std::uint32_t stream_id) {
  // Read without the table's lock (a full buffer holds thousands of records, 40-55 ns each to
  // parse), then applied in short locked steps: launching threads take the same lock to await
  // their records, and must not stall behind a whole buffer.
  std::vector<kernel_record> kernels;
  CUpti_Activity* record = nullptr;
  while (valid_bytes > 0 &&
         cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    kernels.push_back(kernel_record{kernel->correlationId, kernel->graphNodeId, kernel->deviceId,
                                    kernel->streamId, kernel->start, kernel->end});
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(static_cast<CUcontext>(context), stream_id, &dropped) !=
      CUPTI_SUCCESS) {
    dropped = 0;
  }
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
    (void)cuptiActivityFlushAll(0);
    lock.lock();
  }
}

void kernel_records::flush_completed() { (void)cuptiActivityFlushAll(0); }

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
  (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::lock_guard lock{active_mutex};
    if (active.get() == this) active.reset();
  }
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
