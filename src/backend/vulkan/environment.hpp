// LAUNCHWATCH_VULKAN_TIMESTAMPS: the Vulkan backend's timestamp budget, in pairs of queries per
// device. Parsed apart from reading the environment, and built into core whatever backends are
// built, so every spelling can be tested and fuzzed (fuzz/environment_fuzz.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace launchwatch::detail {

inline constexpr std::string_view vulkan_timestamps_variable = "LAUNCHWATCH_VULKAN_TIMESTAMPS";
/// Pairs of queries a device keeps when the variable is unset: wgpu's 8192-query set.
inline constexpr std::uint32_t default_vulkan_timestamp_pairs = 4096;
/// The most pairs accepted: 2^21 queries of 8 bytes, well below the query-pool size at which Mesa
/// 22.3's lavapipe overflows (2^29).
inline constexpr std::uint32_t max_vulkan_timestamp_pairs = 1u << 20;

/// The budget LAUNCHWATCH_VULKAN_TIMESTAMPS=`value` asks for: a decimal count of pairs from 0 (every
/// measurement `system`) to max_vulkan_timestamp_pairs, digits only. Throws configuration_error
/// naming the variable, the value and the accepted values for anything else.
std::uint32_t parse_vulkan_timestamps(std::string_view value);

/// The variable's budget, or nothing when it is unset or empty. Throws as parse_vulkan_timestamps.
std::optional<std::uint32_t> vulkan_timestamps_from_environment();

}  // namespace launchwatch::detail
