// Whether the CUPTI, driver and runtime versions in a process fit the bridge, as a pure function of
// the version numbers, so each mismatch has its message and its test without the machine having it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace launchwatch::detail::cuda_bridge {

/// The versions in play: CUPTI's API version loaded and the one built against (CUPTI_API_VERSION),
/// the driver's and the runtime's versions as CUDA gives them (1000 * major + 10 * minor; 0 when
/// unknown).
struct version_numbers {
  std::uint32_t cupti_loaded = 0;
  std::uint32_t cupti_built = 0;
  int driver = 0;
  int runtime = 0;
};

/// "CUPTI API <loaded> (launchwatch was built against <built>), CUDA driver X.Y, CUDA runtime X.Y".
std::string describe(const version_numbers& versions);

/// Why the versions do not fit, saying what to do, or nothing when they fit: a CUPTI older than the
/// one built against (its callbacks and records may lack what the bridge reads), or a driver of an
/// older major version than the runtime (which cannot run it; within a major version CUDA's minor
/// version compatibility lets it). An unknown (0) driver or runtime version is not held against them.
std::optional<std::string> versions_misfit(const version_numbers& versions);

}  // namespace launchwatch::detail::cuda_bridge
