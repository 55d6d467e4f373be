// The conformance suite's fixture for the CPU backend (see conformance_suite.hpp for the concept).
#pragma once

#include <optional>
#include <string>

#include <launchwatch/runtime/client.hpp>

namespace launchwatch::conformance {

struct cpu_backend {
  /// The CPU backend runs everywhere.
  static std::optional<std::string> unavailable() { return std::nullopt; }
  static launchwatch::client make_client() { return launchwatch::client::cpu(); }
  /// CPU device 1: the same machine, another memory tag.
  static launchwatch::client other_device() { return launchwatch::client::cpu(1); }
  /// A kernel that throws leaves its stream as usable as before.
  static constexpr bool recovers_from_kernel_failure = true;
};

}  // namespace launchwatch::conformance
