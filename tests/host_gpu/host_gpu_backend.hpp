// The conformance suite's fixture for the GPU backend's shared code over the host-emulated runtime
// (host_gpu_runtime.hpp): the suite every backend passes, run through backend/gpu's device and
// stream on any machine.
#pragma once

#include <optional>
#include <string>

#include <launchwatch/runtime/client.hpp>

#include "host_gpu_runtime.hpp"

namespace launchwatch::conformance {

struct host_gpu_backend {
  /// Emulated on the host: available everywhere.
  static std::optional<std::string> unavailable() { return std::nullopt; }
  static constexpr const char* client_call = "host_gpu::open_client()";
  static launchwatch::client make_client() { return testing::host_gpu::open_client(); }
  /// A CPU device: its buffers are another device's, as for CUDA.
  static launchwatch::client other_device() { return launchwatch::client::cpu(); }
  /// A failed kernel is a sticky fault, as on CUDA (host_gpu_runtime::launch_failure).
  static constexpr bool recovers_from_kernel_failure = false;
  using runtime = testing::host_gpu::host_gpu_runtime;
};

}  // namespace launchwatch::conformance
