// The CUDA entry point every kernel runs through, and the CUDA side of deferred timing.
//
// A kernel is a host-and-device function object; CUDA can only launch a `__global__` function, so
// the CUDA backend launches `cuda_entry<K>`, which builds each unit's `unit` and calls the kernel
// (device_entry.hpp, shared with HIP's entry). Only a translation unit that nvcc compiles can
// instantiate it: there, and only there, the runtime takes its address and can run `K` on a GPU.
//
// This header includes no CUDA header and compiles as plain C++: the entry is defined only under
// nvcc.
#pragma once

#include <cstdint>

#include <launchwatch/detail/device_entry.hpp>

namespace launchwatch::detail {

/// The names the CUDA backend and its tests knew the shared timing layout by.
inline constexpr unsigned cuda_timing_lanes = timing_lanes;
using cuda_timing_lane = timing_lane;
using cuda_timing_slot = timing_slot;
using cuda_timing_target = timing_target;

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

/// How the CUDA entry stamps a timed cube (device_entry.hpp's `Stamps`).
struct cuda_stamps {
  __device__ __forceinline__ static std::uint64_t now() { return cuda_global_timer(); }
  __device__ __forceinline__ static unsigned lane() { return cuda_multiprocessor(); }
  __device__ __forceinline__ static void fold_max(unsigned long long* at,
                                                  unsigned long long value) {
    cuda_fold_max(at, value);
  }
};

/// The entry CUDA launches for kernel `K`: device_entry.hpp's body, stamped by `%globaltimer`.
template <class K>
__global__ void cuda_entry(K kernel, cuda_timing_target timing) {
  run_entry<cuda_stamps>(kernel, timing);
}

#endif  // defined(__CUDACC__)

}  // namespace launchwatch::detail
