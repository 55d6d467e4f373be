// CUPTI's activity buffers, read into the awaited table (activity_buffers.hpp).
#include "activity_buffers.hpp"

#include <cupti.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "activity_buffer_pool.hpp"
#include "cupti_functions.hpp"

namespace launchwatch::detail::cuda_bridge {
namespace {

// Per-thread buffers are CUPTI 13's default, so each launching thread holds one of these while it
// launches timed work: 2 MiB holds about 8 000 kernel records, a pass's worth between two flushes.
constexpr std::size_t buffer_bytes = std::size_t{2} << 20;
// Zeroed buffers kept between uses (activity_buffer_pool.hpp): one per launching thread and those
// a flush has in hand, 16 MiB at most; `ready_at_start` of them made as the records are turned on
// (none while the bridge only names launches).
constexpr std::size_t buffers_kept = 8;
constexpr std::size_t ready_at_start = 4;

// The buffer callbacks carry no user data: they find the table of the live bridge here, and the
// buffers. Never destroyed: CUPTI's own exit handler may hand buffers over after the process's
// statics are gone (review 2026-12-01b, U4), and must then find a live lock and no table rather
// than freed memory.
struct delivery {
  std::mutex mutex;
  std::shared_ptr<kernel_records> records;
  activity_buffer_pool buffers{buffer_bytes, buffers_kept};
};
delivery& active() {
  static delivery* const where = new delivery;
  return *where;
}

/// On the launching thread, inside a launch: a zeroed buffer from the pool, so CUPTI need not zero
/// it there (zeroed_buffers_given() told it so).
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = active().buffers.take();
  *size = *buffer != nullptr ? buffer_bytes : 0;
  *max_records = 0;  // as many as fit
}

/// The buffer's kernel records, read without the table's lock (a full buffer holds thousands of
/// records, 40-55 ns each to parse), then handed to the table, which applies them in short steps.
void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                               size_t /*size*/, size_t valid_size) {
  std::shared_ptr<kernel_records> records;
  {
    std::lock_guard lock{active().mutex};
    records = active().records;
  }
  if (records) {
    std::vector<kernel_record> kernels;
    CUpti_Activity* record = nullptr;
    while (valid_size > 0 &&
           cupti().activity_get_next_record(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      kernels.push_back(kernel_record{kernel->correlationId, kernel->graphNodeId,
                                      kernel->deviceId, kernel->streamId, kernel->start,
                                      kernel->end, kernel->name});
    }
    size_t dropped = 0;
    if (cupti().activity_get_num_dropped_records(context, stream_id, &dropped) != CUPTI_SUCCESS) {
      dropped = 0;
    }
    records->on_records(kernels, dropped);
  }
  // Another CUPTI client's buffer (given to CUPTI while it held the records, handed here after the
  // bridge took them back) is freed, as every buffer was before the pool.
  if (!active().buffers.give_back(buffer, valid_size)) std::free(buffer);
}

/// The steady clock in nanoseconds, for CUPTI's timestamps: records then carry `instant`s, with no
/// mapping between clocks and nothing NTP can step.
uint64_t CUPTIAPI steady_nanoseconds() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

/// Tells CUPTI that the buffers it is given are zero already, so it does not zero each one on the
/// launching thread (activity_buffer_pool.hpp says what that cost). A CUPTI without the attribute
/// refuses it and zeroes them itself, as before: not an error.
void zeroed_buffers_given() noexcept {
  std::uint8_t zeroed = 1;
  std::size_t size = sizeof zeroed;
  (void)cupti().activity_set_attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size,
                                       &zeroed);
}

/// The steady clock and the buffers above, as CUPTI's (process-wide) timestamp and buffer
/// callbacks.
CUptiResult register_callbacks() noexcept {
  zeroed_buffers_given();
  if (const CUptiResult r = cupti().activity_register_timestamp_callback(&steady_nanoseconds);
      r != CUPTI_SUCCESS) {
    return r;
  }
  return cupti().activity_register_callbacks(&buffer_requested, &buffer_completed);
}

}  // namespace

int deliver_activity_to(std::shared_ptr<kernel_records> records) {
  if (const CUptiResult r = register_callbacks(); r != CUPTI_SUCCESS) return r;
  std::lock_guard lock{active().mutex};
  active().records = std::move(records);
  return CUPTI_SUCCESS;
}

int take_activity_back(bool kernel_records_were_on) noexcept {
  if (const CUptiResult r = register_callbacks(); r != CUPTI_SUCCESS) return r;
  if (!kernel_records_were_on) return CUPTI_SUCCESS;
  return cupti().activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

void ready_activity_buffers() noexcept {
  try {
    active().buffers.fill(ready_at_start);
  } catch (...) {
    // No buffer made ahead: CUPTI's first requests allocate them, as they would have.
  }
}

void stop_delivering_to(const kernel_records& records) noexcept {
  std::lock_guard lock{active().mutex};
  if (active().records.get() == &records) active().records.reset();
}

void flush_activity(bool forced) noexcept {
  (void)cupti().activity_flush_all(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

}  // namespace launchwatch::detail::cuda_bridge
