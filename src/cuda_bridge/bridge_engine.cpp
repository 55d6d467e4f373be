// The engine's flush and statistics (bridge_engine.hpp); subscribing is in subscription.cpp, the
// callbacks in callbacks.cpp.
#include "bridge_engine.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

#include <launchwatch/launch_path.hpp>

#include "cuda_common/capture_mode.hpp"

namespace launchwatch::detail {

void cuda_bridge_engine::synchronize_seen_devices() noexcept {
  const std::uint64_t seen = core_.devices_seen();
  if (seen == 0) return;
  // The bridge's own calls are no part of another thread's stream capture: in CUDA's default
  // (global) mode an unsafe call on any thread would invalidate that capture (review U1).
  const cuda::relaxed_capture_mode relaxed;
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
  core_.deliver_pending(std::chrono::seconds{2}, [this] { synchronize_seen_devices(); });
}

void cuda_bridge_engine::close_records() noexcept {
  synchronize_seen_devices();
  core_.close();
}

cuda_bridge_stats cuda_bridge_engine::stats() const noexcept { return core_.stats(); }

}  // namespace launchwatch::detail
