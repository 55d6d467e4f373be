#include "timing_slots.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include <launchwatch/errors.hpp>

#include "cuda_check.hpp"

namespace launchwatch::detail::cuda {

timing_slot_pool::timing_slot_pool(int device) : device_{device} {}

timing_slot_pool::~timing_slot_pool() {
  device_guard on{device_};
  for (std::uint32_t i = 0; i < chunk_count_.load(std::memory_order_acquire); ++i) {
    chunk* c = chunks_[i].load(std::memory_order_acquire);
    (void)cudaFree(c->slots);
    (void)cudaFreeHost(c->records);
    delete c;
  }
}

cuda_timing_record& timing_slot_pool::record(std::uint32_t index) const noexcept {
  chunk* c = chunks_[index / slots_per_chunk].load(std::memory_order_acquire);
  return c->records[index % slots_per_chunk];
}

void timing_slot_pool::grow() {
  const std::uint32_t n = chunk_count_.load(std::memory_order_relaxed);
  if (n == max_chunks) {
    throw device_error{
        "launchwatch: over a million timed CUDA launches are in flight with their measurements "
        "unread; resolve or drop the profile_durations an observer keeps"};
  }
  device_guard on{device_};
  auto c = std::make_unique<chunk>();
  check(cudaMalloc(&c->slots, sizeof(cuda_timing_slot) * slots_per_chunk), "cudaMalloc", device_);
  void* host = nullptr;
  const cudaError_t status =
      cudaHostAlloc(&host, sizeof(cuda_timing_record) * slots_per_chunk, cudaHostAllocMapped);
  if (status != cudaSuccess) {
    (void)cudaFree(c->slots);
    check(status, "cudaHostAlloc", device_);
  }
  c->records = static_cast<cuda_timing_record*>(host);
  std::fill_n(c->records, slots_per_chunk, cuda_timing_record{});
  void* on_device = nullptr;
  check(cudaHostGetDevicePointer(&on_device, host, 0), "cudaHostGetDevicePointer", device_);
  c->records_on_device = static_cast<cuda_timing_record*>(on_device);
  // Empty state: the earliest start folds in by minimum, so it starts at the largest value.
  cuda_timing_slot blank{};
  blank.start = ~0ull;
  std::vector<cuda_timing_slot> empty(slots_per_chunk, blank);
  // Synchronous, through the legacy stream: the runtime's streams are non-blocking, so this waits
  // for nothing of theirs, and the slots are ready before any launch can be given one.
  check(cudaMemcpy(c->slots, empty.data(), sizeof(cuda_timing_slot) * slots_per_chunk,
                   cudaMemcpyHostToDevice),
        "cudaMemcpy", device_);
  chunks_[n].store(c.release(), std::memory_order_release);
  chunk_count_.store(n + 1, std::memory_order_release);
  // Reserved up front so that release(), which must not throw, never allocates.
  free_.reserve(std::size_t{n + 1} * slots_per_chunk);
  abandoned_.reserve(std::size_t{n + 1} * slots_per_chunk);
  for (std::uint32_t i = slots_per_chunk; i-- > 0;) free_.push_back(n * slots_per_chunk + i);
}

timing_slot_pool::lease timing_slot_pool::acquire() {
  std::lock_guard lock{mutex_};
  if (free_.empty() && !abandoned_.empty()) {
    // Reclaim dropped measurements whose launches have finished.
    std::erase_if(abandoned_, [&](const lease& dropped) {
      if (!poll(dropped)) return false;
      free_.push_back(dropped.index);
      return true;
    });
  }
  if (free_.empty()) grow();
  const std::uint32_t index = free_.back();
  free_.pop_back();
  return lease{index, next_sequence_++};
}

cuda_timing_target timing_slot_pool::target(const lease& taken) const noexcept {
  chunk* c = chunks_[taken.index / slots_per_chunk].load(std::memory_order_acquire);
  const std::uint32_t at = taken.index % slots_per_chunk;
  return cuda_timing_target{c->slots + at, c->records_on_device + at, taken.sequence};
}

std::optional<device_window> timing_slot_pool::poll(const lease& taken) const noexcept {
  cuda_timing_record& r = record(taken.index);
  if (std::atomic_ref<std::uint64_t>{r.sequence}.load(std::memory_order_acquire) != taken.sequence) {
    return std::nullopt;
  }
  return device_window{std::atomic_ref<std::uint64_t>{r.start}.load(std::memory_order_relaxed),
                       std::atomic_ref<std::uint64_t>{r.end}.load(std::memory_order_relaxed)};
}

void timing_slot_pool::release(const lease& taken, bool submitted) noexcept {
  std::lock_guard lock{mutex_};
  if (!submitted || poll(taken)) {
    free_.push_back(taken.index);
  } else {
    // The device may still write this slot: keep it out of use until its record arrives.
    abandoned_.push_back(taken);
  }
}

std::size_t timing_slot_pool::capacity() const noexcept {
  return std::size_t{chunk_count_.load(std::memory_order_acquire)} * slots_per_chunk;
}

}  // namespace launchwatch::detail::cuda
