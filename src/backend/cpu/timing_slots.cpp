// Timing slots for a CPU stream: lending records and taking them back.
#include "backend/cpu/timing_slots.hpp"

namespace launchwatch::detail {

cpu_timing_slots::record* cpu_timing_slots::acquire() {
  std::lock_guard lock{mutex_};
  if (free_ == nullptr) {
    chunks_.push_back(std::make_unique<record[]>(chunk_size));
    record* chunk = chunks_.back().get();
    for (std::size_t i = 0; i < chunk_size; ++i) {
      chunk[i].next_free = free_;
      free_ = &chunk[i];
    }
  }
  record* taken = free_;
  free_ = taken->next_free;
  taken->done.store(false, std::memory_order_relaxed);
  taken->holders.store(2, std::memory_order_relaxed);
  return taken;
}

void cpu_timing_slots::let_go(record* taken) noexcept {
  if (taken->holders.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::lock_guard lock{mutex_};
  taken->next_free = free_;
  free_ = taken;
}

}  // namespace launchwatch::detail
