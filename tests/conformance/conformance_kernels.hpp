// The kernels the conformance suite launches.
//
// In a header, and single-source, so the CUDA and HIP test translation units (compiled by nvcc or
// HIP's clang) instantiate the same kernels for the GPU. In a named namespace so their names read
// the same under g++ and nvcc. Each also carries its compute shader for Vulkan
// (shaders/<name>.comp, compiled at build time into conformance_shaders.hpp), whose results the
// suite checks as it checks every backend's.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>

#include <launchwatch/runtime/client.hpp>

#include "conformance_shaders.hpp"

namespace launchwatch::conformance {

/// docs/design.md §3's example, exactly as written there.
struct axpy {
  float a;
  launchwatch::device_span<const float> x;
  launchwatch::device_span<float> y;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit u) const {
    auto i = u.absolute_pos();
    if (i < y.size()) y[i] += a * x[i];
  }
  static constexpr vulkan_shader vulkan = shaders::axpy;
};

/// Writes `value` to every element it has a unit for.
struct fill {
  device_span<int> out;
  int value;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < out.size()) out[i] = value;
  }
  static constexpr vulkan_shader vulkan = shaders::fill;
};

/// Adds one to every element it has a unit for.
struct add_one {
  device_span<int> values;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < values.size()) values[i] += 1;
  }
  static constexpr vulkan_shader vulkan = shaders::add_one;
};

/// Doubles every element it has a unit for.
struct twice {
  device_span<int> values;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < values.size()) values[i] *= 2;
  }
  static constexpr vulkan_shader vulkan = shaders::twice;
};

/// Writes, at each unit's absolute position, one plus its cube's and its own linear indices packed
/// (cube index * 4096 + unit index + 1), so a test can check every unit ran once where it should.
struct where_am_i {
  device_span<std::uint64_t> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < out.size()) out[i] = u.cube_index() * 4096 + u.unit_index() + 1;
  }
  static constexpr vulkan_shader vulkan = shaders::where_am_i;
};

/// Does nothing: the cheapest launch there is.
struct nothing {
  LAUNCHWATCH_HOST_DEVICE void operator()(unit) const {}
  static constexpr vulkan_shader vulkan = shaders::nothing;
};

/// The device's nanosecond clock: the steady clock on the host, %globaltimer on an NVIDIA GPU,
/// the 100 MHz wall clock on an AMD GPU (launchwatch/detail/hip_entry.hpp).
LAUNCHWATCH_HOST_DEVICE inline std::uint64_t clock_ns() {
#if defined(__CUDA_ARCH__)
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#elif defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_s_memrealtime() * detail::hip_wall_clock_ns_per_tick;
#else
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
#endif
}

/// Keeps its units busy for `nanoseconds`, then marks `done[0]`: a kernel that takes a known time.
struct spin {
  std::uint64_t nanoseconds;
  device_span<int> done;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const std::uint64_t start = clock_ns();
    while (clock_ns() - start < nanoseconds) {
    }
    if (u.absolute_pos() == 0 && !done.empty()) done[0] = 1;
  }
  static constexpr vulkan_shader vulkan = shaders::spin;
};

/// Fails at unit `at`: throws on the host, traps on a GPU (an AMD GPU's trap ends the process: the
/// HIP runtime aborts on a device fault). Every other unit writes 1.
struct fail_at {
  device_span<int> out;
  std::uint64_t at;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i == at) {
#if defined(__CUDA_ARCH__)
      __trap();
#elif defined(__HIP_DEVICE_COMPILE__)
      __builtin_trap();
#else
      throw std::runtime_error{"unit refused to run"};
#endif
    }
    if (i < out.size()) out[i] = 1;
  }
  static constexpr vulkan_shader vulkan = shaders::fail_at;
};

}  // namespace launchwatch::conformance
