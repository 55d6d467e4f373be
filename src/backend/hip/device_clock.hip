// The HIP clock probe: the kernel that answers the host's readings of the device's nanosecond timer
// (gpu/clock_probe.hpp), stamped as the HIP entry stamps (hip_entry.hpp), and the two calls the
// shared device clock makes of it. Compiled by HIP's clang for AMD GPUs, or by nvcc on HIP's NVIDIA
// platform.

#include <launchwatch/detail/hip_entry.hpp>
#include <launchwatch/launch_path.hpp>

#include "hip_runtime.hpp"

namespace launchwatch::detail::hip {
namespace {

__global__ void clock_probe(gpu::clock_probe_mailbox* box, std::uint64_t budget_ns) {
  gpu::answer_clock_probes<hip_stamps>(box, budget_ns);
}

}  // namespace

hipError_t hip_runtime::launch_clock_probe(hipStream_t s, gpu::clock_probe_mailbox* mailbox,
                                           std::uint64_t budget_ns) noexcept {
  // Launchwatch's own probe, not a program's kernel: the CUDA bridge skips it.
  launch_path::reported_here own;
  void* arguments[] = {&mailbox, &budget_ns};
  return hipLaunchKernel(reinterpret_cast<const void*>(&clock_probe), dim3{1}, dim3{1}, arguments,
                         0, s);
}

hipError_t hip_runtime::load_clock_probe() noexcept {
  hipFuncAttributes attributes{};
  return hipFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&clock_probe));
}

}  // namespace launchwatch::detail::hip
