// The CUDA entry point every kernel runs through, and the device-side half of deferred timing.
//
// A kernel is a host-and-device function object; CUDA can only launch a `__global__` function, so
// the CUDA backend launches `cuda_entry<K>`, which builds each unit's `unit` and calls the kernel.
// Only a translation unit that nvcc compiles can instantiate it: there, and only there, the runtime
// takes its address and can run `K` on a GPU.
//
// Timing is stamped here rather than by CUDA events around the launch. Events sit in the stream
// between kernels (each pair adds about 2 µs to a launch-bound pass) and, on such a pass, their
// window also holds the time the device waited for the kernel to arrive. Stamping the device's
// global nanosecond timer inside the entry measures the kernel itself, from its first block's
// entry to its last block's exit, with nothing added between kernels.
//
// This header includes no CUDA header and compiles as plain C++: the layouts below are shared with
// the backend's host code, and the entry itself is defined only under nvcc.
#pragma once

#include <cstdint>

#include <launchwatch/runtime/geometry.hpp>

namespace launchwatch::detail {

/// How many ways a timed launch's cubes spread their bookkeeping: a large grid's cubes would
/// otherwise all hit one address, and atomics on one address run one at a time (measured on an
/// H200: a 262144-cube fill took 3.9 times as long timed as untimed).
inline constexpr unsigned cuda_timing_lanes = 32;

/// A lane of a timing slot, alone on its 128-byte line so lanes never contend with each other.
struct alignas(128) cuda_timing_lane {
  unsigned long long end;
  unsigned long long done;
};

/// Where a timed launch's cubes meet: in device memory, one per launch in flight.
///
/// Each cube folds its exit time into its lane and counts itself done there; the last cube of a
/// lane folds the lane into the slot, and the last lane's last cube copies the window out to the
/// host and leaves the slot empty again, so a slot is ready for its next launch without any host
/// work and the host never touches device memory. The start is folded in only by cubes that
/// entered before the earliest start they saw, which after the first wave is none.
/// Empty state: `start` all ones, everything else zero.
struct alignas(128) cuda_timing_slot {
  unsigned long long start;
  unsigned long long end;
  unsigned long long lanes_done;
  cuda_timing_lane lanes[cuda_timing_lanes];
};

/// The host's copy of one launch's window: pinned host memory the device writes once, through the
/// mapping, when the launch's last block exits.
///
/// `sequence` is written last, after a system-wide fence, and names the launch the window belongs
/// to, so the host reads `start` and `end` only after it saw its own launch's sequence there.
struct cuda_timing_record {
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t sequence;
  std::uint64_t reserved;
};

/// What a launch passes its entry for timing: a slot and a record, or nulls when it is not timed.
///
/// Passed by value as a kernel parameter, so timing a launch costs no copy to the device.
struct cuda_timing_target {
  cuda_timing_slot* slot = nullptr;
  cuda_timing_record* record = nullptr;
  std::uint64_t sequence = 0;
};

#if defined(__CUDACC__)

/// The device's global timer, in nanoseconds: one clock for every multiprocessor of the device.
/// It advances in steps (32 ns on an H200), which bounds how finely a window can be resolved.
__device__ __forceinline__ std::uint64_t cuda_global_timer() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)::"memory");
  return now;
}

/// Adds with acquire-release ordering at device scope and returns the old value: the cube that
/// sees the last count also sees every write the counted cubes made before counting.
__device__ __forceinline__ unsigned long long cuda_count_acq_rel(unsigned long long* counter) {
  unsigned long long old;
  asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], 1;" : "=l"(old) : "l"(counter) : "memory");
  return old;
}

__device__ __forceinline__ unsigned long long cuda_load_relaxed(const unsigned long long* at) {
  unsigned long long value;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(at) : "memory");
  return value;
}

/// Hands a launch's window to the host: the window first, then, after a system-wide fence, the
/// sequence number the host waits for.
__device__ __forceinline__ void cuda_timing_publish(const cuda_timing_target& timing,
                                                   std::uint64_t start, std::uint64_t end) {
  volatile cuda_timing_record* record = timing.record;
  record->start = start;
  record->end = end;
  __threadfence_system();
  record->sequence = timing.sequence;
}

/// Grids up to this many cubes fold straight into the slot; larger ones go through the lanes.
inline constexpr unsigned long long cuda_timing_direct_cubes = 64;

