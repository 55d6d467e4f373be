// The environment variables that configure the profiling logger, and what each value means
// (the CUDA bridge's LAUNCHWATCH_CUPTI is in cuda_bridge/environment.hpp).
//
// Parsing is separate from reading the environment, so every spelling a user may type can be tested
// (and fuzzed) without setting variables in the process.
#pragma once

#include <optional>
#include <string_view>

#include <launchwatch/logger.hpp>

namespace launchwatch::detail {

inline constexpr std::string_view profile_variable = "LAUNCHWATCH_PROFILE";
inline constexpr std::string_view log_variable = "LAUNCHWATCH_LOG";
inline constexpr std::string_view accepted_profiles = "disabled, minimal, basic, medium, full";
inline constexpr std::string_view accepted_logs =
    "stderr, stdout, or the path of a file in an existing directory that this process may write";

/// The level LAUNCHWATCH_PROFILE=`value` asks for. Throws configuration_error naming the variable,
/// the value and the accepted values for anything else.
profile_level parse_profile_level(std::string_view value);

/// The output LAUNCHWATCH_LOG=`value` asks for: `stderr`, `stdout`, or else a file path (checked
/// when it is opened, not here).
log_output parse_log_output(std::string_view value);

/// LAUNCHWATCH_PROFILE's level, or nothing when it is unset or empty. Throws as parse_profile_level.
std::optional<profile_level> profile_from_environment();

/// LAUNCHWATCH_LOG's output, or nothing when it is unset or empty.
std::optional<log_output> output_from_environment();

}  // namespace launchwatch::detail
