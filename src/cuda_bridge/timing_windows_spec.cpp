// Reading `ON_MS/OFF_MS`, the argument of `launchwatch run --timing windows:` (cuda_bridge.hpp).
// Compiled into core, as environment.cpp is, so the CLI, the injection and the tests reach it in
// every build.
#include <charconv>
#include <string>

#include <fmt/format.h>

#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/errors.hpp>

namespace launchwatch {

namespace {

/// A positive whole number of milliseconds, at most a day; nothing otherwise.
std::optional<std::chrono::milliseconds> milliseconds_of(std::string_view text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() || value <= 0 ||
      value > 86'400'000) {
    return std::nullopt;
  }
  return std::chrono::milliseconds{value};
}

}  // namespace

cuda_timing_windows parse_timing_windows(std::string_view text) {
  const auto slash = text.find('/');
  const auto on = milliseconds_of(text.substr(0, slash));
  const auto off = slash == std::string_view::npos ? std::nullopt
                                                   : milliseconds_of(text.substr(slash + 1));
  if (!on || !off) {
    throw configuration_error{fmt::format(
        "timing windows `{}` are not ON_MS/OFF_MS: give two whole numbers of milliseconds from 1 "
        "to 86400000, the time kernels are timed and the time they are not, as windows:200/800",
        text)};
  }
  return cuda_timing_windows{*on, *off};
}

}  // namespace launchwatch