/// Closes a timed cube: folds its window into the slot and, in the launch's last cube, hands the
/// launch's window to the host.
///
/// Called by every unit of the cube after the kernel returned (a unit that returned early returned
/// here too), so the barrier sees the whole cube. Then one unit per cube pays a fire-and-forget
/// maximum and one counting atomic (about one L2 round trip before the cube retires); a one-cube
/// grid pays no atomic at all.
__device__ __forceinline__ void cuda_timing_close_block(const cuda_timing_target& timing,
                                                        std::uint64_t entered,
                                                        std::uint64_t earliest_seen) {
  __syncthreads();
  if ((threadIdx.x | threadIdx.y | threadIdx.z) != 0) return;
  const std::uint64_t left = cuda_global_timer();
  const unsigned long long cubes = static_cast<unsigned long long>(gridDim.x) *
                                   static_cast<unsigned long long>(gridDim.y) *
                                   static_cast<unsigned long long>(gridDim.z);
  if (cubes == 1) {
    cuda_timing_publish(timing, entered, left);
    return;
  }
  cuda_timing_slot* slot = timing.slot;
  if (entered < earliest_seen) atomicMin(&slot->start, static_cast<unsigned long long>(entered));
  unsigned long long lanes_used = cubes;
  if (cubes <= cuda_timing_direct_cubes) {
    atomicMax(&slot->end, static_cast<unsigned long long>(left));
  } else {
    lanes_used = cuda_timing_lanes;
    const unsigned long long linear =
        blockIdx.x + static_cast<unsigned long long>(gridDim.x) *
                         (blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
    const unsigned lane = static_cast<unsigned>(linear % cuda_timing_lanes);
    cuda_timing_lane& mine = slot->lanes[lane];
    atomicMax(&mine.end, static_cast<unsigned long long>(left));
    const unsigned long long in_lane =
        cubes / cuda_timing_lanes + (lane < cubes % cuda_timing_lanes ? 1 : 0);
    if (cuda_count_acq_rel(&mine.done) != in_lane - 1) return;
    // The lane's last cube: every cube of the lane is folded in; fold the lane into the slot and
    // leave the lane empty (nothing else touches it until this launch has ended).
    const unsigned long long lane_end = cuda_load_relaxed(&mine.end);
    volatile cuda_timing_lane& reset = mine;
    reset.end = 0;
    reset.done = 0;
    atomicMax(&slot->end, lane_end);
  }
  if (cuda_count_acq_rel(&slot->lanes_done) != lanes_used - 1) return;
  // The launch's last cube: take the window and leave the slot empty.
  const std::uint64_t start = cuda_load_relaxed(&slot->start);
  const std::uint64_t end = cuda_load_relaxed(&slot->end);
  volatile cuda_timing_slot& empty = *slot;
  empty.start = ~0ull;
  empty.end = 0;
  empty.lanes_done = 0;
  cuda_timing_publish(timing, start, end);
}

/// The entry CUDA launches for kernel `K`: builds the unit and runs the kernel, stamping the
/// block's window when the launch is timed.
///
/// The grid is CUDA's own (gridDim, blockDim): the runtime launches exactly the cube_count and
/// cube_dim it validated, so the entry needs no geometry argument.
/// Precondition: launched with the grid and block the runtime checked (no empty dimension).
/// Cost when untimed: a uniform branch per unit on top of the kernel.
template <class K>
__global__ void cuda_entry(K kernel, cuda_timing_target timing) {
  const bool timed = timing.slot != nullptr;
  std::uint64_t entered = 0;
  std::uint64_t earliest_seen = 0;
  if (timed && (threadIdx.x | threadIdx.y | threadIdx.z) == 0) {
    entered = cuda_global_timer();
    // Read now, used after the kernel: the load's latency hides behind the kernel's work.
    earliest_seen = cuda_load_relaxed(&timing.slot->start);
  }
  const ::launchwatch::unit u{
      ::launchwatch::position{blockIdx.x, blockIdx.y, blockIdx.z},
      ::launchwatch::position{threadIdx.x, threadIdx.y, threadIdx.z},
      ::launchwatch::cube_dim{blockDim.x, blockDim.y, blockDim.z},
      ::launchwatch::cube_count{gridDim.x, gridDim.y, gridDim.z}};
  kernel(u);
  if (timed) cuda_timing_close_block(timing, entered, earliest_seen);
}

#endif  // defined(__CUDACC__)

}  // namespace launchwatch::detail
