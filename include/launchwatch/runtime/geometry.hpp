// The shape of a launch: a grid of cubes, each a block of units, and the unit a kernel runs as.
//
// The vocabulary is CubeCL's (a cube is CUDA's block, a unit its thread) so that one kernel reads the
// same on every backend. Everything a kernel touches here is constexpr and host-and-device, so the
// CPU backend's loop and a CUDA kernel entry build the same `unit` from their own indices.
//
// This header is included by translation units nvcc compiles; it includes no CUDA header.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string>

#include <launchwatch/errors.hpp>

/// Marks a function callable on the host and, in a translation unit nvcc or HIP's clang compiles,
/// on a device: a kernel's call operator carries it so one definition serves every backend.
#if defined(__CUDACC__) || defined(__HIP__)
#define LAUNCHWATCH_HOST_DEVICE __host__ __device__
#else
#define LAUNCHWATCH_HOST_DEVICE
#endif

namespace launchwatch {

namespace detail {

/// Converts a caller's extent (any integer type) to the 32-bit extent a grid holds, refusing what
/// does not fit rather than wrapping a negative count into four billion cubes.
template <std::integral Extent>
constexpr std::uint32_t checked_extent(Extent value, const char* what) {
  if constexpr (std::is_signed_v<Extent>) {
    if (value < 0) {
      throw invalid_launch{std::string{what} + " was given a negative extent (" +
                           std::to_string(value) + "); extents count cubes or units, from 0 up"};
    }
  }
  if (static_cast<std::uintmax_t>(value) > std::numeric_limits<std::uint32_t>::max()) {
    throw invalid_launch{std::string{what} + " was given the extent " + std::to_string(value) +
                         ", which does not fit 32 bits; split the work over several axes"};
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace detail

/// How many cubes a launch runs, along one to three axes (unused axes are 1).
///
/// A grid with any extent 0 is empty: launching it does nothing and reports nothing.
/// Constructible from any integer type so `cube_count{blocks}` compiles whatever type `blocks` has;
/// a negative or over-32-bit extent throws `invalid_launch` on the host. In device code, build it
/// from `std::uint32_t` extents (the host-and-device constructor). Cost: none beyond the stores.
struct cube_count {
  std::uint32_t x = 1;
  std::uint32_t y = 1;
  std::uint32_t z = 1;

  constexpr cube_count() noexcept = default;
  LAUNCHWATCH_HOST_DEVICE constexpr cube_count(std::uint32_t x_extent, std::uint32_t y_extent = 1,
                                               std::uint32_t z_extent = 1) noexcept
      : x{x_extent}, y{y_extent}, z{z_extent} {}
  template <std::integral X, std::integral Y = std::uint32_t, std::integral Z = std::uint32_t>
  constexpr cube_count(X x_extent, Y y_extent = 1, Z z_extent = 1)
      : x{detail::checked_extent(x_extent, "cube_count")},
        y{detail::checked_extent(y_extent, "cube_count")},
        z{detail::checked_extent(z_extent, "cube_count")} {}

  /// Cubes in the grid, over all three axes.
  LAUNCHWATCH_HOST_DEVICE constexpr std::uint64_t total() const noexcept {
    return std::uint64_t{x} * y * z;
  }
  /// Whether the grid holds no cube at all.
  LAUNCHWATCH_HOST_DEVICE constexpr bool empty() const noexcept {
    return x == 0 || y == 0 || z == 0;
  }
  friend constexpr bool operator==(const cube_count&, const cube_count&) = default;
};

/// How many units each cube runs, along one to three axes (unused axes are 1).
///
/// The same conversions as `cube_count`. A device bounds both the units per cube and each axis;
/// a launch over those limits is rejected with `invalid_launch` before it is reported.
struct cube_dim {
  std::uint32_t x = 1;
  std::uint32_t y = 1;
  std::uint32_t z = 1;

  constexpr cube_dim() noexcept = default;
  LAUNCHWATCH_HOST_DEVICE constexpr cube_dim(std::uint32_t x_extent, std::uint32_t y_extent = 1,
                                             std::uint32_t z_extent = 1) noexcept
      : x{x_extent}, y{y_extent}, z{z_extent} {}
  template <std::integral X, std::integral Y = std::uint32_t, std::integral Z = std::uint32_t>
  constexpr cube_dim(X x_extent, Y y_extent = 1, Z z_extent = 1)
      : x{detail::checked_extent(x_extent, "cube_dim")},
        y{detail::checked_extent(y_extent, "cube_dim")},
        z{detail::checked_extent(z_extent, "cube_dim")} {}

  /// Units in one cube, over all three axes.
  LAUNCHWATCH_HOST_DEVICE constexpr std::uint64_t total() const noexcept {
    return std::uint64_t{x} * y * z;
  }
  /// Whether a cube holds no unit at all.
  LAUNCHWATCH_HOST_DEVICE constexpr bool empty() const noexcept {
    return x == 0 || y == 0 || z == 0;
  }
  friend constexpr bool operator==(const cube_dim&, const cube_dim&) = default;
};

/// A position along three axes: of a cube in the grid, or of a unit in its cube.
struct position {
  std::uint32_t x = 0;
  std::uint32_t y = 0;
  std::uint32_t z = 0;
  friend constexpr bool operator==(const position&, const position&) = default;
};

/// One unit of a launch, as its kernel sees it: where its cube sits in the grid, where it sits in
/// its cube, and the launch's shape.
///
/// A plain aggregate passed by value: the CPU backend builds one per call of the kernel, and a CUDA
/// kernel entry builds one from blockIdx, threadIdx, blockDim and gridDim.
/// Cost: every member function is a few integer operations, inlined.
struct unit {
  /// This unit's cube, in the grid.
  position cube_pos;
  /// This unit, in its cube.
  position unit_pos;
  /// Units per cube (the launch's `cube_dim`).
  ::launchwatch::cube_dim cube_dim;
  /// Cubes in the grid (the launch's `cube_count`).
  ::launchwatch::cube_count cube_count;

  /// This unit's position over the whole grid along x: `cube_pos.x * cube_dim.x + unit_pos.x`.
  LAUNCHWATCH_HOST_DEVICE constexpr std::uint64_t absolute_pos_x() const noexcept {
    return std::uint64_t{cube_pos.x} * cube_dim.x + unit_pos.x;
  }
  /// The same along y.
  LAUNCHWATCH_HOST_DEVICE constexpr std::uint64_t absolute_pos_y() const noexcept {
    return std::uint64_t{cube_pos.y} * cube_dim.y + unit_pos.y;
  }
  /// The same along z.
  LAUNCHWATCH_HOST_DEVICE constexpr std::uint64_t absolute_pos_z() const noexcept {
    return std::uint64_t{cube_pos.z} * cube_dim.z + unit_pos.z;
  }

  /// This unit's linear index over the whole grid, x fastest: every unit of a launch gets a distinct
  /// value in `[0, cube_count.total() * cube_dim.total())`. On a one-axis launch it is
  /// `cube_pos.x * cube_dim.x + unit_pos.x`, the usual `i` of an element-wise kernel.
  LAUNCHWATCH_HOST_DEVICE constexpr std::uint64_t absolute_pos() const noexcept {
    const std::uint64_t width = std::uint64_t{cube_count.x} * cube_dim.x;
    const std::uint64_t height = std::uint64_t{cube_count.y} * cube_dim.y;
    return (absolute_pos_z() * height + absolute_pos_y()) * width + absolute_pos_x();
  }

  /// This unit's linear index within its cube, x fastest, in `[0, cube_dim.total())`.
  LAUNCHWATCH_HOST_DEVICE constexpr std::uint32_t unit_index() const noexcept {
    return (unit_pos.z * cube_dim.y + unit_pos.y) * cube_dim.x + unit_pos.x;
  }

  /// This unit's cube's linear index in the grid, x fastest, in `[0, cube_count.total())`.
  LAUNCHWATCH_HOST_DEVICE constexpr std::uint64_t cube_index() const noexcept {
    return (std::uint64_t{cube_pos.z} * cube_count.y + cube_pos.y) * cube_count.x + cube_pos.x;
  }
};

}  // namespace launchwatch
