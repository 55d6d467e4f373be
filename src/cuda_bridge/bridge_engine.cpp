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
  // Never during a stream capture (the core's capture gate sees to it): on the H200 a device
  // synchronisation invalidated another thread's global-mode capture, relaxed mode or not (review
  // 2026-12-01b, U1). Relaxed still, as every call of the bridge's own.
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
  try {
    (void)core_.wait_idle_outside_captures([this] { synchronize_seen_devices(); });
  } catch (...) {
    // Only the gate's lock can throw (std::system_error): the records are closed regardless.
  }
  core_.close();
}

cuda_bridge_stats cuda_bridge_engine::stats() const noexcept { return core_.stats(); }

}  // namespace launchwatch::detail
