// The conformance suite's fixture for the CUDA backend (see conformance/conformance_suite.hpp).
//
// Included only by files nvcc compiles, so the suite's kernels get CUDA entries.
#pragma once

#include <optional>
#include <string>

#include <launchwatch/runtime/client.hpp>
#include <launchwatch/errors.hpp>

#include "backend/cuda/cuda_runtime.hpp"

namespace launchwatch::conformance {

struct cuda_backend {
  /// Why the tests skip: no device visible here (or no driver), in CUDA's own words.
  static std::optional<std::string> unavailable() {
    try {
      (void)launchwatch::client::cuda();
      return std::nullopt;
    } catch (const launchwatch::backend_unavailable& why) {
      return std::string{why.what()};
    }
  }
  /// The entry point as the backend's messages name it.
  static constexpr const char* client_call = "client::cuda(0)";
  static launchwatch::client make_client() { return launchwatch::client::cuda(); }
  /// A CPU device: its buffers are another device's as much as a second GPU's would be.
  static launchwatch::client other_device() { return launchwatch::client::cpu(); }
  /// A device fault is sticky: CUDA's context is lost for the rest of the process.
  static constexpr bool recovers_from_kernel_failure = false;
  /// The backend's runtime class, for the GPU timing suites
  /// (conformance/gpu_timing_budget_suite.hpp, gpu_deferred_timing_suite.hpp).
  using runtime = detail::cuda::cuda_runtime;
};

}  // namespace launchwatch::conformance
