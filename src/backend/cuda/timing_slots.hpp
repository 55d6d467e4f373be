// The device memory and mapped host records that timed launches stamp their windows into.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <launchwatch/detail/cuda_entry.hpp>

namespace launchwatch::detail::cuda {

/// A launch's window as the device stamped it, in global-timer nanoseconds.
struct device_window {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
};

/// Timing slots for one device: a slot in device memory per timed launch in flight, and beside it
/// a record in pinned host memory that the launch's last block fills.
///
/// A slot is taken on the issuing thread when a timed launch is submitted and given back once its
/// window was read, or once its launch has finished if its measurement was dropped unread: until
/// then the device may still write into it. The device leaves each slot empty again after use, so
/// taking one is a lock and a pop, and reading one is a load of host memory: nothing is waited for
/// and no CUDA call is made per launch. Slots come in chunks allocated as needed.
///
/// Thread safety: every member may be called from any thread.
class timing_slot_pool {
 public:
  // A slot is 4,224 B of device memory (its lanes keep to their own cache lines, plus the slot's
  // header), so a chunk of 256 is about 1.03 MiB; 4096 chunks hold 2^20 unread measurements, about
  // 4.4 GB, after which acquire() throws (review finding 1, issue 10).
  static constexpr std::uint32_t slots_per_chunk = 256;
  static constexpr std::uint32_t max_chunks = 4096;

  /// One use of one slot: its index and the sequence number the launch will write.
  struct lease {
    std::uint32_t index = 0;
    std::uint64_t sequence = 0;
  };

  explicit timing_slot_pool(int device);
  /// Frees every chunk. Precondition: no launch that was given a slot is still running.
  ~timing_slot_pool();
  timing_slot_pool(const timing_slot_pool&) = delete;
  timing_slot_pool& operator=(const timing_slot_pool&) = delete;

  /// Takes a free slot, reclaiming abandoned ones whose launch has finished and allocating a chunk
  /// when none is left. Throws device_error when the allocation fails.
  ///
  /// Cost: an uncontended lock and a pop; a chunk's allocation (a few hundred µs) once per 256
  /// slots in flight at once.
  lease acquire();

  /// What the launch passes its entry to stamp into the slot.
  cuda_timing_target target(const lease& taken) const noexcept;

  /// The launch's window once its last block has written it, or nothing yet. Never blocks.
  std::optional<device_window> poll(const lease& taken) const noexcept;

  /// Gives the slot back: at once when its launch wrote its window or was never submitted
  /// (`submitted` false), else once the launch is seen to have finished. Never throws.
  void release(const lease& taken, bool submitted = true) noexcept;

  /// Slots allocated so far (for tests and the measurement harness).
  std::size_t capacity() const noexcept;

 private:
  struct chunk {
    cuda_timing_slot* slots = nullptr;            // device memory
    cuda_timing_record* records = nullptr;        // pinned host memory
    cuda_timing_record* records_on_device = nullptr;
  };

  cuda_timing_record& record(std::uint32_t index) const noexcept;
  void grow();  // holds mutex_

  int device_;
  std::array<std::atomic<chunk*>, max_chunks> chunks_{};
  std::atomic<std::uint32_t> chunk_count_{0};

  std::mutex mutex_;
  std::vector<std::uint32_t> free_;
  std::vector<lease> abandoned_;
  std::uint64_t next_sequence_ = 1;
};

}  // namespace launchwatch::detail::cuda
