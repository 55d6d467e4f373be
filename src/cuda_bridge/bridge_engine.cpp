// The engine's flush and statistics (bridge_engine.hpp); subscribing is in subscription.cpp, the
// callbacks in callbacks.cpp.
#include "bridge_engine.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

#include <launchwatch/launch_path.hpp>

namespace launchwatch::detail {

void cuda_bridge_engine::synchronize_seen_devices() noexcept {
  const std::uint64_t seen = core_.devices_seen();
  if (seen == 0) return;
  int current = 0;
  const bool known = cudaGetDevice(&current) == cudaSuccess;
  for (int device = 0; device < 64; ++device) {
    if ((seen & (std::uint64_t{1} << device)) == 0) continue;
    if (cudaSetDevice(device) == cudaSuccess) (void)cudaDeviceSynchronize();
  }
  if (known) (void)cudaSetDevice(current);
  (void)cudaGetLastError();
}

void cuda_bridge_engine::flush() {
  launch_path::check_outside_observer("flush the CUDA bridge");
  synchronize_seen_devices();
  core_.deliver_pending(std::chrono::seconds{2});
}

cuda_bridge_stats cuda_bridge_engine::stats() const noexcept { return core_.stats(); }

}  // namespace launchwatch::detail
