// The CUDA backend's grid overhead (gpu/grid_overhead.hpp says what it is): its variable,
// LAUNCHWATCH_CUDA_GRID_OVERHEAD_NS, and the figures measured on NVIDIA devices.
#pragma once

#include <chrono>
#include <string_view>

#include "backend/gpu/grid_overhead.hpp"

namespace launchwatch::detail::cuda {

using gpu::grid_overhead_measurement;
using gpu::measured_grid_overheads;

/// The variable that overrides the measured figure on the CUDA backend.
inline constexpr std::string_view grid_overhead_variable = "LAUNCHWATCH_CUDA_GRID_OVERHEAD_NS";

/// LAUNCHWATCH_CUDA_GRID_OVERHEAD_NS=`value` (gpu::parse_grid_overhead).
inline std::chrono::nanoseconds parse_grid_overhead(std::string_view value) {
  return gpu::parse_grid_overhead(grid_overhead_variable, value);
}

/// The constant for a CUDA device of compute capability `major`.`minor` (gpu::grid_overhead_for).
inline std::chrono::nanoseconds grid_overhead_for(int major, int minor) {
  return gpu::grid_overhead_for(grid_overhead_variable, true, major, minor);
}

}  // namespace launchwatch::detail::cuda
