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
// entry to its last block's exit, with nothing added between kernels. Each cube does only
// fire-and-forget work (two folds by maximum), so a timed pass runs as the untimed one does
// (research/device-timing.md: 1.03-1.04x on 5 µs kernels of 132 cubes that write nothing, 1.00-1.02x
// for kernels that end with their own stores).
//
// This header includes no CUDA header and compiles as plain C++: the layouts below are shared with
// the backend's host code, and the entry itself is defined only under nvcc.
#pragma once

#include <cstdint>

#include <launchwatch/runtime/geometry.hpp>

namespace launchwatch::detail {

/// How many lanes a timed launch's cubes spread their stamps over, chosen by the multiprocessor a
/// cube runs on: cubes on one multiprocessor mostly run one after another, so each lane sees a few
/// writers at a time even in a huge grid (measured on an H200: a 262144-cube fill ran 1.002x its
/// untimed time with 32 lanes, 2.42x with one address).
inline constexpr unsigned cuda_timing_lanes = 32;

/// One lane of a timing slot, alone on its 128-byte line. `start_inverted` holds the bitwise
/// complement of the earliest entry, so both fields fold with a maximum and the empty state is all
/// zeros (a plain copy of zeros resets a slot).
struct alignas(128) cuda_timing_lane {
  unsigned long long start_inverted;
  unsigned long long end;
};

/// Where one timed launch's cubes stamp their windows: in device memory, read back in bulk by the
/// host after the launch has ended, then zeroed by a copy. The device only ever folds into it.
struct cuda_timing_slot {
  cuda_timing_lane lanes[cuda_timing_lanes];
};

/// What a launch passes its entry for timing: its slot, or null when it is not timed.
///
/// Passed by value as a kernel parameter, so timing a launch costs no copy to the device.
struct cuda_timing_target {
  cuda_timing_slot* slot = nullptr;
};

#if defined(__CUDACC__)

/// The device's global timer, in nanoseconds: one clock for every multiprocessor of the device.
/// It advances in steps (32 ns on an H200), which bounds how finely a window can be resolved.
__device__ __forceinline__ std::uint64_t cuda_global_timer() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)::"memory");
  return now;
}

/// The multiprocessor this unit runs on.
__device__ __forceinline__ unsigned cuda_multiprocessor() {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

/// Folds `value` into `*at` by maximum, fire and forget: no value comes back, so the unit does not
/// wait for the memory system (about 9 ns to issue on Hopper, where a returning atomic costs 560).
__device__ __forceinline__ void cuda_fold_max(unsigned long long* at, unsigned long long value) {
  asm volatile("red.relaxed.gpu.global.max.u64 [%0], %1;" ::"l"(at), "l"(value) : "memory");
}

/// The lane of `timing`'s slot this cube stamps.
__device__ __forceinline__ cuda_timing_lane& cuda_timing_lane_of(const cuda_timing_target& timing) {
  return timing.slot->lanes[cuda_multiprocessor() % cuda_timing_lanes];
}

/// Opens a timed cube: its first unit folds the entry time into the cube's lane. Issued before the
/// kernel runs, so its latency hides behind the kernel's work.
__device__ __forceinline__ void cuda_timing_open_block(const cuda_timing_target& timing) {
  if ((threadIdx.x | threadIdx.y | threadIdx.z) != 0) return;
  cuda_fold_max(&cuda_timing_lane_of(timing).start_inverted, ~cuda_global_timer());
}

/// Closes a timed cube once every unit has returned from the kernel: its first unit folds the exit
/// time into the cube's lane. Nothing else: no counter, no fence, nothing written to host memory,
/// no reset; the host learns that the launch ended from the stream's order and reads the slot then.
__device__ __forceinline__ void cuda_timing_close_block(const cuda_timing_target& timing) {
  __syncthreads();
  if ((threadIdx.x | threadIdx.y | threadIdx.z) != 0) return;
  cuda_fold_max(&cuda_timing_lane_of(timing).end, cuda_global_timer());
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
  if (timed) cuda_timing_open_block(timing);
  const ::launchwatch::unit u{
      ::launchwatch::position{blockIdx.x, blockIdx.y, blockIdx.z},
      ::launchwatch::position{threadIdx.x, threadIdx.y, threadIdx.z},
      ::launchwatch::cube_dim{blockDim.x, blockDim.y, blockDim.z},
      ::launchwatch::cube_count{gridDim.x, gridDim.y, gridDim.z}};
  kernel(u);
  if (timed) cuda_timing_close_block(timing);
}

#endif  // defined(__CUDACC__)

}  // namespace launchwatch::detail
