#include "backend/vulkan/environment.hpp"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail {

std::uint32_t parse_vulkan_timestamps(std::string_view value) {
  const auto refuse = [&](std::string_view why) {
    std::string shown;
    for (const char c : value) {
      const auto byte = static_cast<unsigned char>(c);
      shown += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
    }
    return configuration_error{fmt::format(
        "{}='{}' is not a timestamp budget ({}): give the number of query pairs each Vulkan device "
        "may hold, a whole number from 0 (time every launch `system`) to {}; unset, it is {}",
        vulkan_timestamps_variable, shown, why, max_vulkan_timestamp_pairs,
        default_vulkan_timestamp_pairs)};
  };
  if (value.empty()) throw refuse("it is empty");
  std::uint64_t pairs = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') throw refuse("only the digits 0-9 are accepted");
    pairs = pairs * 10 + static_cast<std::uint64_t>(c - '0');
    if (pairs > max_vulkan_timestamp_pairs) throw refuse("too many");
  }
  return static_cast<std::uint32_t>(pairs);
}

std::optional<std::uint32_t> vulkan_timestamps_from_environment() {
  const char* value = std::getenv(std::string{vulkan_timestamps_variable}.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_vulkan_timestamps(value);
}

}  // namespace launchwatch::detail
