// The HIP entry point every kernel runs through on the HIP backend, and HIP's side of deferred
// timing.
//
// Like cuda_entry.hpp: HIP launches only `__global__` functions, so the HIP backend launches
// `hip_entry<K>`, which runs device_entry.hpp's body. Only a translation unit that a HIP compiler
// compiles instantiates it: HIP's clang on AMD GPUs (`__HIP__`), or nvcc in a build whose HIP
// backend runs on HIP's NVIDIA platform (`LAUNCHWATCH_HIP_PLATFORM_NVIDIA`, where HIP's kernels are
// CUDA's).
//
// The timer a timed cube stamps, in nanoseconds on both platforms:
// - AMD: `wall_clock64()` (`s_memrealtime`), the constant-rate counter every compute unit of the
//   device reads alike, at 100 MHz on the gfx9 GPUs launchwatch compiles for (gfx90a, gfx940;
//   HIP 5.3 and later report the rate as hipDeviceAttributeWallClockRate, and the backend checks
//   it there), scaled to nanoseconds: 10 ns steps. The core-clock counter (`clock64`) changes rate
//   with the core's frequency and is not one clock across the device, so it cannot serve.
// - NVIDIA: `%globaltimer`, as on the CUDA backend (32 ns steps on an H200).
//
// This header includes no HIP header and compiles as plain C++; on AMD the entry needs the HIP
// runtime's device declarations (threadIdx, __syncthreads), which launchwatch::hip's HIP sources
// get by a forced include of hip/hip_runtime.h, the way nvcc includes CUDA's.
#pragma once

#include <cstdint>

#include <launchwatch/config.hpp>
#include <launchwatch/detail/device_entry.hpp>

#if defined(__CUDACC__) && LAUNCHWATCH_HIP_PLATFORM_NVIDIA
#include <launchwatch/detail/cuda_entry.hpp>
#endif

namespace launchwatch::detail {

/// Nanoseconds per tick of AMD's wall clock counter on the GPUs launchwatch compiles for (100 MHz).
inline constexpr std::uint64_t hip_wall_clock_ns_per_tick = 10;

#if defined(__HIP__)

/// How the HIP entry stamps a timed cube on an AMD GPU (device_entry.hpp's `Stamps`).
struct hip_stamps {
  __device__ __forceinline__ static std::uint64_t now() {
#if defined(__HIP_DEVICE_COMPILE__)
    return __builtin_amdgcn_s_memrealtime() * hip_wall_clock_ns_per_tick;
#else
    return 0;  // the host pass of a device function: never run
#endif
  }
  /// By the cube's index: HIP 5.2 offers no portable way to ask which compute unit runs a cube,
  /// and consecutive cubes run on different units, so the lanes still spread the writers.
  __device__ __forceinline__ static unsigned lane() {
    return blockIdx.x + blockIdx.y * 7u + blockIdx.z * 13u;
  }
  /// A relaxed device-scope atomic maximum whose result is unused: the compiler issues it without
  /// a return, so the unit does not wait for the memory system.
  __device__ __forceinline__ static void fold_max(unsigned long long* at,
                                                  unsigned long long value) {
    (void)__hip_atomic_fetch_max(at, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  }
};

#elif defined(__CUDACC__) && LAUNCHWATCH_HIP_PLATFORM_NVIDIA

/// On HIP's NVIDIA platform a HIP kernel is a CUDA kernel: stamped as the CUDA entry stamps.
using hip_stamps = cuda_stamps;

#endif

#if defined(__HIP__) || (defined(__CUDACC__) && LAUNCHWATCH_HIP_PLATFORM_NVIDIA)

/// The entry HIP launches for kernel `K`.
template <class K>
__global__ void hip_entry(K kernel, timing_target timing) {
  run_entry<hip_stamps>(kernel, timing);
}

#endif

}  // namespace launchwatch::detail
