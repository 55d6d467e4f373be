// The part of a kernel's time on the device that no stamp inside the kernel sees: the front end
// launching the grid before its first cube starts, and retiring it after its last cube ends.
//
// CUPTI's records (and Nsight's) span the grid from launch to retire; launchwatch's in-kernel
// window spans first cube entry to last cube exit, so on its own it reads shorter than CUPTI by a
// per-device constant, whatever the grid's size or length (research/device-timing.md §1.9:
// 0.45-0.54 µs on an H200 across 1-1056 cubes and 0-50 µs kernels). Durations add that constant
// back, so that a launchwatch duration and a CUPTI duration of the same kernel agree.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string_view>

namespace launchwatch::detail::gpu {

/// One measured figure: the constant on one kind of NVIDIA device, and where it comes from. The
/// constant is the hardware's, so it holds for kernels launched through CUDA or through HIP's
/// NVIDIA platform alike.
struct grid_overhead_measurement {
  int major = 0;  // compute capability
  int minor = 0;
  std::chrono::nanoseconds overhead{0};
  std::string_view device;
  std::string_view provenance;
};

/// Every figure measured so far, one per compute capability (docs/benchmarks.md says how each was
/// derived; `launchwatch_peers_bench` derives it again on the device it runs on).
std::span<const grid_overhead_measurement> measured_grid_overheads() noexcept;

/// `variable`=`value` (LAUNCHWATCH_CUDA_GRID_OVERHEAD_NS, LAUNCHWATCH_HIP_GRID_OVERHEAD_NS): a
/// whole number of nanoseconds, 0 to 100000. Throws configuration_error naming the variable, the
/// value and what it accepts.
std::chrono::nanoseconds parse_grid_overhead(std::string_view variable, std::string_view value);

/// The constant for a device: the environment's when `variable` is set, else, for an NVIDIA device
/// (`nvidia`) of compute capability `major`.`minor`, the measured figure, else zero (durations on a
/// device nobody measured read short by its unknown constant; said once, with what to do).
/// Throws configuration_error for a bad value in the variable.
std::chrono::nanoseconds grid_overhead_for(std::string_view variable, bool nvidia, int major,
                                           int minor);

}  // namespace launchwatch::detail::gpu
