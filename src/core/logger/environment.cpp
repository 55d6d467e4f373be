// Reading the profiling logger's environment variables.

#include "core/logger/environment.hpp"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail {
namespace {

std::optional<std::string> environment(std::string_view name) {
  const char* value = std::getenv(std::string{name}.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string{value};
}

}  // namespace

profile_level parse_profile_level(std::string_view value) {
  if (value == "disabled") return profile_level::disabled;
  if (value == "minimal") return profile_level::execution_only;
  if (value == "basic") return profile_level::basic;
  if (value == "medium") return profile_level::medium;
  if (value == "full") return profile_level::full;
  throw configuration_error{fmt::format(
      "{} is set to `{}`, which is not a profiling level. Accepted values: {} (minimal writes a "
      "line per launch without timing; unset means disabled).",
      profile_variable, value, accepted_profiles)};
}

log_output parse_log_output(std::string_view value) {
  if (value == "stderr") return log_output::standard_error();
  if (value == "stdout") return log_output::standard_output();
  return log_output::file(std::string{value});
}

std::optional<profile_level> profile_from_environment() {
  const auto value = environment(profile_variable);
  if (!value) return std::nullopt;
  return parse_profile_level(*value);
}

std::optional<log_output> output_from_environment() {
  const auto value = environment(log_variable);
  if (!value) return std::nullopt;
  return parse_log_output(*value);
}

}  // namespace launchwatch::detail
