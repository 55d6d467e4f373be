// What the GPU kernel entries (cuda_entry.hpp, hip_entry.hpp) share: the timing slot a timed launch
// stamps, and the body every entry runs.
//
// Timing is stamped inside the entry rather than by events around the launch. Events sit in the
// stream between kernels (each pair adds about 2 µs to a launch-bound pass on an H200) and, on such
// a pass, their window also holds the time the device waited for the kernel to arrive. Stamping the
// device's nanosecond timer inside the entry measures the kernel itself, from its first cube's
// entry to its last cube's exit, with nothing added between kernels. Each cube does only
// fire-and-forget work (two folds by maximum), so a timed pass runs as the untimed one does
// (research/device-timing.md: 1.03-1.04x on 5 µs kernels of 132 cubes that write nothing,
// 1.00-1.02x for kernels that end with their own stores).
//
// This header includes no CUDA or HIP header and compiles as plain C++: the layouts below are
// shared with the backends' host code, and the entry body is defined only under a GPU compiler.
#pragma once

#include <cstdint>

#include <launchwatch/runtime/geometry.hpp>

namespace launchwatch::detail {

/// How many lanes a timed launch's cubes spread their stamps over, chosen by the multiprocessor a
/// cube runs on where the device says (NVIDIA's `%smid`), else by the cube's index: cubes on one
/// multiprocessor mostly run one after another, so each lane sees a few writers at a time even in a
/// huge grid (measured on an H200: a 262144-cube fill ran 1.002x its untimed time with 32 lanes,
/// 2.42x with one address).
inline constexpr unsigned timing_lanes = 32;

/// One lane of a timing slot, alone on its 128-byte line. `start_inverted` holds the bitwise
/// complement of the earliest entry, so both fields fold with a maximum and the empty state is all
/// zeros (a plain copy of zeros resets a slot).
struct alignas(128) timing_lane {
  unsigned long long start_inverted;
  unsigned long long end;
};

/// Where one timed launch's cubes stamp their windows: in device memory, read back in bulk by the
/// host after the launch has ended, then zeroed by a copy. The device only ever folds into it.
struct timing_slot {
  timing_lane lanes[timing_lanes];
};

/// What a launch passes its entry for timing: its slot, or null when it is not timed.
///
/// Passed by value as a kernel parameter, so timing a launch costs no copy to the device.
struct timing_target {
  timing_slot* slot = nullptr;
};

#if defined(__CUDACC__) || defined(__HIP__)

/// The body of every GPU entry for kernel `K`: builds the unit and runs the kernel, stamping the
/// cube's window when the launch is timed. `Stamps` is the platform's: `now()` (the device's
/// nanosecond timer), `lane()` (this cube's lane) and `fold_max(at, value)` (fire and forget: no
/// value comes back, so the unit does not wait for the memory system).
///
/// The grid is the API's own (gridDim, blockDim): the runtime launches exactly the cube_count and
/// cube_dim it validated, so the entry needs no geometry argument. Opening is issued before the
/// kernel runs, so its latency hides behind the kernel's work; closing waits for every unit of the
/// cube, then its first unit folds the exit time. Nothing else: no counter, no fence, nothing
/// written to host memory, no reset; the host learns that the launch ended from the stream's order
/// and reads the slot then.
/// Precondition: launched with the grid and block the runtime checked (no empty dimension).
/// Cost when untimed: a uniform branch per unit on top of the kernel.
template <class Stamps, class K>
__device__ __forceinline__ void run_entry(const K& kernel, const timing_target& timing) {
  const bool timed = timing.slot != nullptr;
  const bool first = (threadIdx.x | threadIdx.y | threadIdx.z) == 0;
  if (timed && first) {
    Stamps::fold_max(&timing.slot->lanes[Stamps::lane() % timing_lanes].start_inverted,
                     ~Stamps::now());
  }
  const ::launchwatch::unit u{::launchwatch::position{blockIdx.x, blockIdx.y, blockIdx.z},
                              ::launchwatch::position{threadIdx.x, threadIdx.y, threadIdx.z},
                              ::launchwatch::cube_dim{blockDim.x, blockDim.y, blockDim.z},
                              ::launchwatch::cube_count{gridDim.x, gridDim.y, gridDim.z}};
  kernel(u);
  if (timed) {
    __syncthreads();
    if (first)
      Stamps::fold_max(&timing.slot->lanes[Stamps::lane() % timing_lanes].end, Stamps::now());
  }
}

#endif  // defined(__CUDACC__) || defined(__HIP__)

}  // namespace launchwatch::detail
