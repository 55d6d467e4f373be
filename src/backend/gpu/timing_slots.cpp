#include "timing_slots.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail::gpu {

std::optional<device_window> fold(const timing_slot& slot) {
  std::uint64_t start_inverted = 0;
  std::uint64_t end = 0;
  for (const auto& lane : slot.lanes) {
    start_inverted = std::max<std::uint64_t>(start_inverted, lane.start_inverted);
    end = std::max<std::uint64_t>(end, lane.end);
  }
  if (start_inverted == 0 || end == 0) return std::nullopt;
  return device_window{~start_inverted, end};
}

std::uint32_t parse_timing_slots(std::string_view variable, std::string_view value) {
  std::uint32_t slots = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), slots);
  if (error != std::errc{} || end != value.data() + value.size() || slots < timing_batch_capacity ||
      slots > 65536 || slots % timing_batch_capacity != 0) {
    throw configuration_error{fmt::format(
        "{} is set to `{}`, which is not a number of timing slots: give a multiple of {} from {} "
        "to 65536, the most timed launches a device keeps in flight (unset means {})",
        variable, value, timing_batch_capacity, timing_batch_capacity, default_timing_slots)};
  }
  return slots;
}

std::uint32_t timing_slots_from_environment(std::string_view variable) {
  const char* set = std::getenv(std::string{variable}.c_str());
  if (set == nullptr || *set == '\0') return default_timing_slots;
  return parse_timing_slots(variable, set);
}

}  // namespace launchwatch::detail::gpu
