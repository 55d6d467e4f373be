// The engine's flush and statistics (bridge_engine.hpp); subscribing is in subscription.cpp, the
// callbacks in callbacks.cpp.
#include "bridge_engine.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

#include <launchwatch/launch_path.hpp>

#include "activity_buffers.hpp"
#include "cuda_common/capture_mode.hpp"
#include "cupti_calls.hpp"
#include "core/interface/diagnostics.hpp"

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
  // Launches from now on go untimed; what the last window timed is in the forced flush.
  if (windows_) windows_->stop();
  core_.close();
}

void cuda_bridge_engine::lend_records() noexcept {
  try {
    // What the devices still run would be the other client's: deliver it first.
    core_.deliver_pending(std::chrono::seconds{2}, [this] { synchronize_seen_devices(); });
    core_.records_taken_elsewhere();
  } catch (...) {
    // A failed flush or log: the records are lent all the same once the other client starts.
  }
}

bool cuda_bridge_engine::take_records_back() noexcept {
  const int r = cuda_bridge::take_activity_back(device_.kernel_records_were_turned_on());
  if (r != CUPTI_SUCCESS) {
    try {
      diagnostics().warn("The CUDA bridge could not take CUPTI's kernel records back ({}): "
                         "launches stay untimed.",
                         cuda_bridge::cupti_error(static_cast<CUptiResult>(r)));
    } catch (...) {
    }
    return false;
  }
  core_.records_returned();
  return true;
}

cuda_bridge_stats cuda_bridge_engine::stats() const noexcept { return core_.stats(); }

}  // namespace launchwatch::detail
