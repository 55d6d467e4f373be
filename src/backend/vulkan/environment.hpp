// The Vulkan backend's environment variables: LAUNCHWATCH_VULKAN_TIMESTAMPS (the timestamp budget,
// in pairs of queries per device), LAUNCHWATCH_VULKAN_CLOCK_SLOTS (the launches a device may time
// with its shader clock at once) and LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS (what a dispatch costs
// beyond its shader's own window). Parsed apart from reading the environment, and built into core
// whatever backends are built, so every spelling can be tested and fuzzed
// (fuzz/environment_fuzz.cpp).
#pragma once

#include <chrono>
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

inline constexpr std::string_view vulkan_clock_slots_variable = "LAUNCHWATCH_VULKAN_CLOCK_SLOTS";
/// Timing slots a device keeps for its shader clock when the variable is unset: 16 MiB of lanes,
/// more than one stream keeps in flight (16 batches of 256 launches).
inline constexpr std::uint32_t default_vulkan_clock_slots = 4352;
/// The most slots accepted: 256 MiB of lanes.
inline constexpr std::uint32_t max_vulkan_clock_slots = 1u << 16;

/// The slots LAUNCHWATCH_VULKAN_CLOCK_SLOTS=`value` asks for: a decimal count from 0 (no timing by
/// the shader clock: timestamp queries, then `system`) to max_vulkan_clock_slots, digits only.
/// Throws configuration_error naming the variable, the value and the accepted values otherwise.
std::uint32_t parse_vulkan_clock_slots(std::string_view value);

/// The variable's slots, or nothing when it is unset or empty. Throws as parse_vulkan_clock_slots.
std::optional<std::uint32_t> vulkan_clock_slots_from_environment();

inline constexpr std::string_view vulkan_grid_overhead_variable =
    "LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS";
/// The most nanoseconds accepted.
inline constexpr std::uint32_t max_vulkan_grid_overhead_ns = 100'000;

/// LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS=`value`: a decimal count of nanoseconds from 0 to
/// max_vulkan_grid_overhead_ns, digits only. Throws configuration_error naming the variable, the
/// value and the accepted values otherwise.
std::chrono::nanoseconds parse_vulkan_grid_overhead(std::string_view value);

/// The variable's overhead, or nothing (measured by the device's calibration) when it is unset or
/// empty. Throws as parse_vulkan_grid_overhead.
std::optional<std::chrono::nanoseconds> vulkan_grid_overhead_from_environment();

}  // namespace launchwatch::detail
