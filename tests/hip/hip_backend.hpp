// The conformance suite's fixture for the HIP backend (see conformance/conformance_suite.hpp).
//
// Included only by files a HIP compiler compiles (HIP's clang, or nvcc on HIP's NVIDIA platform),
// so the suite's kernels get HIP entries.
#pragma once

#include <optional>
#include <string>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

#include "backend/hip/hip_runtime.hpp"

namespace launchwatch::conformance {

struct hip_backend {
  /// Why the tests skip: no device HIP can use here, in HIP's own words.
  static std::optional<std::string> unavailable() {
    try {
      (void)launchwatch::client::hip();
      return std::nullopt;
    } catch (const launchwatch::backend_unavailable& why) {
      return std::string{why.what()};
    }
  }
  /// The entry point as the backend's messages name it.
  static constexpr const char* client_call = "client::hip(0)";
  static launchwatch::client make_client() { return launchwatch::client::hip(); }
  /// A CPU device: its buffers are another device's as much as a second GPU's would be.
  static launchwatch::client other_device() { return launchwatch::client::cpu(); }
  /// A device fault is sticky: the context is lost for the rest of the process (on an AMD GPU
  /// HIP's runtime even ends the process).
  static constexpr bool recovers_from_kernel_failure = false;
  /// The backend's runtime class, for the GPU timing suites
  /// (conformance/gpu_timing_budget_suite.hpp, gpu_deferred_timing_suite.hpp).
  using runtime = detail::hip::hip_runtime;
};

}  // namespace launchwatch::conformance
