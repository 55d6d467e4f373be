// Reading LAUNCHWATCH_CUPTI (environment.hpp).
#include "cuda_bridge/environment.hpp"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail {

bool parse_cupti_switch(std::string_view value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw configuration_error{fmt::format(
      "{} is set to `{}`, which is not a switch. Accepted values: {} (off runs the program without "
      "the CUDA bridge, so only launchwatch's own launches are seen; unset means on).",
      cupti_variable, value, accepted_cupti)};
}

std::optional<bool> cupti_from_environment() {
  const char* value = std::getenv(std::string{cupti_variable}.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_cupti_switch(value);
}

}  // namespace launchwatch::detail
