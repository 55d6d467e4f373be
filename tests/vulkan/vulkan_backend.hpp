// The conformance suite's fixture for the Vulkan backend (see conformance/conformance_suite.hpp).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

namespace launchwatch::conformance {

struct vulkan_backend {
  /// Why the tests skip: no Vulkan loader or driver here, in the backend's own words. With
  /// LAUNCHWATCH_REQUIRE_VULKAN=1 (CI sets it, where lavapipe is installed) there is no skipping:
  /// the backend's absence fails every test.
  static std::optional<std::string> unavailable() {
    try {
      (void)launchwatch::client::vulkan();
      return std::nullopt;
    } catch (const launchwatch::backend_unavailable& why) {
      const char* required = std::getenv("LAUNCHWATCH_REQUIRE_VULKAN");
      if (required != nullptr && std::string{required} == "1") throw;
      return std::string{why.what()};
    }
  }
  static launchwatch::client make_client() { return launchwatch::client::vulkan(); }
  /// A CPU device: its buffers are another device's as much as a second GPU's would be.
  static launchwatch::client other_device() { return launchwatch::client::cpu(); }
  /// A unit that calls lw_fail() marks its launch failed; the stream goes on.
  static constexpr bool recovers_from_kernel_failure = true;
};

}  // namespace launchwatch::conformance
