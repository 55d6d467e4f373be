// CUPTI's side of the kernel records: the buffers CUPTI fills (zeroed ones from a pool,
// activity_buffer_pool.hpp, with CUPTI told so), read into the awaited table (kernel_records.hpp),
// the steady-clock timestamps, and the flushes the table asks for.
#pragma once

#include <memory>

#include "kernel_records.hpp"

namespace launchwatch::detail::cuda_bridge {

/// Registers CUPTI's timestamp and buffer callbacks so completed buffers reach `records`. Call
/// once, before any activity kind is enabled. Returns CUPTI's result (0 on success).
/// Thread safety: construction and teardown of the bridge are serialised by the caller.
int deliver_activity_to(std::shared_ptr<kernel_records> records);

/// Registers the bridge's timestamp and buffer callbacks again and turns CUPTI's kernel records
/// back on when `kernel_records_were_on`: another CUPTI client's registration had replaced them
/// (record_holder.hpp), and it released them (it turned the kinds it used off). Returns CUPTI's
/// result (0 on success). Call only once the other client is done: its buffers would come here,
/// and its timestamps would be on the steady clock.
int take_activity_back(bool kernel_records_were_on) noexcept;

/// Makes the first zeroed buffers CUPTI will ask for, so the launches after the kernel records are
/// turned on find them ready (activity_buffer_pool.hpp). Call before turning the records on; again
/// is cheap (a lock, once they are made). Cost: the first time, four 2 MiB buffers allocated and
/// zeroed (about a millisecond) on the calling thread.
void ready_activity_buffers() noexcept;

/// Stops delivering to `records` (after its close(): the last buffers went there).
void stop_delivering_to(const kernel_records& records) noexcept;

/// kernel_records' flusher for CUPTI: cuptiActivityFlushAll, FORCED when `forced`.
void flush_activity(bool forced) noexcept;

}  // namespace launchwatch::detail::cuda_bridge
