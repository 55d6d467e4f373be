#include "backend/vulkan/environment.hpp"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail {
namespace {

/// A whole number from 0 to `max` in `value`, digits only; anything else throws configuration_error
/// saying what `variable` is (`what`) and what it accepts (`accepted`).
std::uint32_t parse_count(std::string_view variable, std::string_view value, std::uint32_t max,
                          std::string_view what, std::string_view accepted) {
  const auto refuse = [&](std::string_view why) {
    std::string shown;
    for (const char c : value) {
      const auto byte = static_cast<unsigned char>(c);
      shown += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
    }
    return configuration_error{
        fmt::format("{}='{}' is not {} ({}): {}", variable, shown, what, why, accepted)};
  };
  if (value.empty()) throw refuse("it is empty");
  std::uint64_t count = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') throw refuse("only the digits 0-9 are accepted");
    count = count * 10 + static_cast<std::uint64_t>(c - '0');
    if (count > max) throw refuse("too many");
  }
  return static_cast<std::uint32_t>(count);
}

const char* variable_value(std::string_view variable) {
  const char* value = std::getenv(std::string{variable}.c_str());
  return value == nullptr || *value == '\0' ? nullptr : value;
}

}  // namespace

std::uint32_t parse_vulkan_timestamps(std::string_view value) {
  return parse_count(
      vulkan_timestamps_variable, value, max_vulkan_timestamp_pairs, "a timestamp budget",
      fmt::format("give the number of query pairs each Vulkan device may hold, a whole number from "
                  "0 (time every launch `system`) to {}; unset, it is {}",
                  max_vulkan_timestamp_pairs, default_vulkan_timestamp_pairs));
}

std::optional<std::uint32_t> vulkan_timestamps_from_environment() {
  const char* value = variable_value(vulkan_timestamps_variable);
  if (value == nullptr) return std::nullopt;
  return parse_vulkan_timestamps(value);
}

std::uint32_t parse_vulkan_clock_slots(std::string_view value) {
  return parse_count(
      vulkan_clock_slots_variable, value, max_vulkan_clock_slots, "a number of timing slots",
      fmt::format("give the number of launches each Vulkan device may time with its shader clock "
                  "at once, a whole number from 0 (time with timestamp queries instead) to {}; "
                  "unset, it is {}",
                  max_vulkan_clock_slots, default_vulkan_clock_slots));
}

std::optional<std::uint32_t> vulkan_clock_slots_from_environment() {
  const char* value = variable_value(vulkan_clock_slots_variable);
  if (value == nullptr) return std::nullopt;
  return parse_vulkan_clock_slots(value);
}

std::chrono::nanoseconds parse_vulkan_grid_overhead(std::string_view value) {
  return std::chrono::nanoseconds{parse_count(
      vulkan_grid_overhead_variable, value, max_vulkan_grid_overhead_ns, "a grid overhead",
      fmt::format("give the nanoseconds a Vulkan dispatch takes beyond its shader's own window, a "
                  "whole number from 0 to {}; unset, each device measures it when it calibrates "
                  "its shader clock",
                  max_vulkan_grid_overhead_ns))};
}

std::optional<std::chrono::nanoseconds> vulkan_grid_overhead_from_environment() {
  const char* value = variable_value(vulkan_grid_overhead_variable);
  if (value == nullptr) return std::nullopt;
  return parse_vulkan_grid_overhead(value);
}

}  // namespace launchwatch::detail
