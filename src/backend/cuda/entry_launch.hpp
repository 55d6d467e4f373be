// Launching a kernel entry through the driver's own launch call (entry_launch.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace launchwatch::detail::cuda {

/// Launches the kernel entry whose host stub is `entry` on `stream`, as cudaLaunchKernel would:
/// through the driver's cuLaunchKernel with the entry's kernel handle, looked up once per entry
/// (gpu::entry_handles says why: 0.2-0.4 µs a launch on an H200's host), and through
/// cudaLaunchKernel itself where the driver's call is not available, the entry has no handle, or
/// the driver refuses the launch. So a failed launch always returns the runtime's status for it
/// (and leaves the runtime's last error as cudaLaunchKernel does), and a thread with no current
/// context yet gets the one the runtime would make current.
///
/// The driver's call is found through the runtime (cudaGetDriverEntryPointByVersion), never by
/// linking the driver's library, so a program still starts on a machine without one.
/// Thread safety: any thread. Cost: a table lookup (one hash and load) and the driver's call;
/// an entry's first launch also asks the runtime for its handle (under a lock).
cudaError_t launch_entry(const void* entry, dim3 grid, dim3 block, void** arguments,
                         cudaStream_t stream) noexcept;

/// How many entries have had their handle looked up (kept in the table), for tests: an entry's
/// first launch through the driver adds one, and no launch after it does.
std::size_t entries_known();

}  // namespace launchwatch::detail::cuda
