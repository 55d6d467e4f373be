#include "grid_overhead.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "core/interface/diagnostics.hpp"

namespace launchwatch::detail::gpu {
namespace {

constexpr std::int64_t most = 100'000;

constexpr std::array measured{
    grid_overhead_measurement{
        9, 0, std::chrono::nanoseconds{480}, "NVIDIA H200 (CUDA 13.0, driver 580.159.04)",
        "2026-12-01: CUPTI concurrent-kernel record of each kernel run untimed minus launchwatch's "
        "in-kernel window of the same kernel, 0/5/50 us x 1/132 cubes, back to back and isolated: "
        "0.448-0.544 us, median 0.48 (research/device-timing.md 1.9)"},
};

}  // namespace

std::span<const grid_overhead_measurement> measured_grid_overheads() noexcept {
  return measured;
}

std::chrono::nanoseconds parse_grid_overhead(std::string_view variable, std::string_view value) {
  std::int64_t ns = -1;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ns);
  if (error != std::errc{} || end != value.data() + value.size() || ns < 0 || ns > most) {
    throw configuration_error{fmt::format(
        "{} is set to `{}`, which is not a grid overhead: give a whole number of nanoseconds from "
        "0 "
        "to {} (the time a grid's launch and retire take that no in-kernel stamp sees; unset "
        "means launchwatch's measured figure for the device)",
        variable, value, most)};
  }
  return std::chrono::nanoseconds{ns};
}

std::chrono::nanoseconds grid_overhead_for(std::string_view variable, bool nvidia, int major,
                                           int minor) {
  if (const char* set = std::getenv(std::string{variable}.c_str());
      set != nullptr && *set != '\0') {
    return parse_grid_overhead(variable, set);
  }
  for (const auto& m : measured) {
    if (nvidia && m.major == major && m.minor == minor) return m.overhead;
  }
  if (first_time(once_warning::grid_overhead_unmeasured)) {
    diagnostics().warn(
        "No grid overhead has been measured for {} devices of compute capability {}.{}: deferred "
        "timings on them read shorter than a profiler's by the time a grid's launch and retire "
        "take "
        "(about 0.5 us on an H200). Measure it against the vendor's profiler (on NVIDIA GPUs "
        "launchwatch_peers_bench derives it) and set {} to the figure.",
        nvidia ? "NVIDIA" : "AMD", major, minor, variable);
  }
  return std::chrono::nanoseconds{0};
}

}  // namespace launchwatch::detail::gpu
