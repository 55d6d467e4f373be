// launchwatch's environment variables, LAUNCHWATCH_PROFILE and LAUNCHWATCH_LOG (the profiling
// logger) and LAUNCHWATCH_VULKAN_TIMESTAMPS (the Vulkan backend's timestamp budget), with any value:
// each either gives a setting or throws configuration_error naming the variable; nothing else may
// escape (an escaping exception ends the run as a crash).
//
// The input's first byte picks the variable (`L` LAUNCHWATCH_LOG, `V` LAUNCHWATCH_VULKAN_TIMESTAMPS,
// anything else LAUNCHWATCH_PROFILE, so the seeds read `Lstderr`, `V4096`, `Pminimal`); the rest is
// its value, given to the parser directly (any bytes) and through the environment (up to the first
// NUL, which an environment cannot hold).
#include "backend/vulkan/environment.hpp"
#include "core/logger/environment.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <launchwatch/errors.hpp>

namespace {

using launchwatch::configuration_error;
using launchwatch::log_output;
using launchwatch::profile_level;
namespace detail = launchwatch::detail;

[[noreturn]] void broken(const char* promise, std::string_view value) {
  std::fprintf(stderr, "environment parsing broke a promise: %s\n  value (%zu bytes): %.*s\n",
               promise, value.size(), static_cast<int>(value.size()), value.data());
  std::abort();
}

/// Sets `variable` to `value` up to its first NUL, and returns what it was set to.
///
/// putenv, not setenv: glibc's setenv keeps every value it was ever given, which over an hour's run
/// of distinct values grows past libFuzzer's memory limit. putenv keeps this buffer itself; it is
/// replaced before anything reads the environment again.
std::string set_environment(std::string_view variable, std::string_view value) {
  static std::string profile_entry;
  static std::string log_entry;
  static std::string timestamps_entry;
  std::string& entry = variable == detail::profile_variable ? profile_entry
                       : variable == detail::log_variable   ? log_entry
                                                            : timestamps_entry;
  std::string text{value.substr(0, value.find('\0'))};
  entry = std::string{variable} + "=" + text;
  ::putenv(entry.data());
  return text;
}

/// A refusal must say which variable was wrong, so a user knows what to fix.
void check_refusal(const configuration_error& error, std::string_view variable,
                   std::string_view value) {
  if (std::string_view{error.what()}.find(variable) == std::string_view::npos) {
    broken("a refusal names the variable", value);
  }
}

void check_profile(std::string_view value) {
  try {
    (void)detail::parse_profile_level(value);
  } catch (const configuration_error& error) {
    check_refusal(error, detail::profile_variable, value);
  }
  const std::string text = set_environment(detail::profile_variable, value);
  try {
    const auto level = detail::profile_from_environment();
    if (text.empty() == level.has_value()) broken("an empty variable means unset", value);
  } catch (const configuration_error& error) {
    check_refusal(error, detail::profile_variable, value);
  }
}

void check_log(std::string_view value) {
  // Documented: stderr and stdout are the two streams; anything else is a file path, checked when
  // the file is opened, so parsing never refuses a value.
  const log_output output = detail::parse_log_output(value);
  const auto expected = value == "stderr"   ? log_output::kind::standard_error
                        : value == "stdout" ? log_output::kind::standard_output
                                            : log_output::kind::file;
  if (output.where() != expected) broken("stderr and stdout are streams, the rest a path", value);
  if (expected == log_output::kind::file && output.path().native() != value) {
    broken("a path is kept as given", value);
  }
  const std::string text = set_environment(detail::log_variable, value);
  if (text.empty() == detail::output_from_environment().has_value()) {
    broken("an empty variable means unset", value);
  }
}

/// What LAUNCHWATCH_VULKAN_TIMESTAMPS documents: digits only, from 0 to the maximum; anything else
/// refused.
bool timestamps_acceptable(std::string_view value) {
  if (value.empty()) return false;
  std::uint64_t pairs = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return false;
    pairs = pairs * 10 + static_cast<std::uint64_t>(c - '0');
    if (pairs > detail::max_vulkan_timestamp_pairs) return false;
  }
  return true;
}

void check_timestamps(std::string_view value) {
  try {
    const std::uint32_t pairs = detail::parse_vulkan_timestamps(value);
    if (!timestamps_acceptable(value)) broken("only digits up to the maximum are accepted", value);
    if (pairs > detail::max_vulkan_timestamp_pairs) broken("an accepted budget is at most the maximum", value);
  } catch (const configuration_error& error) {
    check_refusal(error, detail::vulkan_timestamps_variable, value);
    if (timestamps_acceptable(value)) broken("every documented value is accepted", value);
  }
  const std::string text = set_environment(detail::vulkan_timestamps_variable, value);
  try {
    const auto pairs = detail::vulkan_timestamps_from_environment();
    if (text.empty() == pairs.has_value()) broken("an empty variable means unset", value);
  } catch (const configuration_error& error) {
    check_refusal(error, detail::vulkan_timestamps_variable, value);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view value{reinterpret_cast<const char*>(data) + 1, size - 1};
  if (data[0] == 'L') {
    check_log(value);
  } else if (data[0] == 'V') {
    check_timestamps(value);
  } else {
    check_profile(value);
  }
  return 0;
}
