// The CUDA bridge's environment variable, LAUNCHWATCH_CUPTI, and what each value means.
//
// Parsed in core (compiled there from src/cuda_bridge/CMakeLists.txt, as the Vulkan backend's
// variable is), so every build, the unit tests and the fuzz target reach it without CUDA. Parsing
// is separate from reading the environment, so every spelling can be tested without setting
// variables in the process.
#pragma once

#include <optional>
#include <string_view>

namespace launchwatch::detail {

inline constexpr std::string_view cupti_variable = "LAUNCHWATCH_CUPTI";
inline constexpr std::string_view accepted_cupti = "on, off";

/// Whether LAUNCHWATCH_CUPTI=`value` lets the CUDA bridge use CUPTI: true for `on`, false for
/// `off`. Throws configuration_error naming the variable, the value and the accepted values otherwise.
bool parse_cupti_switch(std::string_view value);

/// LAUNCHWATCH_CUPTI's answer, or nothing when it is unset or empty (the bridge then runs). Throws
/// as parse_cupti_switch.
std::optional<bool> cupti_from_environment();

}  // namespace launchwatch::detail
