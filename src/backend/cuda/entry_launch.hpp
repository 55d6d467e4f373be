// Launching a kernel entry through the driver's own launch call (entry_launch.cpp).
#pragma once

#include <cuda_runtime_api.h>

namespace launchwatch::detail::cuda {

/// How launch_entry went: the runtime's status, and whether the driver's call launched it.
struct entry_launch_result {
  cudaError_t status = cudaSuccess;
  /// False where cudaLaunchKernel launched it (or failed to): no function, or the driver refused.
  bool through_driver = false;
};

/// Launches the kernel entry whose host stub is `entry` on `stream`, as cudaLaunchKernel would,
/// but through the driver's cuLaunchKernel with `function`, the entry's function in the stream's
/// context (cudaGetFuncBySymbol, looked up once per device and entry by the caller): the runtime's
/// call finds that function again on every launch, 0.3-0.5 µs of an empty kernel's 3.5-4.5 µs on
/// an H200's host, and a context-free cudaKernel_t handle still costs 0.26-0.34 µs of it
/// (docs/benchmarks.md, "The runtime's launch call against the driver's").
///
/// cudaLaunchKernel itself launches it where the driver's call is not available, `function` is
/// null, or the driver refuses the launch (no current context on a thread that never called CUDA,
/// a function of another context, a fault): so a failed launch always returns the runtime's status
/// for it (and leaves the runtime's last error as cudaLaunchKernel does), and a thread with no
/// current context gets the one the runtime would make current.
///
/// The driver's call is found through the runtime (cudaGetDriverEntryPointByVersion), never by
/// linking the driver's library, so a program still starts on a machine without one.
/// Thread safety: any thread. Cost: the driver's call, after one load of the function-local static
/// that holds it.
entry_launch_result launch_entry(cudaFunction_t function, const void* entry, dim3 grid, dim3 block,
                                 void** arguments, cudaStream_t stream) noexcept;

}  // namespace launchwatch::detail::cuda
