// The CUDA clock probe: the kernel that answers the host's readings of %globaltimer
// (gpu/clock_probe.hpp), and the two calls the shared device clock makes of it.

#include <cuda_runtime.h>

#include <launchwatch/detail/cuda_entry.hpp>
#include <launchwatch/launch_path.hpp>

#include "cuda_runtime.hpp"

namespace launchwatch::detail::cuda {
namespace {

__global__ void clock_probe(gpu::clock_probe_mailbox* box, std::uint64_t budget_ns) {
  gpu::answer_clock_probes<cuda_stamps>(box, budget_ns);
}

}  // namespace

cudaError_t cuda_runtime::launch_clock_probe(cudaStream_t s, gpu::clock_probe_mailbox* mailbox,
                                             std::uint64_t budget_ns) noexcept {
  // Launchwatch's own probe, not a program's kernel: the CUDA bridge skips it.
  launch_path::reported_here own;
  clock_probe<<<1, 1, 0, s>>>(mailbox, budget_ns);
  return cudaGetLastError();
}

cudaError_t cuda_runtime::load_clock_probe() noexcept {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, clock_probe);
}

}  // namespace launchwatch::detail::cuda
