// The kernels every measurement of the peers harness launches, raw and through launchwatch, and the
// grid they all use. Distinct names on each side, so CUPTI's records can be told apart by name.
//
// Each file of the harness that launches includes this header and gets its own copy of the
// kernels (they have internal linkage): without relocatable device code a CUDA file can only
// launch a __global__ function it defines itself, and the launch helpers stay inline beside the
// loops that time them, as they were when the harness was one file.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

#include <launchwatch/runtime/client.hpp>

#include "peers_harness.hpp"

namespace launchwatch::peers {
namespace {

__device__ __forceinline__ std::uint64_t device_now_ns() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)::"memory");
  return now;
}

// Spins on the device's nanosecond clock: the kernel's length is set by the clock, not by an
// instruction count that would change with the SM clock. The host branch exists only so the same
// kernel type is valid on the CPU backend; the harness never runs it there.
LAUNCHWATCH_HOST_DEVICE inline void spin_for(std::uint64_t ns) {
#if defined(__CUDA_ARCH__)
  const std::uint64_t start = device_now_ns();
  while (device_now_ns() - start < ns) {
  }
#else
  const auto until = clock_type::now() + std::chrono::nanoseconds{ns};
  while (clock_type::now() < until) {
  }
#endif
}

struct lw_empty_kernel {
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit) const {}
};

struct lw_spin_kernel {
  std::uint64_t ns;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit) const { spin_for(ns); }
};

struct lw_blocker_kernel {
  std::uint64_t ns;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit) const { spin_for(ns); }
};

__global__ void raw_empty_kernel() {}
__global__ void raw_spin_kernel(std::uint64_t ns) { spin_for(ns); }
__global__ void raw_blocker_kernel(std::uint64_t ns) { spin_for(ns); }

// Every case launches one block of one warp: the smallest launch that is still a real kernel.
constexpr unsigned block_threads = 32;

inline cudaError_t launch_raw_empty(cudaStream_t stream) {
  return cudaLaunchKernel(reinterpret_cast<const void*>(&raw_empty_kernel), dim3{1},
                          dim3{block_threads}, nullptr, 0, stream);
}

inline cudaError_t launch_raw_spin(cudaStream_t stream, std::uint64_t ns) {
  void* args[] = {&ns};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&raw_spin_kernel), dim3{1},
                          dim3{block_threads}, args, 0, stream);
}

inline cudaError_t launch_raw_blocker(cudaStream_t stream, std::uint64_t ns) {
  void* args[] = {&ns};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&raw_blocker_kernel), dim3{1},
                          dim3{block_threads}, args, 0, stream);
}

const launchwatch::cube_count one_cube{1u};
const launchwatch::cube_dim one_warp{block_threads};

}  // namespace
}  // namespace launchwatch::peers
