// Whether the bridge can run here, and the errors that say why not: LAUNCHWATCH_CUPTI, a device,
// the versions in play.
#pragma once

#include <string>

#include <launchwatch/cuda_bridge.hpp>

namespace launchwatch::detail::cuda_bridge {

/// Throws cuda_bridge_unavailable saying "launchwatch::cuda_bridge: <message>".
[[noreturn]] void unavailable(cuda_bridge_unavailable::reason why, const std::string& message,
                              std::string holder = {});

/// Throws cuda_bridge_unavailable (turned_off) when `options` honour the environment and
/// LAUNCHWATCH_CUPTI=off; configuration_error for a value that is neither on nor off.
void refuse_if_turned_off(const cuda_bridge_options& options);

/// Throws cuda_bridge_unavailable unless the runtime sees a device (not inside cuInit).
void require_a_device();

/// Throws cuda_bridge_unavailable (incompatible) when the CUPTI, driver and runtime versions in
/// the process do not fit (versions.hpp).
void require_fitting_versions();

/// The versions in play, for messages: versions.hpp's describe().
std::string versions();

}  // namespace launchwatch::detail::cuda_bridge
