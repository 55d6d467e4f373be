// Timing slots for a CPU stream: the records its worker stamps timed launches' windows into.
//
// "Timing slots" is one concept in every backend (cuda/timing_slots.hpp, vulkan/timing_slots.hpp):
// the places where a timed launch's two stamps are written, lent to the launch from its submission
// until its measurement is read. On the CPU the worker stamps the steady clock itself, so a slot is
// a host record, the slots belong to one stream, and they grow rather than run out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <launchwatch/profile.hpp>

#include "core/interface/fork_generation.hpp"

namespace launchwatch::detail {

/// A stream's timing slots: where its worker stamps its timed launches' starts and ends, record by
/// record.
///
/// Records are reused from launch to launch, so a timed launch allocates nothing once the stream has
/// timed a chunk's worth; a measurement holds its pool (not its stream, which it may outlive) and
/// its record. A record has two holders, the worker that stamps it and the measurement that reads
/// it, and goes back to the pool when the last of them is done, so a measurement dropped unread
/// before its kernel ran never frees a record the worker is about to write.
///
/// Thread safety: acquire and release from any thread.
class cpu_timing_slots {
 public:
  struct record {
    instant start{};
    instant end{};
    std::atomic<bool> done{false};
    std::atomic<int> holders{0};
    record* next_free = nullptr;
  };

  cpu_timing_slots() = default;
  cpu_timing_slots(const cpu_timing_slots&) = delete;
  cpu_timing_slots& operator=(const cpu_timing_slots&) = delete;

  /// A record for one launch, with both holders counted. Cost: a lock; an allocation of a chunk of
  /// records when none is free.
  record* acquire();
  /// Says one holder of `taken` is done with it; the last one hands it back.
  void let_go(record* taken) noexcept;
  /// Whether the pool was made before a fork() this process came out of: its stream's worker, which
  /// finishes its records, stayed with the parent.
  bool inherited_through_fork() const noexcept { return generation_ != fork_generation(); }

 private:
  static constexpr std::size_t chunk_size = 64;
  const std::uint64_t generation_ = fork_generation();
  std::mutex mutex_;
  std::vector<std::unique_ptr<record[]>> chunks_;
  record* free_ = nullptr;
};

}  // namespace launchwatch::detail
